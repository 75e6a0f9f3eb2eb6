"""How a transcript's costs grow with its length: record_run at the start and at the end of
N runs (8.8 KB AGENTS.md, a fact that changes every run), then Session.open of the result and
`runcontext log` of it, each in a fresh process (wall time and peak RSS, Linux).

    python benches/bench_session_scaling.py [N ...]      (default: 1000 10000 50000)

record_run should cost the same at run 10 and at run N (it looks at the new messages only);
open and log grow linearly with the records. Fresh-process figures are medians of
ROUNDS runs with their range; `import runcontext` alone is the RSS floor.

`pytest benches/bench_session_scaling.py --benchmark-only` times record_run after N runs and
Session.open with pytest-benchmark, N from RUNCONTEXT_BENCH_SCALING_RUNS (default 1000; 50
under --benchmark-disable).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runcontext import RunContext, Session

from _timing import benchmark_call

AGENTS = "Keep the build green.\n" * 400
ROUNDS = 5

# Each child prints "<seconds> <peak RSS in KiB>" of its own work on stderr's last line. The
# peak is VmHWM (this process image's high-water mark): getrusage's ru_maxrss survives exec on
# Linux, so a child would report this (large) benchmark process's peak instead.
_PEAK = """
def peak():
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("VmHWM:"))
"""
_OPEN = (
    _PEAK
    + """
import sys, time
from runcontext import Session
start = time.perf_counter()
Session.open(sys.argv[1]).close()
took = time.perf_counter() - start
print(took, peak(), file=sys.stderr)
"""
)
_IMPORT = (
    _PEAK
    + """
import sys
import runcontext
print(0, peak(), file=sys.stderr)
"""
)
_LOG = (
    _PEAK
    + """
import contextlib, os, sys
from runcontext.cli import main
sys.argv = ["runcontext", "log", *sys.argv[1:]]
with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
    status = main()
print(0, peak(), file=sys.stderr)
"""
)


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


def fresh(code: str, *args: str) -> tuple[float, float, float]:
    """(whole-process wall seconds, the child's own timing, its peak RSS in MB)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    took, rss = done.stderr.split()[-2:]
    return wall, float(took), int(rss) / 1024


def spread(values: list[float], scale: float, unit: str) -> str:
    shown = [v * scale for v in values]
    return f"{statistics.median(shown):.0f} {unit} [{min(shown):.0f}–{max(shown):.0f}]"


def main(sizes: list[int]) -> None:
    floor = statistics.median(fresh(_IMPORT)[2] for _ in range(3))
    print(f"import runcontext alone: peak RSS {floor:.1f} MB")
    for runs in sizes:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "t.jsonl"
            started = time.perf_counter()
            first, last = build(path, runs)
            built = time.perf_counter() - started
            opens, open_rss, logs, log_rss, jsons = [], [], [], [], []
            for _ in range(ROUNDS):  # interleaved, so a busy moment hits each alike
                _, took, rss = fresh(_OPEN, os.fspath(path))
                opens.append(took)
                open_rss.append(rss)
                wall, _, rss = fresh(_LOG, os.fspath(path))
                logs.append(wall)
                log_rss.append(rss)
                jsons.append(fresh(_LOG, os.fspath(path), "--json")[0])
            print(
                f"{runs:>6} runs ({path.stat().st_size / 1e6:.1f} MB, built in {built:.1f} s): "
                f"record_run {first * 1e6:.0f} µs (first 100) / {last * 1e6:.0f} µs (last 100); "
                f"open {spread(opens, 1e3, 'ms')}, peak {spread(open_rss, 1, 'MB')}; "
                f"log {spread(logs, 1e3, 'ms')}, peak {spread(log_rss, 1, 'MB')}; "
                f"log --json {spread(jsons, 1e3, 'ms')} (whole process)"
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
    main([int(arg) for arg in sys.argv[1:]] or [1000, 10000, 50000])
