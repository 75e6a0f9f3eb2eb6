"""Keyed digests (docs/FORMAT.md § 2.1): ``blake3-keyed:`` + 64 hex, BLAKE3's
keyed mode over exactly the bytes the plain digest hashes, checked against the ``blake3``
package over the reference's canonical JSON; every input type ``digest_bytes`` takes; the key's
refusals; and ``RunContext.keyed_digests``."""

from __future__ import annotations

import array
import math
from typing import Any

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

import runcontext.keyed
from runcontext import RunContext, digest, digest_bytes
from runcontext.errors import InvalidNumberError, InvalidStringError, UnsupportedTypeError
from runcontext.keyed import KEY_BYTES, KEYED_DIGEST_PREFIX, keyed_digest, keyed_digest_bytes

from reference.jcs import canonical_json as reference_canonical_json
from reference.runcontext import RunContext as ReferenceRunContext

KEY = bytes(range(32))
# Around the sizes where the binding changes path: 2 KiB (the GIL is released above it) and
# 128 KiB (parallel=True splits the input from there).
SIZES = [0, 1, 2047, 2048, 2049, 128 * 1024 - 1, 128 * 1024, 300_001]


def oracle_bytes(key: bytes, data: bytes) -> str:
    return "blake3-keyed:" + blake3(data, key=key).hexdigest()


def oracle(key: bytes, value: object) -> str:
    return oracle_bytes(key, reference_canonical_json(value))


def test_the_module_names_the_form() -> None:
    assert KEYED_DIGEST_PREFIX == "blake3-keyed:"
    assert KEY_BYTES == 32
    assert runcontext.keyed.__all__ == [
        "KEYED_DIGEST_PREFIX",
        "KEY_BYTES",
        "keyed_digest",
        "keyed_digest_bytes",
    ]


def test_the_blake3_specification_s_keyed_vector() -> None:
    # test_vectors.json of the BLAKE3 specification: this key, the empty input.
    assert keyed_digest_bytes(b"whats the Elvish word for friend", b"") == (
        "blake3-keyed:92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"
    )


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("parallel", [False, True])
def test_bytes_of_every_size_agree_with_the_blake3_package(size: int, parallel: bool) -> None:
    data = bytes((i * 31 + 7) % 256 for i in range(size))
    assert keyed_digest_bytes(KEY, data, parallel=parallel) == oracle_bytes(KEY, data)


@pytest.mark.parametrize("size", [0, 5, 4096])
def test_every_buffer_digest_bytes_takes_gives_the_digest_of_its_bytes(size: int) -> None:
    data = bytes(i % 256 for i in range(size))
    expected = oracle_bytes(KEY, data)
    ints = array.array("I", data[: size - size % 4])
    for buffer in (bytearray(data), memoryview(data), memoryview(bytearray(data))):
        assert keyed_digest_bytes(KEY, buffer) == expected
    assert keyed_digest_bytes(KEY, ints) == oracle_bytes(KEY, ints.tobytes())


def test_data_that_is_not_contiguous_bytes_is_refused() -> None:
    with pytest.raises(TypeError) as raised:
        keyed_digest_bytes(KEY, "text")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "keyed_digest_bytes() takes bytes or a contiguous bytes-like object as data, got str; "
        "encode text first, e.g. data.encode()"
    )
    with pytest.raises(TypeError) as raised:
        keyed_digest_bytes(KEY, memoryview(b"abcdef")[::2])
    assert str(raised.value) == (
        "keyed_digest_bytes() takes bytes or a contiguous bytes-like object as data, got "
        "memoryview; pass bytes(data)"
    )


VALUES: list[Any] = [
    None,
    {"b": 1.0, "a": [1e21, 0.1, "\u00e9\u4e2d\U0001f600"]},
    'line\n"quoted"\u0001',
    "x" * 5000,  # a str past 2 KiB
    {"text": "\u00e9" * 40_000, "n": [1, 2, 3]},
    [],
]


@pytest.mark.parametrize("value", VALUES)
def test_keyed_digest_is_of_the_same_canonical_bytes_as_digest(value: object) -> None:
    keyed = keyed_digest(KEY, value)
    assert keyed == oracle(KEY, value)
    assert digest(value) == "blake3:" + blake3(reference_canonical_json(value)).hexdigest()
    # Never the plain hash under the keyed prefix.
    assert keyed.removeprefix("blake3-keyed:") != digest(value).removeprefix("blake3:")


