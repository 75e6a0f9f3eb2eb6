"""Session transcripts: append throughput, transcript size with section dedupe, open-and-verify.

    python benches/bench_session.py

Prints medians (records/s, bytes, ms) and ratios:
- append throughput of ``message`` records, with and without ``durable=True`` (one fsync per
  append), and of whole runs (``record_run``: message, envelope, reply; still one fsync);
- a 1,000-run transcript with a constant 8 KB AGENTS.md and a fact that changes each run,
  against the same conversation with each run's rendered context stored inline;
- the time to open that transcript (parse, check canonical form, rebuild and verify every
  run's context digest).

`pytest benches/bench_session.py --benchmark-only` times one append and the open with
pytest-benchmark, an append beside writing the same canonical line to a plain file (the
anchor: what the transcript adds to a write).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runcontext import RunContext, canonical_json
from runcontext.transcript.session import Session

from _timing import benchmark_call, fmt_time, median_seconds

SEED = {"role": "system", "content": "You are a careful coding agent working in this repo."}
AGENTS = "".join(f"Rule {i}: keep the build green and explain every change.\n" for i in range(150))
RUNS = 1_000


def clock() -> datetime:
    return datetime(2025, 1, 31, 9, 30, tzinfo=UTC)


def user(n: int) -> dict[str, str]:
    return {"role": "user", "content": f"Step {n}: run the tests and fix what fails. " * 2}


def reply(n: int) -> dict[str, str]:
    return {"role": "assistant", "content": f"Step {n} done: 3 files changed, tests pass. " * 6}


def context(n: int) -> RunContext:
    moment = datetime(2025, 1, 31, 9, 30, tzinfo=UTC) + timedelta(minutes=n)
    return RunContext(
        head_sections=[("AGENTS.md", AGENTS)],
        facts=[("time", moment.isoformat()), ("branch", "main"), ("run", str(n))],
        tail_sections=[("notes", "CI is green; nothing urgent.")],
    )


def append_rate(directory: Path, *, durable: bool, count: int, repeat: int = 5) -> float:
    """Median message records per second over ``repeat`` fresh transcripts."""
    rates = []
    message = {"role": "user", "content": "x" * 200}
    for sample in range(repeat):
        path = directory / f"append-{durable}-{sample}.jsonl"
        with Session.create(path, [SEED], durable=durable, clock=clock) as session:
            start = time.perf_counter()
            for _ in range(count):
                session.append_messages([message])
            rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)


def run_rate(directory: Path, *, durable: bool, count: int, repeat: int = 5) -> float:
    """Median runs recorded per second (three records each: message, envelope, reply)."""
    rates = []
    for sample in range(repeat):
        path = directory / f"runs-{durable}-{sample}.jsonl"
        conversation: list[dict[str, str]] = [SEED]
        with Session.create(path, conversation, durable=durable, clock=clock) as session:
            start = time.perf_counter()
            for n in range(count):
                conversation.append(user(n))
                session.record_run(conversation, context(n), reply(n))
                conversation.append(reply(n))
            rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)


def build_transcript(path: Path, runs: int = RUNS) -> None:
    conversation: list[dict[str, str]] = [SEED]
    with Session.create(path, conversation, clock=clock) as session:
        for n in range(runs):
            conversation.append(user(n))
            session.record_run(conversation, context(n), reply(n))
            conversation.append(reply(n))


def build_inline(path: Path) -> None:
    """The alternative: the conversation plus each run's rendered head and tail, inline."""
    lines = [canonical_json({"type": "message", "index": 0, "message": SEED})]
    index = 1
    for n in range(RUNS):
        ctx = context(n)
        lines.append(canonical_json({"type": "message", "index": index, "message": user(n)}))
        lines.append(
            canonical_json(
                {"type": "run", "run": n + 1, "head": ctx.head_text, "tail": ctx.tail_text}
            )
        )
        lines.append(canonical_json({"type": "message", "index": index + 1, "message": reply(n)}))
        index += 2
    path.write_bytes(b"\n".join(lines) + b"\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        fast = append_rate(directory, durable=False, count=5_000)
        durable = append_rate(directory, durable=True, count=300)
        print("append throughput (message records of ~250 bytes, median of 5)")
        print(f"  durable=False  {fast:12,.0f} records/s")
        print(f"  durable=True   {durable:12,.0f} records/s   ({fast / durable:.0f}× slower)")
        fast_runs = run_rate(directory, durable=False, count=1_000)
        durable_runs = run_rate(directory, durable=True, count=200)
        print("record_run throughput (3 records a run, one fsync a run when durable, median of 5)")
        print(f"  durable=False  {fast_runs:12,.0f} runs/s")
        slower = fast_runs / durable_runs
        print(f"  durable=True   {durable_runs:12,.0f} runs/s   ({slower:.0f}× slower)")

        transcript, inline = directory / "transcript.jsonl", directory / "inline.jsonl"
        build_transcript(transcript)
        build_inline(inline)
        conversation_bytes = sum(
            len(raw) for raw in transcript.read_bytes().splitlines(True) if b'"message"' in raw
        )
        size, inline_size = transcript.stat().st_size, inline.stat().st_size
        print(f"\n{RUNS:,}-run transcript, constant {len(AGENTS):,}-byte AGENTS.md")
        print(f"  sections once + envelopes   {size:12,} bytes")
        print(
            f"  rendered context inline     {inline_size:12,} bytes   ({inline_size / size:.1f}×)"
        )
        print(
            f"  of which context            {size - conversation_bytes:12,} bytes vs "
            f"{inline_size - conversation_bytes:,} inline "
            f"({(inline_size - conversation_bytes) / (size - conversation_bytes):.1f}×)"
        )

        def reopen() -> None:
            with Session.open(transcript) as session:
                session.runs()

        def open_only() -> None:
            Session.open(transcript).close()

        print(f"\nopen and verify the {RUNS:,}-run transcript (median)")
        opened, listed = median_seconds(open_only, repeat=7), median_seconds(reopen, repeat=7)
        print(f"  Session.open (verifies every run)       {fmt_time(opened)}")
        print(f"  Session.open + runs() ({RUNS:,} contexts)  {fmt_time(listed)}")


@pytest.mark.parametrize("durable", [False, True], ids=["durable=False", "durable=True"])
@pytest.mark.parametrize("implementation", ["Session.append_messages", "plain file write"])
def test_append(benchmark: Any, tmp_path: Path, durable: bool, implementation: str) -> None:
    benchmark.group = f"transcript: append one ~250-byte message record, durable={durable}"
    message = {"role": "user", "content": "x" * 200}
    if implementation == "Session.append_messages":
        session = Session.create(tmp_path / "t.jsonl", [SEED], durable=durable, clock=clock)

        def append() -> None:
            session.append_messages([message])
    else:
        line = canonical_json({"type": "message", "index": 1, "message": message}) + b"\n"
        plain = (tmp_path / "plain.jsonl").open("ab", buffering=0)

        def append() -> None:
            plain.write(line)
            if durable:
                os.fsync(plain.fileno())

    try:
        benchmark_call(
            benchmark,
            append,
            implementation=implementation,
            anchor=implementation != "Session.append_messages",
        )
    finally:
        (session if implementation == "Session.append_messages" else plain).close()


@pytest.mark.parametrize("implementation", ["Session.open", "Session.open + runs()"])
def test_open(benchmark: Any, quick: bool, tmp_path: Path, implementation: str) -> None:
    runs = 50 if quick else RUNS
    benchmark.group = f"transcript: open and verify a {runs:,}-run transcript"
    path = tmp_path / "t.jsonl"
    build_transcript(path, runs)

    def reopen() -> None:
        with Session.open(path) as session:
            if implementation == "Session.open + runs()":
                session.runs()

    benchmark_call(benchmark, reopen, implementation=implementation, anchor=False)


if __name__ == "__main__":
    main()
