"""What a run costs to record, and whether it follows the work: `record_run` of a context whose
one head section (8 KB to 1 MB) is already recorded, against hashing that text once (the cost
of finding it by its text instead of by the digest the context holds); and `Loop.run` per run
after 1,000 and 10,000 runs, while building the session and after resuming it.

    python benches/bench_record_cost.py [--quick]

Medians of the last runs of each phase, interleaved where two things are compared.
`pytest benches/bench_record_cost.py --benchmark-only` times record_run at each section size.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runcontext import Loop, RunContext, Session, digest_bytes

from _timing import benchmark_call

SIZES = {"8 KB": 8 << 10, "256 KB": 256 << 10, "1 MB": 1 << 20}
REPLY = {"role": "assistant", "content": "ok"}


def section(size: int) -> str:
    line = "Keep the build green; run make test before a commit.\n"
    return (line * (size // len(line) + 1))[:size]


def recorder(path: Path, text: str) -> Callable[[], None]:
    """A function that records one more run with `text` as its head section (recorded by the
    first run) and a fact that changes every run."""
    conversation: list[dict[str, str]] = [{"role": "user", "content": "start"}]
    session = Session.create(path, conversation)
    # The contexts are built beforehand (building one hashes its text): what is timed is
    # recording a context the caller holds.
    contexts = iter(
        [
            RunContext(head_sections=[("AGENTS.md", text)], facts=[("run", str(n))])
            for n in range(400)
        ]
    )

    def record() -> None:
        conversation.append({"role": "user", "content": f"step {len(conversation)}"})
        session.record_run(conversation, next(contexts), REPLY)
        conversation.append(REPLY)

    record()  # the section is recorded once, here
    return record


def loop_costs(path: Path, runs: int, tail: int) -> tuple[float, float]:
    """Median seconds of `Loop.run` over the last `tail` of `runs` runs while building, and
    over `tail` runs after reopening the session."""
    conversation: list[Any] = [{"role": "user", "content": "start"}]

    def run_once(loop: Loop, n: int) -> float:
        context = RunContext(facts=[("run", str(n))])
        conversation.append({"role": "user", "content": f"step {n}"})
        start = time.perf_counter()
        outcome = loop.run(conversation, context=context)
        took = time.perf_counter() - start
        conversation[:] = outcome.messages
        return took

    with Session.create(path, conversation) as session:
        loop = Loop(lambda request: REPLY, session=session)
        building = [run_once(loop, n) for n in range(runs)][-tail:]
    with Session.open(path) as session:
        loop = Loop(lambda request: REPLY, session=session)
        resumed = [run_once(loop, runs + n) for n in range(tail)]
    return statistics.median(building), statistics.median(resumed)


def main() -> None:
    quick = "--quick" in sys.argv
    rounds = 20 if quick else 200  # at most the 400 contexts a recorder builds, less one
    print("record_run of a context whose head section is already recorded (median µs)")
    print(f"{'section':>8}  {'record_run':>10}  {'digest_bytes(text)':>18}")
    with tempfile.TemporaryDirectory() as directory:
        for label, size in SIZES.items():
            text = section(size)
            record = recorder(Path(directory) / f"{label}.jsonl", text)
            data = text.encode()
            recorded, hashed = [], []
            for _ in range(rounds):  # interleaved
                start = time.perf_counter()
                record()
                recorded.append(time.perf_counter() - start)
                start = time.perf_counter()
                digest_bytes(data)
                hashed.append(time.perf_counter() - start)
            print(
                f"{label:>8}  {statistics.median(recorded) * 1e6:>10.1f}  "
                f"{statistics.median(hashed) * 1e6:>18.1f}"
            )
        print("\nLoop.run per run (median ms of the last 100 runs)")
        print(f"{'runs':>7}  {'building':>9}  {'resumed':>8}")
        for runs in (200, 2_000) if quick else (1_000, 10_000):
            building, resumed = loop_costs(Path(directory) / f"loop{runs}.jsonl", runs, 100)
            print(f"{runs:>7,}  {building * 1e3:>9.3f}  {resumed * 1e3:>8.3f}")


@pytest.mark.parametrize("label", list(SIZES))
def test_record_run_of_a_recorded_section(
    benchmark: Any, quick: bool, tmp_path: Path, label: str
) -> None:
    benchmark.group = "record_run, head section already recorded"
    record = recorder(tmp_path / "t.jsonl", section(64 if quick else SIZES[label]))
    benchmark_call(benchmark, record, implementation=f"record_run, {label}", anchor=False)


if __name__ == "__main__":
    main()