@pytest.mark.parametrize(
    ("value", "error", "path"),
    [
        ({"a": [1, math.nan]}, InvalidNumberError, "$.a[1]"),
        ({"x": [2**60]}, InvalidNumberError, "$.x[0]"),
        ("x\ud800" * 2000, InvalidStringError, "$"),
        ({1: 2}, UnsupportedTypeError, "$"),
        (b"bytes", UnsupportedTypeError, "$"),
    ],
)
def test_a_value_without_a_canonical_form_is_refused_as_digest_refuses_it(
    value: object, error: type[Exception], path: str
) -> None:
    with pytest.raises(error) as raised:
        keyed_digest(KEY, value)
    with pytest.raises(error) as plain:
        digest(value)
    assert getattr(raised.value, "path", None) == path
    assert str(raised.value) == str(plain.value)


@given(key=st.binary(min_size=32, max_size=32), data=st.binary(max_size=5000))
def test_any_key_and_bytes_agree_with_the_blake3_package(key: bytes, data: bytes) -> None:
    assert keyed_digest_bytes(key, data) == oracle_bytes(key, data)
    assert digest_bytes(data) == "blake3:" + blake3(data).hexdigest()


KEY_REFUSALS: list[tuple[Any, type[Exception], str]] = [
    (
        "0" * 64,
        TypeError,
        "key: expected 32 bytes (a bytes object), got str; a key is random bytes, not a "
        "passphrase or hex text; make one with secrets.token_bytes(32) and keep it secret",
    ),
    (
        bytearray(32),
        TypeError,
        "key: expected 32 bytes (a bytes object), got bytearray; convert a bytes-like key "
        "with bytes(key); make one with secrets.token_bytes(32) and keep it secret",
    ),
    (
        None,
        TypeError,
        "key: expected 32 bytes (a bytes object), got NoneType; convert a bytes-like key "
        "with bytes(key); make one with secrets.token_bytes(32) and keep it secret",
    ),
    (
        b"",
        ValueError,
        "key: expected exactly 32 bytes (BLAKE3's keyed mode), got 0 bytes; make one with "
        "secrets.token_bytes(32) and keep it secret",
    ),
    (
        b"k" * 33,
        ValueError,
        "key: expected exactly 32 bytes (BLAKE3's keyed mode), got 33 bytes; make one with "
        "secrets.token_bytes(32) and keep it secret",
    ),
]


@pytest.mark.parametrize(("key", "error", "message"), KEY_REFUSALS)
def test_a_key_that_is_not_32_bytes_is_refused_everywhere(
    key: Any, error: type[Exception], message: str
) -> None:
    for call in (
        lambda: keyed_digest(key, {"a": 1}),
        lambda: keyed_digest_bytes(key, b"abc"),
        lambda: RunContext(facts=[("a", "1")]).keyed_digests(key),
    ):
        with pytest.raises(error) as raised:
            call()
        assert str(raised.value) == message


def test_a_bytes_subclass_is_a_key() -> None:
    class Key(bytes):
        pass

    assert keyed_digest_bytes(Key(KEY), b"abc") == oracle_bytes(KEY, b"abc")


CONTEXT_ARGS: list[dict[str, Any]] = [
    {},
    {"facts": [("date", "2026-11-30"), ("gone", None)]},
    {
        "head_sections": [("identity", "You are a careful agent.  \n"), ("empty", " \n")],
        "facts": [("branch", "main")],
        "tail_sections": [("AGENTS.md", "Use tabs.\u00e9" * 900)],  # past 2 KiB: detached
    },
]


@pytest.mark.parametrize("args", CONTEXT_ARGS)
def test_keyed_digests_of_a_context_are_of_its_documents(args: dict[str, Any]) -> None:
    rc = RunContext(**args)
    reference = ReferenceRunContext(**args)
    document = {
        "v": 1,
        "head": [list(pair) for pair in reference.head_sections],
        "facts": [list(pair) for pair in reference.facts],
        "tail": [list(pair) for pair in reference.tail_sections],
    }
    keyed, sections = rc.keyed_digests(KEY)
    assert keyed == oracle(KEY, document)
    assert rc.digest == reference.digest  # the same document, unkeyed
    assert sections == tuple(
        oracle(KEY, {"name": name, "text": text}) for _, name, text, _ in reference.sections
    )
    assert len(sections) == len(rc.section_digests)
    assert rc.keyed_digests(bytes(32)) != (keyed, sections)
