"""``runcontext log``: each run's date, digest and changes; one run in full; errors."""

from __future__ import annotations

import argparse
import fcntl
import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.cli import log as cli_log
from runcontext.cli._commands import COMMANDS
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}
AGENTS = "Keep the build green.\nExplain every change."

MONDAY = RunContext(
    head_sections=[("AGENTS.md", AGENTS), ("tools", "git, pytest")],
    facts=[("date", "2025-01-27"), ("branch", "main")],
)
TUESDAY = RunContext(  # date changed, branch removed, ticket added, AGENTS.md edited
    head_sections=[("AGENTS.md", AGENTS + "\nNever force-push."), ("tools", "git, pytest")],
    facts=[("date", "2025-01-28"), ("ticket", "RC-6")],
)
WEDNESDAY = RunContext(  # tools moved to the tail, a new section; facts unchanged
    head_sections=[("AGENTS.md", AGENTS + "\nNever force-push.")],
    facts=[("date", "2025-01-28"), ("ticket", "RC-6")],
    tail_sections=[("tools", "git, pytest"), ("ci", "Last CI run: green.")],
)


def ticking_clock() -> Callable[[], datetime]:
    days = iter(range(100))
    return lambda: datetime(2025, 1, 27, 9, 0, tzinfo=UTC) + timedelta(days=next(days))


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "agent.jsonl"
    conversation = [SEED]
    with Session.create(path, conversation, clock=ticking_clock()) as session:
        for n, ctx in enumerate((MONDAY, TUESDAY, WEDNESDAY, WEDNESDAY)):
            conversation = [*conversation, {"role": "user", "content": f"turn {n}"}]
            session.record_run(conversation, ctx, {"role": "assistant", "content": "ok"})
            conversation = [*conversation, {"role": "assistant", "content": "ok"}]
    return path


