"""`digest_bytes(parallel=True)`, `digest` of a large str, and buffers hashed in place."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import blake3
import pytest

from runcontext import canonical_json, digest, digest_bytes

THRESHOLD = 128 * 1024  # PARALLEL_THRESHOLD in rust/core/src/digest.rs, FORMAT.md § 2


def expected(data: bytes) -> str:
    return "blake3:" + blake3.blake3(data).hexdigest()


@pytest.mark.parametrize(
    "size", [0, 1, THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, 3 * THRESHOLD + 1023, 9_000_001]
)
def test_parallel_digest_is_the_same_digest(size: int) -> None:
    data = os.urandom(size)
    assert digest_bytes(data, parallel=True) == digest_bytes(data) == expected(data)
    assert digest_bytes(bytearray(data), parallel=True) == expected(data)
    assert digest_bytes(memoryview(data), parallel=True) == expected(data)


def test_parallel_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        digest_bytes(b"x", True)  # type: ignore[misc]


@pytest.mark.parametrize("size", [0, 2048, 2049, 16 * 1024 - 1, 16 * 1024 + 1, 1 << 20])
def test_digest_of_a_str_is_the_digest_of_its_canonical_json(size: int) -> None:
    # Escapes, multi-byte characters and astral ones fall on the 16 KiB block cuts.
    unit = 'a"b\\c\x01\n\u00e9\U0001f600\u4e2d'
    text = (unit * (size // len(unit) + 1))[:size]
    assert digest(text) == expected(canonical_json(text))

    class Text(str):
        def __str__(self) -> str:
            return "not the text"

    assert digest(Text(text)) == digest(text)


def test_digest_of_a_lone_surrogate_is_refused_as_before() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        digest("x" * 5000 + "\ud800")


def test_a_writable_buffer_is_hashed_without_a_copy() -> None:
    # Peak RSS while a 64 MB bytearray is hashed stays well under a second 64 MB: no copy.
    script = textwrap.dedent(
        """
        import resource
        from runcontext import digest_bytes
        data = bytearray(64 << 20)
        for i in range(0, len(data), 4096):
            data[i] = i & 0xFF
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        digest_bytes(data)
        digest_bytes(data, parallel=True)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(after - before)
        """
    )
    grown_kib = int(subprocess.check_output([sys.executable, "-c", script], text=True))
    assert grown_kib < 16 << 10, f"peak RSS grew by {grown_kib} KiB"
