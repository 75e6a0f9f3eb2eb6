"""Threads for fleets: do 2 threads on large inputs give 2x the throughput of 1?

Each case does the same fixed amount of work on 1 thread and then split across 2 threads
(started together, timed from start to the last join); the ratio is 1-thread time over
2-thread time, so 2.00 is perfect scaling on a 2-core machine. The `blake3` PyPI package
(which releases the GIL above 2 KiB) is the anchor for the hashing cases. The last group is
one 64 MB input hashed on one thread and on Rayon's pool (`digest_bytes(parallel=True)`),
against the package's `max_threads=blake3.AUTO`.

Two ways to run it:
  python benches/bench_threads.py            interleaved medians and ratios, printed
  pytest benches/bench_threads.py --benchmark-only   pytest-benchmark groups
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from runcontext import RunContext, digest, digest_bytes

from _timing import fmt_time, interleaved_medians

try:
    import blake3 as _blake3
except ImportError:  # the anchor is in the `bench` extra
    _blake3 = None

MB = 1 << 20
TASKS = 8  # per case: 8 inputs, split 8/0 or 4/4 between threads

BYTES = [bytes([i]) * (4 * MB) for i in range(TASKS)]
TEXTS = [
    (f"- rule {i}: keep functions small and named for what they do.\n" * 70_000)[: 4 * MB]
    for i in range(TASKS)
]
SECTIONS = [(f"{i}: " + "You are a careful agent. Use tabs.\n" * 30_000)[:MB] for i in range(TASKS)]
BIG = bytes(range(256)) * (64 * MB // 256)


def _runcontext(text: str) -> None:
    rc = RunContext(
        head_sections=[("identity", "You are a careful agent."), ("agents", text)],
        facts=[("date", "2026-12-01")],
        tail_sections=[("todo", text)],
    )
    rc.head_text, rc.tail_text, rc.digest  # noqa: B018 - the properties a request reads


def _blake3_hex(data: bytes) -> None:
    assert _blake3 is not None
    _blake3.blake3(data).hexdigest()


# Started once: no thread start-up in the timing. Both the 1-thread and the 2-thread runs
# work on pool threads, never on the main thread: glibc gives the main thread its own arena,
# which hands freed memory back to the kernel sooner than a thread's arena does, so work that
# builds large strs (RunContext's head and tail texts) page-faulted on the main thread and
# made 2 threads look 3x faster than 1 on 2 cores.
_POOL = ThreadPoolExecutor(max_workers=2)


def in_threads(work: Callable[[Any], object], inputs: list[Any], threads: int) -> None:
    """Runs ``work`` on every input, the inputs split evenly across ``threads`` threads of a
    pool started beforehand (one of them, or both)."""

    def run(part: list[Any]) -> None:
        for item in part:
            work(item)

    for future in [_POOL.submit(run, inputs[i::threads]) for i in range(threads)]:
        future.result()


CASES: dict[str, tuple[Callable[[Any], object], list[Any]]] = {
    "digest_bytes, 8 x 4 MB bytes": (digest_bytes, BYTES),
    "digest, 8 x 4 MB str": (digest, TEXTS),
    "RunContext, 8 x (2 sections of 1 MB)": (_runcontext, SECTIONS),
}
if _blake3 is not None:
    CASES["anchor: blake3 package, 8 x 4 MB bytes"] = (_blake3_hex, BYTES)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_threads(benchmark: Any, case: str, threads: int) -> None:
    benchmark.group = f"threads: {case}"
    work, inputs = CASES[case]
    benchmark(in_threads, work, inputs, threads)


def _parallel_cases() -> dict[str, Callable[[], object]]:
    cases: dict[str, Callable[[], object]] = {
        "digest_bytes, 1 thread": lambda: digest_bytes(BIG),
        "digest_bytes(parallel=True)": lambda: digest_bytes(BIG, parallel=True),
    }
    if _blake3 is not None:
        b3 = _blake3.blake3
        cases["blake3 package, max_threads=1"] = lambda: b3(BIG).hexdigest()
        cases["blake3 package, max_threads=AUTO"] = lambda: b3(BIG, max_threads=b3.AUTO).hexdigest()
    return cases


@pytest.mark.benchmark(group="64 MB on one thread and on several")
@pytest.mark.parametrize("case", list(_parallel_cases()))
def test_parallel_64mb(benchmark: Any, case: str) -> None:
    benchmark(_parallel_cases()[case])


def main() -> None:
    assert digest_bytes(BIG, parallel=True) == digest_bytes(BIG)
    if _blake3 is not None:
        assert digest_bytes(BIG) == "blake3:" + _blake3.blake3(BIG).hexdigest()
    print("throughput of 2 threads over 1 (same work; 2.00x is perfect on 2 cores)")
    for case, (work, inputs) in CASES.items():
        medians = interleaved_medians(
            {
                "1": lambda w=work, i=inputs: in_threads(w, i, 1),
                "2": lambda w=work, i=inputs: in_threads(w, i, 2),
            },
            repeat=11,
            min_time=0.05,
        )
        one, two = medians["1"], medians["2"]
        print(
            f"  {case:<44} 1 thread {fmt_time(one)}  2 threads {fmt_time(two)}   {one / two:5.2f}x"
        )
    print("\none 64 MB input (median per call)")
    medians = interleaved_medians(_parallel_cases(), repeat=11, min_time=0.05)
    base = medians["digest_bytes, 1 thread"]
    for name, seconds in medians.items():
        print(
            f"  {name:<36} {fmt_time(seconds)}  {64 * MB / seconds / 1e9:5.2f} GB/s"
            f"   {base / seconds:5.2f}x digest_bytes, 1 thread"
        )


if __name__ == "__main__":
    main()
