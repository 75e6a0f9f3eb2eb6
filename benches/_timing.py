"""Timing helpers shared by the benchmark scripts: medians of repeated runs, and a table.

Machines here are shared and noisy, so every figure is a median over several repeats and
comparisons are ratios measured in the same process, one right after the other. The same
payloads and implementations are timed by pytest-benchmark (`benchmark_call`, at the end).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def batch_size(fn: Callable[[], object], *, min_time: float) -> int:
    """How many calls of ``fn`` take at least ``min_time`` seconds (after one warm-up call)."""
    fn()  # warm up
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_time or number >= 1 << 20:
            return number
        number *= 2


def median_seconds(fn: Callable[[], object], *, repeat: int = 15, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn``: calls are batched so each sample takes ``min_time``."""
    return interleaved_medians({"fn": fn}, repeat=repeat, min_time=min_time)["fn"]


def interleaved_medians(
    fns: dict[str, Callable[[], object]], *, repeat: int = 21, min_time: float = 0.01
) -> dict[str, float]:
    """Median seconds per call of each function, their samples taken in turn (so a noisy
    neighbour slows them alike, and their ratio holds)."""
    numbers = {name: batch_size(fn, min_time=min_time) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            number = numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(s) for name, s in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds * 1e6:9.2f} µs"


def print_table(title: str, rows: Sequence[tuple[str, float]], *, baseline: str) -> None:
    """Print median times and each row's ratio to the ``baseline`` row."""
    base = dict(rows)[baseline]
    print(f"\n{title}")
    for name, seconds in rows:
        print(f"  {name:<44} {fmt_time(seconds)}   {seconds / base:7.2f}× {baseline}")


# -- pytest-benchmark -------------------------------------------------------------------
#
# Each bench_*.py script also holds `test_*` functions that take pytest-benchmark's
# `benchmark` fixture: `pytest benches --benchmark-only` times them, one group per payload
# with runcontext and each anchor side by side, and `--benchmark-disable` (CI's
# `make bench-check`) runs every body once without timing it. `benches/readme_table.py`
# turns a `--benchmark-json` file into the README's Performance rows; it finds the
# runcontext row and the anchors of a group by what `benchmark_call` records in `extra_info`.


def benchmark_call(
    benchmark: Any, fn: Callable[[], object], *, implementation: str, anchor: bool
) -> None:
    """Time ``fn`` with pytest-benchmark's ``benchmark`` fixture, labelled for readme_table.py.

    ``implementation`` names what is timed (``runcontext``, ``orjson 3.13``, ...); ``anchor``
    says it is what runcontext is compared against rather than runcontext itself.
    """
    benchmark.extra_info["implementation"] = implementation
    benchmark.extra_info["role"] = "anchor" if anchor else "runcontext"
    benchmark(fn)
