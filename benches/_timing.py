"""Timing helpers shared by the benchmark scripts: medians of repeated runs, and a table.

Machines here are shared and noisy, so every figure is a median over several repeats and
comparisons are ratios measured in the same process, one right after the other.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(fn: Callable[[], object], *, repeat: int = 15, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn``: calls are batched so each sample takes ``min_time``."""
    fn()  # warm up
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_time or number >= 1 << 20:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


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