def run_log(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli_log.register(parser.add_subparsers())
    args = parser.parse_args(["log", *argv])
    status: int = args.handler(args)
    return status


def test_log_lists_each_run_with_what_changed(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_log(str(transcript)) == 0
    out = capsys.readouterr().out
    assert out == (
        f"run 1  2025-01-28 09:00:00Z  told 2025-01-27  {MONDAY.digest}  2 messages\n"
        f"  added    section AGENTS.md: head 43 B {short(MONDAY, 'AGENTS.md')}\n"
        f"  added    section tools: head 11 B {short(MONDAY, 'tools')}\n"
        "  added    fact date: 2025-01-27\n"
        "  added    fact branch: main\n"
        f"run 2  2025-01-29 09:00:00Z  told 2025-01-28  {TUESDAY.digest}  4 messages\n"
        "  added    fact ticket: RC-6\n"
        "  removed  fact branch: main\n"
        f"  changed  section AGENTS.md: head 43 B {short(MONDAY, 'AGENTS.md')} → "
        f"head 61 B {short(TUESDAY, 'AGENTS.md')}\n"
        "  changed  fact date: 2025-01-27 → 2025-01-28\n"
        f"run 3  2025-01-30 09:00:00Z  told 2025-01-28  {WEDNESDAY.digest}  6 messages\n"
        f"  added    section ci: tail 19 B {short(WEDNESDAY, 'ci')}\n"
        f"  changed  section tools: head 11 B {short(TUESDAY, 'tools')} → "
        f"tail 11 B {short(WEDNESDAY, 'tools')}\n"
        f"run 4  2025-01-31 09:00:00Z  told 2025-01-28  {WEDNESDAY.digest}  8 messages\n"
        "  unchanged\n"
        f"chain  {json.loads(transcript.read_bytes().splitlines()[-1])['chain']}\n"
    )


def short(context: RunContext, name: str) -> str:
    """A section's digest as the text output shortens it (12 hex digits)."""
    digest = next(s.digest for s in context.sections if s.name == name)
    return digest[: len("blake3:") + 12]


def message_text(index: int, message: dict[str, str], label: str = "message") -> str:
    return (
        f"\n=== {label} {index}: {message['role']} ===\n"
        f'{{\n  "content": "{message["content"]}",\n  "role": "{message["role"]}"\n}}\n'
    )


def test_log_run_prints_what_was_sent_in_order_then_the_reply(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = (
        f"run 3  2025-01-30 09:00:00Z  told 2025-01-28  {WEDNESDAY.digest}  6 messages\n"
        f"  added    section ci: tail 19 B {short(WEDNESDAY, 'ci')}\n"
        f"  changed  section tools: head 11 B {short(TUESDAY, 'tools')} → "
        f"tail 11 B {short(WEDNESDAY, 'tools')}\n"
    )
    sent = [SEED]
    for n in range(3):
        sent.append({"role": "user", "content": f"turn {n}"})
        if n < 2:
            sent.append({"role": "assistant", "content": "ok"})
    conversation = "".join(message_text(i, m) for i, m in enumerate(sent))
    reply = message_text(6, {"role": "assistant", "content": "ok"}, "reply: message")
    head = f"\n=== head ===\n{WEDNESDAY.head_text}\n"
    tail = f"\n=== tail ===\n{WEDNESDAY.tail_text}\n"
    assert run_log(str(transcript), "--run", "3") == 0
    assert capsys.readouterr().out == entry + head + conversation + tail + reply
    # --context keeps what the context added; --messages what the conversation held.
    assert run_log(str(transcript), "--run", "3", "--context") == 0
    assert capsys.readouterr().out == entry + head + tail
    assert run_log(str(transcript), "--run", "3", "--messages") == 0
    assert capsys.readouterr().out == entry + conversation + reply


def test_log_run_says_when_there_is_no_head_or_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.jsonl"
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        session.record_run([SEED], RunContext(head_sections=[("AGENTS.md", AGENTS)]))
        session.record_run([SEED], RunContext(facts=[("date", "2025-01-28")]))
    assert run_log(str(path), "--run", "1", "--context") == 0
    out = capsys.readouterr().out
    assert out.endswith(f"\n=== head ===\n{AGENTS}\n\n=== tail: none ===\n")
    assert run_log(str(path), "--run", "2", "--context") == 0
    out = capsys.readouterr().out
    assert "\n=== head: none ===\n\n=== tail ===\n" in out
    assert "date: 2025-01-28" in out.split("=== tail ===")[1]
    assert run_log(str(path), "--run", "2") == 0  # recorded without a reply, and the last
    assert capsys.readouterr().out.endswith("\n=== reply: none recorded ===\n")


def section(context: RunContext, name: str = "AGENTS.md") -> str:
    return next(s.digest for s in context.sections if s.name == name)


def test_log_json(transcript: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_log(str(transcript), "--json") == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in runs] == [1, 2, 3, 4]
    assert runs[1] == {
        "run": 2,
        "time": "2025-01-29T09:00:00Z",
        "date": "2025-01-28",
        "digest": TUESDAY.digest,
        "messages": 4,
        "tokens": None,
        "changes": {
            "facts": {
                "added": [{"name": "ticket", "value": "RC-6"}],
                "removed": [{"name": "branch", "value": "main"}],
                "changed": [{"name": "date", "old": "2025-01-27", "new": "2025-01-28"}],
            },
            "sections": {
                "added": [],
                "removed": [],
                "changed": [
                    {
                        "name": "AGENTS.md",
                        "old": {"position": "head", "bytes": 43, "digest": section(MONDAY)},
                        "new": {"position": "head", "bytes": 61, "digest": section(TUESDAY)},
                    }
                ],
            },
        },
    }

    assert run_log(str(transcript), "--run", "2", "--json") == 0
    full = json.loads(capsys.readouterr().out)
    assert full["head"] == TUESDAY.head_text
    assert full["tail"] == TUESDAY.tail_text
    assert full["facts"] == [["date", "2025-01-28"], ["ticket", "RC-6"]]
    assert full["sections"] == [
        {"position": s.position, "name": s.name, "digest": s.digest} for s in TUESDAY.sections
    ]


def test_log_of_a_torn_transcript_warns_and_lists_the_complete_runs(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with transcript.open("ab") as file:
        file.write(b'{"digest":"blake3:')
    assert run_log(str(transcript)) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\nrun ") == 3  # runs 2, 3 and 4 after run 1
    assert "warning:" in captured.err and "the last record is torn" in captured.err
    assert transcript.read_bytes().endswith(b'{"digest":"blake3:')  # log never repairs


def test_log_does_not_wait_for_a_writer_holding_the_lock(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with transcript.open("ab", buffering=0) as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)  # a writer stopped in the middle of an append
        writer.write(b'{"digest":"blake3:')
        finished: list[int] = []
        reader = threading.Thread(target=lambda: finished.append(run_log(str(transcript))))
        reader.start()
        reader.join(timeout=30)  # a guard, not a timing: a waiting reader never finishes
        assert finished == [0], "runcontext log waited for the writer's lock"
    captured = capsys.readouterr()
    assert captured.out.count("\nrun ") == 3
    assert captured.err == ""  # an append in progress is not a torn line


def test_log_errors_are_one_line_on_stderr_with_exit_1(
    transcript: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert COMMANDS["log"][0] == cli_log.__name__
    assert cli.main(["log", str(transcript), "--run", "9"]) == 1
    err = capsys.readouterr().err
    assert err == f"runcontext log: {transcript}: no run 9: the transcript has runs 1 to 4\n"

    lines = transcript.read_bytes().splitlines(keepends=True)
    lines[2] = b"not json\n"
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    assert cli.main(["log", str(broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"runcontext log: {broken}:3: not JSON")
    assert err.count("\n") == 1

    assert cli.main(["log", str(tmp_path / "missing.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err == f"runcontext log: no such file: {tmp_path / 'missing.jsonl'}\n"

    assert cli.main(["log", str(transcript)]) == 0


def test_log_shows_each_runs_counts_share_headroom_and_billing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    seed = [{"role": "user", "content": "hi"}]
    with Session.create(path, seed) as session:
        session.record_run(
            seed,
            MONDAY,
            {"role": "assistant", "content": "hello"},
            tokens={
                "head": 300,
                "conversation": 600,
                "tail": 100,
                "tools": 0,
                "quality": "calibrated",
                "limit": 900,
                "billed": {"input": 1010, "output": 7, "cache_read": 256, "cache_write": 0},
            },
        )
        session.record_run(
            [*seed, {"role": "assistant", "content": "hello"}],
            MONDAY,
            tokens={"head": 300, "conversation": 20, "tail": 100, "tools": 80, "quality": "exact"},
        )
    assert run_log(str(path)) == 0
    out = capsys.readouterr().out
    # 1,000 tokens, of which head + tail (400) are 40 %; the limit was exceeded by 100.
    assert (
        "  tokens   1,000 (calibrated): context 400 (40%; head 300, tail 100), "
        "conversation 600, tools 0; limit 900, over by 100\n"
        "  billed   1,010 input: 256 (25%) read from the cache, 0 (0%) written to it, 7 output\n"
    ) in out
    assert "  tokens   500 (exact): context 400 (80%; head 300, tail 100), conversation 20, " in out
    # One of the two runs was billed: the summary covers it alone.
    assert "\nbilled  1 of 2 runs: 1,010 input tokens, 25.3% read from the cache, 0.0% " in out
    assert run_log(str(path), "--json") == 0
    runs = json.loads(capsys.readouterr().out)
    assert runs[1]["tokens"] == {
        "head": 300,
        "conversation": 20,
        "tail": 100,
        "tools": 80,
        "quality": "exact",
    }


def test_a_run_with_billing_and_the_same_context_says_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The billing line is a count, not a change: the run still says its context is unchanged
    # (it said nothing when the counts took two lines).
    path = tmp_path / "t.jsonl"
    seed = [{"role": "user", "content": "hi"}]
    tokens = {
        "head": 1,
        "conversation": 2,
        "tail": 3,
        "tools": 0,
        "quality": "exact",
        "billed": {"input": 6, "cache_read": 0, "cache_write": 0},
    }
    with Session.create(path, seed) as session:
        session.record_run(seed, MONDAY, {"role": "assistant", "content": "a"}, tokens=tokens)
        messages = [*seed, {"role": "assistant", "content": "a"}]
        session.record_run(messages, MONDAY, tokens=tokens)
        chain = session.chain
    assert run_log(str(path)) == 0
    second = capsys.readouterr().out.split("run 2 ")[1]
    assert second.splitlines()[1:] == [
        "  tokens   6 (exact): context 4 (67%; head 1, tail 3), conversation 2, tools 0",
        "  billed   6 input: 0 (0%) read from the cache, 0 (0%) written to it",
        "  unchanged",
        "billed  2 of 2 runs: 12 input tokens, 0.0% read from the cache, 0.0% written to it",
        f"chain  {chain}",
    ]
