"""Strings of 256 bytes and more are scanned 32 bytes at a time where the processor has AVX2
(a payload of long strings); the output must be the bytes of the 16-byte path everywhere.

The oracle is the standard library: ``json.dumps(s, ensure_ascii=False)`` escapes exactly
what RFC 8785 does (quote, backslash, U+0000-U+001F; short forms where JSON has them, else
``\\u00xx`` in lowercase hex) and writes every other character as itself.
"""

from __future__ import annotations

import json
import random

import pytest

from runcontext import canonical_json
from runcontext.errors import InvalidStringError


def expected(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode()


LENGTHS = [64, 255, 256, 257, 287, 288, 289, 319, 320, 321, 2047, 2048, 2049, 4128, 4129, 8230]


@pytest.mark.parametrize("length", LENGTHS)
def test_four_byte_characters_at_every_alignment(length: int) -> None:
    # An emoji (four UTF-8 bytes) starting at each byte offset of a 32-byte block, alone and
    # with a quote right after it, in ASCII text of about `length` bytes.
    for at in range(min(length - 4, 70)):
        text = "a" * at + "😀" + "b" * (length - at - 4)
        assert canonical_json(text) == expected(text)
        quoted = "a" * at + '😀"' + "b" * (length - at - 5)
        assert canonical_json(quoted) == expected(quoted)


@pytest.mark.parametrize("length", LENGTHS)
def test_escapes_at_every_position_of_the_first_blocks(length: int) -> None:
    for special in ('"', "\\", "\n", "\x00", "\x1f"):
        for at in range(min(length, 100)):
            text = "c" * at + special + "日" * ((length - at) // 3)
            assert canonical_json(text) == expected(text)


def test_cjk_and_emoji_text_across_the_output_buffers() -> None:
    # Lists of long non-ASCII strings: the output starts on the stack and moves into the
    # returned bytes, growing as it goes, at every offset from one string to the next.
    rng = random.Random(16)
    pieces = ["日本語の文章", "中文文本", "한국어", "😀🎉🚀", "emoji ✨", "naïve café"]
    pieces += [" ", '"', "\t"]
    for count in (1, 3, 10, 40):
        for size in (20, 61, 200):
            value = ["".join(rng.choices(pieces, k=size)) for _ in range(count)]
            body = ",".join(expected(text).decode() for text in value)
            assert canonical_json(value) == f"[{body}]".encode()
            assert canonical_json({"k": value}) == f'{{"k":[{body}]}}'.encode()


class Text(str):
    pass


def test_non_ascii_strings_before_and_after_their_utf8_form_is_kept() -> None:
    # A fresh non-ASCII str has no UTF-8 form yet (the first call makes it, the next reads
    # it in place); a str subclass and a string with a lone surrogate take the same paths.
    for length in (1, 5, 64, 100, 5000):
        for char in ("é", "日", "😀"):
            text = "".join([char] * length)
            for value in (text, Text(text), [text, Text(text)], {text: text}):
                first, second = canonical_json(value), canonical_json(value)
                assert (
                    first
                    == second
                    == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
                )
    with pytest.raises(InvalidStringError):
        canonical_json("".join(["é", "\ud800"]))


def test_random_long_strings_agree_with_json() -> None:
    rng = random.Random(2026)
    alphabet = ["x", "é", "€", "😀", '"', "\\", "\n", "\x01", " ", "\x7f"]
    for _ in range(300):
        length = rng.randrange(40, 9000)
        density = rng.choice([0.0, 0.001, 0.05, 0.5])
        text = "".join(
            rng.choice(alphabet) if rng.random() < density else "m" for _ in range(length)
        )
        assert canonical_json(text) == expected(text)
        assert canonical_json([text, text]) == b"[" + expected(text) + b"," + expected(text) + b"]"
