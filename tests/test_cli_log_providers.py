"""``runcontext log`` filters on a transcript built by the library's own providers: the clock's
``date: 2026-11-22 (Sunday)`` and the instructions' ``instructions:sub/AGENTS.md``, matched by
what a person types (``--date 2026-11-22``, ``--section AGENTS.md``). When nothing matches,
stderr names what does exist and the status is 1, as grep's."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.providers.builder import ContextBuilder
from runcontext.providers.clock import ClockProvider
from runcontext.providers.instructions import InstructionsProvider
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}
# Recorded (UTC) and the agent's local clock: run 3 is recorded late on the 22nd in UTC, when
# the client's clock (UTC+9) already says the 23rd.
RECORDED = [datetime(2026, 11, 22, 9, tzinfo=UTC) + timedelta(hours=h) for h in (0, 1, 14, 24)]
LOCAL = [moment + timedelta(hours=9) for moment in RECORDED]


def at(moments: list[datetime]) -> Callable[[], datetime]:
    times = iter(moments)
    return lambda: next(times)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "sub").mkdir()
    (repo / "AGENTS.md").write_text("Keep the build green.\n")
    (repo / "sub" / "AGENTS.md").write_text("Run the sub tests.\n")
    path = tmp_path / "agent.jsonl"
    edits = {1: ("sub/AGENTS.md", "Run the sub tests twice.\n"), 3: ("AGENTS.md", "Be kind.\n")}
    conversation = [SEED]
    with Session.create(path, conversation, clock=at([RECORDED[0], *RECORDED])) as session:
        for n, local in enumerate(LOCAL):
            if n in edits:
                (repo / edits[n][0]).write_text(edits[n][1])
            providers = [
                ClockProvider(now=lambda local=local: local),
                InstructionsProvider(repo / "sub"),
            ]
            context, diagnostics = ContextBuilder(providers).build()
            assert diagnostics == ()
            conversation = [*conversation, {"role": "user", "content": f"turn {n}"}]
            session.record_run(conversation, context, {"role": "assistant", "content": "ok"})
            conversation = [*conversation, {"role": "assistant", "content": "ok"}]
    return path


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[int]:
    assert cli.main(["log", *argv, "--json"]) == 0
    return [r["run"] for r in json.loads(capsys.readouterr().out)]


def test_date_matches_the_day_of_the_clock_providers_date_fact(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    assert listed(capsys, path, "--date", "2026-11-22") == [1, 2]
    assert listed(capsys, path, "--date", "2026-11-23") == [3, 4]  # run 3 told the 23rd
    assert listed(capsys, path, "--date", "2026-11-22", "--date", "2026-11-23") == [1, 2, 3, 4]
    assert listed(capsys, path, "--date", "2026-11-23", "--since", "2026-11-23") == [4]
    assert listed(capsys, path, "--fact", "date=2026-11-23 (Monday)") == [3, 4]  # exact


def test_the_told_date_is_shown_only_where_its_day_differs(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["log", str(transcript)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert [head.split("  blake3:")[0] for head in heads] == [
        "run 1  2026-11-22 09:00:00Z",
        "run 2  2026-11-22 10:00:00Z",
        "run 3  2026-11-22 23:00:00Z  told 2026-11-23 (Monday)",
        "run 4  2026-11-23 09:00:00Z",
    ]


def test_section_matches_the_name_after_the_providers_prefix_or_a_glob(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    # Run 1 adds both; run 2 changes sub/AGENTS.md; run 4 the root's AGENTS.md.
    assert listed(capsys, path, "--section", "AGENTS.md") == [1, 2, 4]
    assert listed(capsys, path, "--section", "sub/AGENTS.md") == [1, 2]
    assert listed(capsys, path, "--section", "instructions:AGENTS.md") == [1, 4]
    assert listed(capsys, path, "--section", "instructions:*") == [1, 2, 4]
    assert listed(capsys, path, "--section", "*.md", "--since", "2026-11-22T10:00:00Z") == [2, 4]
    assert listed(capsys, path, "--section", "AGENTS.md", "--last", "2") == [2, 4]


def test_nothing_matched_names_what_exists_and_exits_1(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    argv = ["--fact", "date=2026-11-22", "--date", "2026-11-30", "--section", "CLAUDE.md"]
    assert cli.main(["log", path, *argv]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("0 of 4 runs match\nchain  blake3:")
    assert captured.err == (
        "runcontext log: no run matches: none of the 4 runs passes every filter given\n"
        "  told dates (--date): 2026-11-22, 2026-11-23\n"
        "  values of fact date (--fact): 2026-11-22 (Sunday), 2026-11-23 (Monday)\n"
        "  section names (--section): instructions:AGENTS.md, instructions:sub/AGENTS.md\n"
    )
    assert cli.main(["log", path, "--since", "2027-01-01", "--fact", "ticket=RC-1", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "[]\n"  # JSON keeps its shape
    assert captured.err == (
        "runcontext log: no run matches: none of the 4 runs passes every filter given\n"
        "  recorded (--since, --until): from 2026-11-22 09:00:00Z to 2026-11-23 09:00:00Z\n"
        "  no run has a fact ticket; the facts are: date\n"
    )


def test_the_values_named_are_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "long.jsonl"
    start = datetime(2026, 1, 1, 12, tzinfo=UTC)
    with Session.create(path, [SEED], clock=lambda: start) as session:
        for day in range(25):
            told = (start + timedelta(days=day)).date().isoformat()
            session.record_run([SEED], RunContext(facts=[("date", told), ("x", "\x1b[2J")]))
    assert cli.main(["log", str(path), "--date", "2025-01-01", "--fact", "x=1"]) == 1
    err = capsys.readouterr().err
    days = ", ".join(f"2026-01-{day:02d}" for day in range(1, 21))
    assert f"  told dates (--date): {days} (and 5 more)\n" in err
    assert "  values of fact x (--fact): \\x1b[2J\n" in err  # made terminal-safe


def test_a_transcript_without_runs_matches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    Session.create(path, [SEED]).close()
    assert cli.main(["log", str(path), "--date", "2026-11-22"]) == 1
    assert capsys.readouterr().err == (
        "runcontext log: no run matches: the transcript has no runs\n"
    )
    assert cli.main(["log", str(path)]) == 0  # no filter: nothing was asked for
