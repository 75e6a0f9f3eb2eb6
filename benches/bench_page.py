"""What the page costs: `runcontext log T --html FILE` of a transcript of N runs, whole process
(wall time, peak RSS on Linux), against `runcontext log T` (the text listing) of the same
transcript, and the page's size.

    python benches/bench_page.py [N ...]      (default: 1000 10000)

The transcript is a day of an agent's work three times over per day: an 8.8 KB AGENTS.md that
gains a line every 25 runs (a diff each time), a `date` fact that changes every 3 runs, a
`branch` every 50, a CI section that flips between red and green, a user message and a reply
per run, and every run's token counts with billing. Targets (docs/TRANSCRIPT.md, *The page*):
≤ 3 s at 1,000 runs, ≤ 20 s at 10,000. Medians of ROUNDS fresh processes with their range.

`pytest benches/bench_page.py --benchmark-only` times `page_html(page_data(...))` of 1,000
runs (50 under --benchmark-disable) with pytest-benchmark.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext, Session
from runcontext.cli.page import page_data, page_html

from _timing import benchmark_call

ROUNDS = 3
AGENTS = "".join(
    f"Rule {i}: keep the build green; run make test before a commit.\n" for i in range(140)
)

# The child prints "<seconds> <peak RSS in KiB>" on stderr's last line (VmHWM: this process
# image's high-water mark; getrusage's would be the parent's after exec).
_CHILD = """
import contextlib, os, sys, time
from runcontext.cli import main
start = time.perf_counter()
with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
    status = main(["log", *sys.argv[1:]])
took = time.perf_counter() - start
with open("/proc/self/status") as status_file:
    peak = next(line.split()[1] for line in status_file if line.startswith("VmHWM:"))
print(took, peak, file=sys.stderr)
"""


def tokens(run: int) -> dict[str, Any]:
    cold = run % 30 == 0  # a cache miss every 30 runs
    return {
        "head": 2300,
        "conversation": 120 + 40 * (run % 30),
        "tail": 60,
        "tools": 400,
        "quality": "calibrated",
        "billed": {
            "input": 2900 + 40 * (run % 30),
            "output": 120,
            "cache_read": 0 if cold else 2300,
            "cache_write": 2300 if cold else 0,
        },
    }


def build(path: Path, runs: int) -> None:
    steps = iter(range(runs + 1))
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(
        path, conversation, clock=lambda: start + timedelta(hours=8 * next(steps)), durable=False
    ) as session:
        for run in range(runs):
            agents = AGENTS + "".join(f"Learned at run {k}.\n" for k in range(0, run, 25))
            context = RunContext(
                head_sections=[("AGENTS.md", agents), ("tools", "git, pytest, ruff")],
                facts=[
                    ("date", f"{(start + timedelta(days=run // 3)).date()}"),
                    ("branch", f"topic-{run // 50}"),
                ],
                tail_sections=[("ci", "Last CI run: " + ("red" if run % 7 == 0 else "green"))],
            )
            conversation.append({"role": "user", "content": f"Step {run}: fix the next test."})
            reply = {"role": "assistant", "content": f"Fixed step {run}."}
            session.record_run(conversation, context, reply, tokens=tokens(run))
            conversation.append(reply)


def child(*argv: str) -> tuple[float, int]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True, check=True
    )
    took, peak = done.stderr.strip().splitlines()[-1].split()
    return float(took), int(peak)


def measure(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        transcript, page = Path(directory) / "t.jsonl", Path(directory) / "t.html"
        build(transcript, runs)
        rows = {"log --html": [str(transcript), "--html", str(page)], "log": [str(transcript)]}
        samples: dict[str, list[tuple[float, int]]] = {name: [] for name in rows}
        for _ in range(ROUNDS):
            for name, argv in rows.items():
                samples[name].append(child(*argv))
        size = page.stat().st_size
        print(f"{runs:,} runs (transcript {transcript.stat().st_size:,} bytes)")
        for name, found in samples.items():
            times = [t for t, _ in found]
            peak = max(p for _, p in found) / 1024
            print(
                f"  runcontext {name:<11} {statistics.median(times):7.3f} s "
                f"[{min(times):.3f}–{max(times):.3f}], peak RSS {peak:.0f} MB"
            )
        print(f"  page: {size:,} bytes")


@pytest.fixture(scope="module")
def transcript(quick: bool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("page") / "t.jsonl"
    build(path, 50 if quick else 1000)
    return path


def test_page(benchmark: Any, transcript: Path) -> None:
    with Session.open(transcript, writable=False) as session:
        runs, messages, chain = session.runs(), session.messages(), session.chain

    def render() -> str:
        return page_html(page_data("t.jsonl", runs, messages, chain=chain, version=2))

    benchmark_call(benchmark, render, implementation="runcontext", anchor=False)


if __name__ == "__main__":
    if os.environ.get("RUNCONTEXT_BENCH_QUICK") == "1":
        sizes = [50]
    else:
        sizes = [int(arg) for arg in sys.argv[1:]] or [1000, 10000]
    for size in sizes:
        measure(size)
