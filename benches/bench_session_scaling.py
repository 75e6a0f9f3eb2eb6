"""How a transcript's costs grow with its length: record_run at the start and at the end of
N runs (8.8 KB AGENTS.md, a fact that changes every run), then Session.open of the result.

    python benches/bench_session_scaling.py [N ...]      (default: 1000 10000)

record_run should cost the same at run 10 and at run N (it looks at the new messages only);
open grows linearly with the records.

`pytest benches/bench_session_scaling.py --benchmark-only` times record_run after N runs and
Session.open with pytest-benchmark, N from RUNCONTEXT_BENCH_SCALING_RUNS (default 1000; 50
under --benchmark-disable).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runcontext import RunContext, Session

from _timing import benchmark_call

AGENTS = "Keep the build green.\n" * 400


def build(path: Path, runs: int) -> tuple[float, float]:
    conversation = [{"role": "system", "content": "You are careful."}]
    session = Session.create(path, conversation)
    costs = []
    for i in range(runs):
        conversation.append({"role": "user", "content": f"step {i}"})
        context = RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", f"d{i}")])
        reply = {"role": "assistant", "content": "ok"}
        start = time.perf_counter()
        session.record_run(conversation, context, reply)
        costs.append(time.perf_counter() - start)
        conversation.append(reply)
    session.close()
    return statistics.median(costs[:100]), statistics.median(costs[-100:])


def main(sizes: list[int]) -> None:
    for runs in sizes:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "t.jsonl"
            first, last = build(path, runs)
            opens = []
            for _ in range(3):
                start = time.perf_counter()
                Session.open(path).close()
                opens.append(time.perf_counter() - start)
            opened = statistics.median(opens) * 1e3
            print(
                f"{runs:>6} runs: record_run {first * 1e6:.0f} µs (first 100) / "
                f"{last * 1e6:.0f} µs (last 100), median; open {opened:.0f} ms (median of 3), "
                f"{path.stat().st_size / 1e6:.1f} MB"
            )


# -- pytest-benchmark ---------------------------------------------------------------------


def _runs(quick: bool) -> int:
    return 50 if quick else int(os.environ.get("RUNCONTEXT_BENCH_SCALING_RUNS", "1000"))


def test_open_scaling(benchmark: Any, quick: bool, tmp_path: Path) -> None:
    runs = _runs(quick)
    benchmark.group = f"transcript scaling: Session.open after {runs:,} runs"
    path = tmp_path / "t.jsonl"
    build(path, runs)
    benchmark_call(
        benchmark, lambda: Session.open(path).close(), implementation="Session.open", anchor=False
    )


def test_record_run_scaling(benchmark: Any, quick: bool, tmp_path: Path) -> None:
    runs = _runs(quick)
    benchmark.group = f"transcript scaling: record_run after {runs:,} runs"
    path = tmp_path / "t.jsonl"
    build(path, runs)
    with Session.open(path) as session:
        conversation = session.messages()
        context = RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "d")])
        reply = {"role": "assistant", "content": "ok"}

        def record() -> None:
            conversation.append({"role": "user", "content": f"step {len(conversation)}"})
            session.record_run(conversation, context, reply)
            conversation.append(reply)

        benchmark_call(benchmark, record, implementation="Session.record_run", anchor=False)


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000, 10000])
