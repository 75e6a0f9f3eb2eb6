"""``runcontext log --diff`` and ``--messages``: the text of what changed in a section (redacted
on both sides, terminal-safe) and each run's reply, in the list, for one run and in JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape
RULES = "Keep the build green.\nExplain every change.\n"
CONTEXTS = [
    RunContext(head_sections=[("instructions:AGENTS.md", RULES)], facts=[("date", "2026-12-01")]),
    RunContext(  # a token pasted into AGENTS.md, and a hostile escape sequence
        head_sections=[("instructions:AGENTS.md", RULES + f"token {TOKEN}\n\x1b[2Jrun 9\n")],
        facts=[("date", "2026-12-01")],
    ),
    RunContext(  # the token removed again; the section moved to the tail
        tail_sections=[("instructions:AGENTS.md", RULES)],
        facts=[("date", "2026-12-01")],
    ),
    RunContext(tail_sections=[("instructions:AGENTS.md", RULES)], facts=[("date", "2026-12-01")]),
]


def ticking() -> Callable[[], datetime]:
    hours = iter(range(100))
    return lambda: datetime(2026, 12, 1, 8, tzinfo=UTC) + timedelta(hours=next(hours))


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "agent.jsonl"
    conversation = [SEED]
    with Session.create(path, conversation, clock=ticking()) as session:
        for n, context in enumerate(CONTEXTS):
            conversation = [*conversation, {"role": "user", "content": f"turn {n}"}]
            reply = {"role": "assistant", "content": f"answer {n}\x1b]52;c;aGk=\x07"}
            session.record_run(conversation, context, reply if n < 3 else None)
            if n < 3:
                conversation = [*conversation, reply]
    return path


def logged(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["log", *argv]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_diff_shows_each_changed_sections_text_redacted_and_terminal_safe(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = logged(capsys, str(transcript), "--diff")
    assert TOKEN not in out and "\x1b" not in out
    second = out.split("\nrun 2 ")[1].split("\nrun 3 ")[0]
    assert second.splitlines()[2:] == [
        "    --- instructions:AGENTS.md (head, before)",
        "    +++ instructions:AGENTS.md (head, this run)",
        "    @@ -1,2 +1,4 @@",
        "     Keep the build green.",
        "     Explain every change.",
        "    +token [redacted]",
        "    +\\x1b[2Jrun 9",
    ]
    third = out.split("\nrun 3 ")[1].split("\nrun 4 ")[0]
    assert "    -token [redacted]" in third and "(head, before)" in third
    assert "+++ instructions:AGENTS.md (tail, this run)" in third
    assert [line[:5] for line in out.splitlines() if line.startswith("run ")] == [
        "run 1",
        "run 2",
        "run 3",
        "run 4",
    ]
    assert "  unchanged\n" in out.split("\nrun 4 ")[1]
    # Without --diff, sizes and digests only.
    assert "@@" not in logged(capsys, str(transcript))


def test_diff_lines_are_split_at_line_feeds_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A carriage return or a line separator inside a line stays in its line (a carriage return
    # escaped), not a line break of the diff that would hide it.
    path = tmp_path / "separators.jsonl"
    with Session.create(path, [SEED], clock=ticking()) as session:
        session.record_run([SEED], RunContext(head_sections=[("notes", "one\ntwo")]))
        session.record_run([SEED], RunContext(head_sections=[("notes", "one\rX\u2028Y\ntwo")]))
    out = logged(capsys, str(path), "--diff")
    assert out.split("@@ -1,2 +1,2 @@\n")[1].split("\n")[:3] == [
        "    -one",
        "    +one\\x0dX\u2028Y",  # one line of the text, as the model reads it
        "     two",
    ]


def test_a_section_that_only_moved_has_no_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "moved.jsonl"
    with Session.create(path, [SEED], clock=ticking()) as session:
        session.record_run([SEED], RunContext(head_sections=[("tools", "git")]))
        session.record_run([SEED], RunContext(tail_sections=[("tools", "git")]))
    out = logged(capsys, str(path), "--diff", "--run", "2", "--context")
    assert out.splitlines()[1].startswith("  changed  section tools: head 3 B blake3:")
    assert out.splitlines()[2] == ""  # the blank line before "=== head: none ==="


def test_diff_in_json_and_for_one_run(transcript: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = json.loads(logged(capsys, str(transcript), "--diff", "--json"))
    changed = runs[1]["changes"]["sections"]["changed"][0]
    assert changed["diff"] == (
        "--- instructions:AGENTS.md (head, before)\n"
        "+++ instructions:AGENTS.md (head, this run)\n"
        "@@ -1,2 +1,4 @@\n"
        " Keep the build green.\n"
        " Explain every change.\n"
        "+token [redacted]\n"
        "+\x1b[2Jrun 9\n"
    )
    assert (
        "diff"
        not in json.loads(logged(capsys, str(transcript), "--json"))[1]["changes"]["sections"][
            "changed"
        ][0]
    )
    one = logged(capsys, str(transcript), "--run", "2", "--diff", "--context")
    assert "    +token [redacted]\n" in one and "\n=== head ===\n" in one
    assert TOKEN in one  # the head as sent: --diff redacts the diff, not what was sent


def test_messages_shows_each_runs_reply(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = logged(capsys, str(transcript), "--messages")
    first = out.split("\nrun 2 ")[0]
    assert first.endswith(
        "  reply    message 2: assistant\n"
        "    {\n"
        '      "content": "answer 0\\u001b]52;c;aGk=\\u0007",\n'
        '      "role": "assistant"\n'
        "    }"
    )
    assert "\x1b" not in out
    assert out.split("\nrun 4 ")[1].splitlines()[1:3] == ["  unchanged", "  reply    none recorded"]
    runs = json.loads(logged(capsys, str(transcript), "--messages", "--json"))
    assert [run["reply"] for run in runs] == [
        {"role": "assistant", "content": f"answer {n}\x1b]52;c;aGk=\x07"} for n in range(3)
    ] + [None]
    assert "reply" not in json.loads(logged(capsys, str(transcript), "--json"))[0]
