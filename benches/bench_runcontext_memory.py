"""RunContext's memory per context and its cost per byte of section text.

Memory: 10,000 contexts built from distinct 8 KB AGENTS.md texts that the caller keeps
(the typical context of bench_runcontext.py: a 200 B identity, the 8 KB text, 4 facts,
1 tail section), each read as a request reads it (head_text, tail_text, digest, sections);
the bytes retained per context beyond the caller's own strings, by tracemalloc (Python's
allocator) and by RSS (which also counts the Rust heap).

Cost per byte: one context with one head section of 16 KB … 4 MB and a small tail, built,
its head_text, tail_text and digest read; nanoseconds per byte of section text, against
the `blake3` package hashing the same text once (`blake3(text.encode())`, the anchor).

Two ways to run it:
  python benches/bench_runcontext_memory.py          tables, printed
  pytest benches/bench_runcontext_memory.py --benchmark-only   pytest-benchmark groups
"""

from __future__ import annotations

import ctypes
import gc
import resource
import tracemalloc
from typing import Any

import pytest

from runcontext import RunContext

from _timing import benchmark_call, fmt_time, interleaved_medians

try:
    import blake3 as _blake3
except ImportError:  # the anchor is in the `bench` extra
    _blake3 = None

CONTEXTS = 10_000
IDENTITY = ("You are a careful coding agent working in a monorepo. " * 4)[:200]
TODO = "1. read the failing test\n2. fix the parser\n3. run the suite"
FACTS = (
    ("date", "2026-12-01"),
    ("cwd", "/home/dev/work/monorepo/services/api"),
    ("platform", "linux (x86_64)"),
    ("git", "main @ 1a2b3c4"),
)
SIZES = [16 << 10, 256 << 10, 1 << 20, 4 << 20]


def agents_md(i: int) -> str:
    return "\n".join(
        f"- rule {i}.{j}: keep functions small and named for what they do." for j in range(140)
    )[:8192]


def build(text: str) -> RunContext:
    rc = RunContext(
        head_sections=[("identity", IDENTITY), ("agents", text)],
        facts=list(FACTS),
        tail_sections=[("todo", TODO)],
    )
    rc.head_text, rc.tail_text, rc.digest, rc.sections  # noqa: B018 - what a request reads
    return rc


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_in_use() -> int:
    """Bytes in use in glibc's malloc (the Rust heap, and Python objects too large for
    pymalloc), or -1 where mallinfo2 is missing."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return -1
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def retained_per_context(count: int = CONTEXTS) -> dict[str, float]:
    """Bytes retained per context beyond the caller's texts: by tracemalloc (every Python
    allocation), by glibc's malloc (the Rust heap; Python objects above 512 B are counted by
    both) and by RSS (measured without tracemalloc, whose bookkeeping takes memory)."""
    texts = [agents_md(i) for i in range(count)]
    gc.collect()
    tracemalloc.start()
    traced0, malloc0 = tracemalloc.get_traced_memory()[0], _malloc_in_use()
    contexts = [build(t) for t in texts]
    gc.collect()
    traced1, malloc1 = tracemalloc.get_traced_memory()[0], _malloc_in_use()
    tracemalloc.stop()
    del contexts
    gc.collect()
    rss0 = _rss()
    contexts = [build(t) for t in texts]
    gc.collect()
    rss1 = _rss()
    assert len(contexts) == count
    # The list that holds the contexts is the caller's, not theirs.
    list_bytes = 8 * count
    return {
        "tracemalloc": (traced1 - traced0 - list_bytes) / count,
        "malloc": (malloc1 - malloc0) / count,
        "RSS": (rss1 - rss0 - list_bytes) / count,
    }


def one_section(size: int) -> str:
    return ("- keep functions small and named for what they do.\n" * (size // 50 + 1))[:size]


def build_large(text: str) -> None:
    rc = RunContext(
        head_sections=[("agents", text)], facts=list(FACTS), tail_sections=[("todo", TODO)]
    )
    rc.head_text, rc.tail_text, rc.digest  # noqa: B018


def anchor(text: str) -> None:
    assert _blake3 is not None
    _blake3.blake3(text.encode()).hexdigest()


@pytest.mark.benchmark(group="RunContext, typical 8 KB context")
def test_typical_context(benchmark: Any) -> None:
    text = agents_md(0)
    benchmark(build, text)


@pytest.mark.parametrize("size", SIZES)
def test_per_byte(benchmark: Any, size: int) -> None:
    benchmark.group = f"RunContext, one section of {size >> 10} KB"
    text = one_section(size)
    benchmark_call(benchmark, lambda: build_large(text), implementation="runcontext", anchor=False)


@pytest.mark.skipif(_blake3 is None, reason="the anchor needs the blake3 package")
@pytest.mark.parametrize("size", SIZES)
def test_per_byte_anchor(benchmark: Any, size: int) -> None:
    benchmark.group = f"RunContext, one section of {size >> 10} KB"
    text = one_section(size)
    benchmark_call(
        benchmark, lambda: anchor(text), implementation="blake3(text.encode())", anchor=True
    )


def main() -> None:
    retained = retained_per_context()
    print(
        f"memory retained per context ({CONTEXTS:,} contexts, distinct 8 KB texts kept by the "
        "caller, head_text/tail_text/digest/sections read):"
    )
    print("  " + "   ".join(f"{name} {size:7.0f} B" for name, size in retained.items()))
    print("\nbuild + head_text + tail_text + digest, one head section (median; ns per byte)")
    for size in SIZES:
        text = one_section(size)
        fns = {"runcontext": lambda t=text: build_large(t)}
        if _blake3 is not None:
            fns["blake3(text.encode())"] = lambda t=text: anchor(t)
        medians = interleaved_medians(fns, repeat=15, min_time=0.02)
        rc = medians["runcontext"]
        line = f"  {size >> 10:>5} KB  runcontext {fmt_time(rc)} {rc / size * 1e9:5.2f} ns/B"
        if "blake3(text.encode())" in medians:
            b3 = medians["blake3(text.encode())"]
            line += f"   anchor {fmt_time(b3)} {b3 / size * 1e9:5.2f} ns/B   {rc / b3:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
