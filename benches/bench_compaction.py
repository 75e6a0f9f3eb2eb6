"""What compactions and elisions cost a long session: a 2,000-run agent session with a
compaction every 100 runs and elisions in between, against the same session never compacted.

    python benches/bench_compaction.py [RUNS]      (default: 2000)

Each run adds a user message, an assistant tool call, its 2 KB tool result and a reply. With
compaction, every 10th run stubs the tool results older than the last 5 runs (an elision that
keeps each result's `tool_call_id`), and every 100th run summarises everything but the system
prompt and the last run's messages (a `summary` compaction with token counts). Printed, for
both sessions: the file's size; `Session.open` (read and verify every record), timed inside a
fresh process, with the process's peak RSS and then the time to replay the last run's
conversation (`Session.messages_at`); and `runcontext log`, whole process. Medians of ROUNDS
fresh processes with their range.

`pytest benches/bench_compaction.py` (bench-check) builds a small session and checks that the
replay of every run is what it was sent.
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

from runcontext import RunContext, Session

ROUNDS = 3
SYSTEM = {"role": "system", "content": "You are a careful coding agent."}
OUTPUT = "".join(f"tests/test_{i}.py::test_case PASSED\n" for i in range(48))  # about 2 KB
CONTEXT = RunContext(
    head_sections=[("AGENTS.md", "Keep the build green.\n" * 40)],
    facts=[("branch", "main")],
)

# The child prints "<seconds> <peak RSS in KiB>" on stderr's last line.
_OPEN = """
import sys, time
from runcontext import Session
start = time.perf_counter()
with Session.open(sys.argv[1], writable=False) as session:
    took = time.perf_counter() - start
    replay = time.perf_counter()
    session.messages_at(len(session.runs()))
    replay = time.perf_counter() - replay
with open("/proc/self/status") as status_file:
    peak = next(line.split()[1] for line in status_file if line.startswith("VmHWM:"))
print(took, peak, replay, file=sys.stderr)
"""
_LOG = """
import contextlib, os, sys, time
from runcontext.cli import main
start = time.perf_counter()
with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
    main(["log", sys.argv[1]])
took = time.perf_counter() - start
with open("/proc/self/status") as status_file:
    peak = next(line.split()[1] for line in status_file if line.startswith("VmHWM:"))
print(took, peak, 0, file=sys.stderr)
"""


def turn(run: int) -> list[dict[str, Any]]:
    """A run's new messages before its reply: the user's, a tool call and its result."""
    call = f"call_{run}"
    return [
        {"role": "user", "content": f"Step {run}: run the tests."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "pytest", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": OUTPUT},
    ]


def build(path: Path, runs: int, *, compact: bool) -> list[list[Any]]:
    """Record the session; returns each run's conversation as sent when ``compact`` (for the
    check), else nothing."""
    steps = iter(range(10 * runs + 10))
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    sent: list[list[Any]] = []
    with Session.create(
        path, [SYSTEM], clock=lambda: start + timedelta(minutes=next(steps))
    ) as session:
        conversation: list[Any] = [SYSTEM]
        for run in range(1, runs + 1):
            if compact and run % 100 == 0:
                # Everything but the system prompt and the last run's four messages.
                end = len(conversation) - 4
                summary = {"role": "user", "content": f"Summary of runs up to {run - 2}."}
                session.compact(1, end, [summary], tokens_before=500 * end, tokens_after=40)
                conversation[1:end] = [summary]
            elif compact and run % 10 == 0:
                stubs = {
                    i: {**m, "content": "[cleared]"}
                    for i, m in enumerate(conversation[: len(conversation) - 20])
                    if m.get("role") == "tool" and m["content"] != "[cleared]"
                }
                if stubs:
                    session.elide(stubs)
                    for i, stub in stubs.items():
                        conversation[i] = stub
            conversation += turn(run)
            reply = {"role": "assistant", "content": f"Step {run}: green."}
            session.record_run(conversation, CONTEXT, reply)
            if compact:
                sent.append(list(conversation))
            conversation.append(reply)
    return sent


def child(code: str, *argv: str) -> tuple[float, int, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
    )
    took, peak, replay = done.stderr.strip().splitlines()[-1].split()
    return float(took), int(peak), float(replay)


def measure(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        paths = {
            "compacted": Path(directory) / "compacted.jsonl",
            "never compacted": Path(directory) / "plain.jsonl",
        }
        build(paths["compacted"], runs, compact=True)
        build(paths["never compacted"], runs, compact=False)
        print(f"{runs:,} runs")
        for name, path in paths.items():
            print(f"  {name}: {path.stat().st_size:,} bytes")
            for label, code in (("Session.open", _OPEN), ("runcontext log", _LOG)):
                found = [child(code, str(path)) for _ in range(ROUNDS)]
                times = [t for t, _, _ in found]
                peak = max(p for _, p, _ in found) / 1024
                last = statistics.median(r for _, _, r in found) * 1000
                replay = f", then the last run's conversation in {last:.1f} ms"
                replay = replay if code is _OPEN else ""
                print(
                    f"    {label:<15} {statistics.median(times):7.3f} s "
                    f"[{min(times):.3f}–{max(times):.3f}], peak RSS {peak:.0f} MB{replay}"
                )


def test_every_run_replays_what_it_was_sent(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    sent = build(path, 120, compact=True)
    with Session.open(path) as session:
        assert len(session.edits()) == 12  # one compaction, eleven elisions
        for number, conversation in enumerate(sent, 1):
            assert session.messages_at(number) == conversation


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for argument in sys.argv[1:] or ["2000"]:
        measure(int(argument))
