"""``runcontext log`` of a transcript with compactions and elisions: each one in the run list
(the words "compaction" and "elision", how many messages were replaced, tokens before → after,
summary or hard trim), ``--run N --messages`` printing exactly what run N was sent, with a
line in its entry saying later edits replaced part of it, and ``--json`` carrying them."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runcontext.cli import log as cli_log
from runcontext.transcript import Session

MOMENT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SYSTEM = {"role": "system", "content": "Be careful."}
USER = {"role": "user", "content": "Read the logs."}
REPLY = {"role": "assistant", "content": "The logs say X."}
MORE = {"role": "user", "content": "And then?"}
SUMMARY = {"role": "user", "content": "Summary: the logs say X."}
STUB = {"role": "assistant", "content": "[cleared]"}


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "agent.jsonl"
    with Session.create(path, [SYSTEM, USER], clock=lambda: MOMENT) as session:
        session.record_run([SYSTEM, USER], None, REPLY)  # run 1
        session.record_run([SYSTEM, USER, REPLY, MORE], None, REPLY)  # run 2
        session.compact(1, 4, [SUMMARY], tokens_before=5200, tokens_after=900, quality="exact")
        session.elide({2: STUB})
        session.record_run([SYSTEM, SUMMARY, STUB, MORE], None, REPLY)  # run 3
        session.trim(2)
    return path


def run_log(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli_log.register(parser.add_subparsers())
    args = parser.parse_args(["log", *argv])
    status: int = args.handler(args)
    return status


def test_the_list_shows_each_compaction_and_elision(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_log(str(transcript)) == 0
    out = capsys.readouterr().out
    assert (
        "compaction  2026-12-01 09:00:00Z  3 messages replaced (messages 1 to 3) by 1: summary, "
        "tokens 5200 → 900 (exact)\n"
        "elision  2026-12-01 09:00:00Z  1 message replaced by stubs (message 2)\n"
        "run 3  2026-12-01 09:00:00Z  "
    ) in out
    assert (
        "compaction  2026-12-01 09:00:00Z  2 messages replaced (messages 1 to 2) by nothing: "
        "hard trim\nchain  "
    ) in out


def test_run_messages_prints_exactly_what_was_sent(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_log(str(transcript), "--run", "2", "--messages", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["conversation"] == [SYSTEM, USER, REPLY, MORE]
    assert shown["reply"] == REPLY
    assert shown["later_edits"] == {"compaction": 2, "elision": 1}
    assert run_log(str(transcript), "--run", "2", "--messages") == 0
    out = capsys.readouterr().out
    assert (
        "  later    2 compactions and 1 elision recorded after this run replaced part of the "
        "conversation; below is the conversation as this run was sent it\n"
    ) in out
    assert '"content": "Read the logs."' in out and "[cleared]" not in out
    assert run_log(str(transcript), "--run", "3", "--messages", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["conversation"] == [SYSTEM, SUMMARY, STUB, MORE]
    assert shown["reply"] == REPLY


def test_json_carries_the_edits_since_the_run_before(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_log(str(transcript), "--json") == 0
    runs = json.loads(capsys.readouterr().out)
    assert [run["edits"] for run in runs[:2]] == [[], []]
    assert runs[2]["edits"] == [
        {
            "kind": "compaction",
            "time": "2026-12-01T09:00:00Z",
            "start": 1,
            "end": 4,
            "replaced": 3,
            "messages": 1,
            "mode": "summary",
            "tokens": {"before": 5200, "after": 900, "quality": "exact"},
        },
        {"kind": "elision", "time": "2026-12-01T09:00:00Z", "indices": [2]},
    ]


def test_the_reply_of_each_run_follows_its_own_generation(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_log(str(transcript), "--messages", "--json") == 0
    runs = json.loads(capsys.readouterr().out)
    assert [run["reply"] for run in runs] == [REPLY, REPLY, REPLY]


def test_the_page_lists_the_edits_and_each_runs_own_messages(transcript: Path) -> None:
    from runcontext.cli.page import page_data

    with Session.open(transcript) as session:
        runs, edits = session.runs(), session.edits()
        data = page_data(
            "agent.jsonl",
            runs,
            session.messages(),
            chain=session.chain,
            version=2,
            edits=edits,
            sent=session.messages_at,
        )
    assert [(e["run"], e["kind"]) for e in data["events"]] == [
        (2, "compaction"),
        (2, "elision"),
        (3, "compaction"),
    ]
    assert data["events"][0]["text"] == (
        "after run 2: 3 messages replaced (messages 1 to 3) by 1: summary, tokens 5200 → 900 "
        "(exact)"
    )

    def shown(row: list[object]) -> list[object]:
        offset, _first, count, _ = row[7]  # type: ignore[misc]
        return [json.loads(text) for text in data["messages"][offset : offset + count]]

    rows = data["runs"]
    assert [row[7][1:] for row in rows] == [[0, 2, 0], [2, 2, 0], [0, 4, 1]]
    assert shown(rows[1]) == [REPLY, MORE]
    # Run 3 follows the edits: its whole conversation, as sent (the stub, not the reply).
    assert shown(rows[2]) == [SYSTEM, SUMMARY, STUB, MORE]
