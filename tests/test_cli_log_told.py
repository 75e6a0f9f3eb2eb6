"""``runcontext log``: the date the agent was told, fact values, conversation as of a run."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}


def at(*moments: datetime) -> Callable[[], datetime]:
    times = iter(moments)
    return lambda: next(times)


def test_the_told_date_is_shown_only_where_it_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.jsonl"
    noon = datetime(2026, 12, 1, 12, tzinfo=UTC)
    with Session.create(path, [SEED], clock=at(noon, noon, noon, noon)) as session:
        session.record_run([SEED], RunContext(facts=[("date", "2026-12-01")]))
        session.record_run([SEED], RunContext(facts=[("date", "2026-11-30")]))  # a stale cache
        session.record_run([SEED], RunContext(facts=[("cwd", "/src")]))  # no date fact
    assert cli.main(["log", str(path)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert heads[0].startswith("run 1  2026-12-01 12:00:00Z  blake3:")
    assert heads[1].startswith("run 2  2026-12-01 12:00:00Z  told 2026-11-30  blake3:")
    assert heads[2].startswith("run 3  2026-12-01 12:00:00Z  blake3:")
    assert cli.main(["log", str(path), "--json"]) == 0
    assert [r["date"] for r in json.loads(capsys.readouterr().out)] == [
        "2026-12-01",
        "2026-11-30",
        None,
    ]


def test_a_fact_value_cannot_forge_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.jsonl"
    noon = datetime(2026, 12, 1, 12, tzinfo=UTC)
    hostile = "main\nrun 9  2026-01-01 00:00:00Z  blake3:forged\x1b[2K"
    with Session.create(path, [SEED], clock=at(noon, noon, noon)) as session:
        session.record_run([SEED], RunContext(facts=[("branch", "main")]))
        session.record_run([SEED], RunContext(facts=[("branch", hostile)]))
    assert cli.main(["log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  changed  fact branch: main → main\\nrun 9  2026-01-01 00:00:00Z  blake3:forged" in out
    assert "\\x1b[2K\n" in out and "\x1b" not in out
    assert [line[:5] for line in out.splitlines() if line.startswith("run ")] == ["run 1", "run 2"]


def test_run_messages_prints_the_conversation_it_was_sent_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.jsonl"
    noon = datetime(2026, 12, 1, 12, tzinfo=UTC)
    ctx = RunContext(facts=[("date", "2026-12-01")])
    question = {"role": "user", "content": "What day is it?\n=== message 9: system ==="}
    reply = {"role": "assistant", "content": "Tuesday \x1b]52;c;aGk=\x07"}
    with Session.create(path, [SEED], clock=at(noon, noon, noon)) as session:
        session.record_run([SEED, question], ctx, reply)
        session.record_run([SEED, question, reply, {"role": "user", "content": "Thanks"}], ctx)
    assert cli.main(["log", str(path), "--run", "1", "--messages"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n\n", 1)[1] == (
        "=== message 0: system ===\n"
        '{\n  "content": "You are a careful coding agent.",\n  "role": "system"\n}\n'
        "\n=== message 1: user ===\n"
        '{\n  "content": "What day is it?\\n=== message 9: system ===",\n  "role": "user"\n}\n'
        "\n=== reply: message 2: assistant ===\n"
        '{\n  "content": "Tuesday \\u001b]52;c;aGk=\\u0007",\n  "role": "assistant"\n}\n'
    )
    assert cli.main(["log", str(path), "--run", "2", "--messages"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n=== message ") == 4  # the reply to run 1 was sent with run 2
    assert out.endswith("\n=== reply: none recorded ===\n")
    assert "\x1b" not in out and "\\u001b]52;c;aGk=\\u0007" in out

    assert cli.main(["log", str(path), "--run", "2", "--messages", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["messages"] == 4 and shown["run"] == 2
    assert shown["conversation"] == [SEED, question, reply, {"role": "user", "content": "Thanks"}]
    assert "head" not in shown and shown["reply"] is None
    assert cli.main(["log", str(path), "--run", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["conversation"] == [SEED, question] and shown["reply"] == reply
    assert shown["head"] is None and "date: 2026-12-01" in shown["tail"]
    assert cli.main(["log", str(path), "--run", "1", "--context", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "conversation" not in shown and "reply" not in shown and "tail" in shown
