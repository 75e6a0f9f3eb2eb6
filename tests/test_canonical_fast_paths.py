"""The fast paths of canonical_json write what the general ones do.

Exact built-in types are dispatched by type pointer, ints of one 30-bit digit are read from
the object, strings are escaped block by block into the returned ``bytes`` (on the stack
first while the output is small). Each is compared here with the pure-Python reference at
its edges.
"""

from __future__ import annotations

import json
import random
import sys
import threading
from typing import Any

import blake3
import pytest

from runcontext import canonical_json, digest
from runcontext.errors import InvalidNumberError, InvalidStringError

from reference import jcs as reference

SAFE = 2**53 - 1


class Int(int):
    pass


class Text(str):
    pass


class Mapping(dict[str, Any]):
    pass


def ints_at_every_edge() -> list[int]:
    values = {0, 1, -1, SAFE, -SAFE, 2**30 - 1, 2**30, -(2**30), 2**31, 2**32, 2**63 - 2**11}
    for power in range(17):
        for near in (-1, 0, 1):
            values |= {10**power + near, -(10**power + near)}
    return sorted(v for v in values if abs(v) <= SAFE)


@pytest.mark.parametrize("value", ints_at_every_edge())
def test_ints_at_digit_and_length_edges(value: int) -> None:
    expected = str(value).encode()
    assert canonical_json(value) == expected
    assert canonical_json([value, value]) == b"[" + expected + b"," + expected + b"]"
    assert canonical_json({"k": value}) == b'{"k":' + expected + b"}"
    assert canonical_json(Int(value)) == expected
    assert canonical_json([Int(value)]) == b"[" + expected + b"]"


@pytest.mark.parametrize("value", [SAFE + 1, -SAFE - 1, 2**63, -(2**63), 2**64, 10**40])
def test_ints_beyond_the_safe_range_are_refused_the_same_way(value: int) -> None:
    for wrapped, path in ((value, "$"), ([0, value], "$[1]"), ({"n": Int(value)}, "$.n")):
        with pytest.raises(InvalidNumberError) as info:
            canonical_json(wrapped)
        assert info.value.path == path
        assert str(info.value) == (
            f"{path}: integer {value} is outside ±(2**53 − 1) and would not survive a round "
            "trip through an IEEE 754 double; send it as a string"
        )


def test_bools_are_not_ints_and_none_is_null() -> None:
    assert canonical_json([True, False, None, 1, 0]) == b"[true,false,null,1,0]"


