"""Digests: BLAKE3 of canonical JSON, checked against the independent `blake3` package."""

from __future__ import annotations

import os
from typing import Any

import blake3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runcontext import canonical_json, digest, digest_bytes

from strategies import json_values


def expected(data: bytes) -> str:
    return "blake3:" + blake3.blake3(data).hexdigest()


@given(st.binary(max_size=20_000))
def test_digest_bytes_matches_blake3(data: bytes) -> None:
    assert digest_bytes(data) == expected(data)


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1025, 2048, 2049, 8192, 1 << 20, 5_000_003])
def test_digest_bytes_at_chunk_boundaries_and_large_sizes(size: int) -> None:
    # Crosses BLAKE3's 1 KiB chunk boundaries and the size above which the GIL is released.
    data = os.urandom(size)
    assert digest_bytes(data) == expected(data)


def test_digest_bytes_takes_any_contiguous_buffer() -> None:
    data = os.urandom(4096)
    assert digest_bytes(bytearray(data)) == expected(data)
    assert digest_bytes(memoryview(data)) == expected(data)
    with pytest.raises(TypeError, match=r"got str; encode text first, e.g. data.encode\(\)"):
        digest_bytes("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="contiguous bytes-like object, got memoryview"):
        digest_bytes(memoryview(data)[::2])


@given(json_values)
def test_digest_is_blake3_of_canonical_json(value: Any) -> None:
    assert digest(value) == expected(canonical_json(value))


def test_digest_format() -> None:
    d = digest({"a": 1})
    assert d.startswith("blake3:") and len(d) == 7 + 64
    assert d[7:] == d[7:].lower()
    assert digest({"a": 1}) == digest({"a": 1.0}) != digest({"a": "1"})


def test_digest_bytes_takes_any_format_and_hashes_writable_buffers_in_place() -> None:
    import array
    import ctypes

    ints = array.array("i", range(100))
    assert digest_bytes(ints) == expected(ints.tobytes())
    assert digest_bytes(memoryview(b"ab").cast("b")) == expected(b"ab")
    buffer = (ctypes.c_uint8 * 4)(1, 2, 3, 4)
    assert digest_bytes(buffer) == expected(bytes([1, 2, 3, 4]))
    assert digest_bytes(bytearray()) == expected(b"")
    big = bytearray(os.urandom(1 << 16))  # writable and above the GIL-release threshold
    assert digest_bytes(big) == expected(bytes(big))