@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 2047, 2048, 5000])
@pytest.mark.parametrize("special", ['"', "\\", "\n", "\x00", "\x1f", "é", "😀", "\u2028"])
def test_strings_at_block_and_buffer_edges(length: int, special: str) -> None:
    for at in {0, length // 2, max(length - 1, 0)}:
        text = "a" * length
        text = text[:at] + special + text[at + 1 :]
        for value in (text, [text, text], {text: text}, Text(text), Mapping(k=text)):
            assert canonical_json(value) == reference.canonical_json(value), (length, at)


def test_outputs_across_the_stack_buffer_size() -> None:
    # Outputs of 2,040 to 2,060 bytes: written on the stack, or moved into a bytes midway.
    for n in range(2030, 2070):
        value = ["x" * (n - 6)]
        out = canonical_json(value)
        assert out == reference.canonical_json(value)
        assert len(out) == n - 2


def test_non_ascii_keys_sort_by_utf16_code_units() -> None:
    keys = ["\U0001f600", "\ue000", "\uffff", "a", "é", "\U00010000", "ab", "\u00ff", "z" * 20]
    value = {k: i for i, k in enumerate(keys)}
    assert canonical_json(value) == reference.canonical_json(value)
    assert canonical_json(Mapping(value)) == reference.canonical_json(value)


@pytest.mark.parametrize("size", [64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 1 << 20])
def test_large_strings(size: int) -> None:
    text = ('plain text, "quoted"\n\ttabbed \x01 é 😀 ' * (size // 30 + 1))[:size]
    for value in (text, Text(text)):
        out = canonical_json(value)
        assert out == reference.canonical_json(value)
        assert digest(value) == "blake3:" + blake3.blake3(out).hexdigest()


def test_large_strings_from_several_threads() -> None:
    texts = [('é"\\\n' * 40_000) + str(i) for i in range(4)]
    expected = [reference.canonical_json(t) for t in texts]
    results: dict[int, list[bytes]] = {}

    def work(i: int) -> None:
        results[i] = [canonical_json(texts[i]) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert results[i] == [expected[i]] * 5


@pytest.mark.parametrize("size", [10, 100 * 1024])
def test_lone_surrogates_are_refused_with_the_same_error_and_path(size: int) -> None:
    text = "a" * size + "\ud800"
    for value, path in ((text, "$"), ([text], "$[0]"), ({"k": text}, "$.k"), ({text: 1}, "$")):
        with pytest.raises(InvalidStringError) as info:
            canonical_json(value)
        assert info.value.path == path
        assert "lone surrogate" in str(info.value)


def keys_that_stress_the_prefix_sort() -> list[str]:
    """Keys whose order the sixteen-byte prefix sort must get right: equal prefixes that
    differ later or only in length, empty and NUL-padded keys, BMP characters above U+E000
    against characters above U+FFFF (a surrogate pair in UTF-16) at every position around
    the prefix's end."""
    keys = {"", "\x00", "\x00\x00", "a", "a\x00", "a\x00b", "ab"}
    base = "p" * 20
    for cut in range(0, 21):
        keys.add(base[:cut])
        for tail in ["\ue000", "\uffff", "\U0001f600", "\U00010000", "\ud7ff", "é", "\x00", "~"]:
            keys.add(base[:cut] + tail)
            keys.add(base[:cut] + tail + "x")
    keys.update(f"key_{i:05d}" for i in range(200))
    keys.update(f"a_long_shared_prefix_of_more_than_sixteen_bytes_{i}" for i in range(50))
    return sorted(keys)


@pytest.mark.parametrize("astral", [False, True])
def test_large_dicts_sort_by_utf16_code_units(astral: bool) -> None:
    # Dicts of at least 32 members sort on a sixteen-byte key prefix, with or without keys
    # above U+FFFF in it; both must give the reference order.
    keys = [k for k in keys_that_stress_the_prefix_sort() if astral or not has_astral(k[:16])]
    assert len(keys) >= 32
    for seed in range(3):
        shuffled = list(keys)
        random.Random(seed).shuffle(shuffled)
        value = {k: i for i, k in enumerate(shuffled)}
        assert canonical_json(value) == reference.canonical_json(value)
        assert canonical_json(Mapping(value)) == reference.canonical_json(value)


def has_astral(text: str) -> bool:
    return any(ord(c) > 0xFFFF for c in text)


@pytest.mark.parametrize("size", [31, 32, 33, 1000])
def test_dicts_around_the_prefix_sort_size(size: int) -> None:
    keys = [f"key_{i:05d}" for i in range(size)] + [""]
    value = {k: [i, str(i)] for i, k in reversed(list(enumerate(keys)))}
    assert canonical_json(value) == reference.canonical_json(value)


@pytest.mark.parametrize("length", [2046, 2047, 2048, 4095, 70_000, 1 << 20])
@pytest.mark.parametrize("escaped", [False, True])
def test_large_outputs_are_exact_bytes(length: int, escaped: bool) -> None:
    # A large output may keep a little unused room in its block (BytesOut::finish): the
    # object must still be exactly its bytes, NUL-terminated, hashing and comparing as a
    # copy does.
    text = ("a\n" if escaped else "ab") * (length // 2)
    out = canonical_json(text)
    expected = json.dumps(text, ensure_ascii=False).encode()
    assert out == expected and len(out) == len(expected)
    copy = bytes(bytearray(out))
    assert hash(out) == hash(copy) and out.endswith(b'"') and out + b"" == copy
    assert memoryview(out).nbytes == len(expected)
    assert sys.getsizeof(out) == sys.getsizeof(copy)
