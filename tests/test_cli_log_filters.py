"""``runcontext log`` filters: --since/--until (recording time), --fact NAME=VALUE, --section."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}


def context(date: str, agents: str, *, ci: str | None = None) -> RunContext:
    tail = [] if ci is None else [("ci", ci)]
    return RunContext(
        head_sections=[("AGENTS.md", agents)], facts=[("date", date)], tail_sections=tail
    )


# Recorded 2026-11-30 23:00, 2026-12-01 08:00, 2026-12-01 17:00, 2026-12-02 08:00 (UTC).
TIMES = [datetime(2026, 11, 30, 23, tzinfo=UTC) + timedelta(hours=h) for h in (0, 9, 18, 33)]
CONTEXTS = [
    context("2026-12-01", "v1"),  # told the next day: a client in UTC+1 or later
    context("2026-12-01", "v1", ci="red"),
    context("2026-12-01", "v2", ci="red"),
    context("2026-12-02", "v2", ci="green"),
]


def clock() -> Callable[[], datetime]:
    times = iter([TIMES[0] - timedelta(minutes=1), *TIMES])
    return lambda: next(times)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "agent.jsonl"
    conversation = [SEED]
    with Session.create(path, conversation, clock=clock()) as session:
        for n, ctx in enumerate(CONTEXTS):
            conversation = [*conversation, {"role": "user", "content": f"turn {n}"}]
            session.record_run(conversation, ctx, {"role": "assistant", "content": "ok"})
            conversation = [*conversation, {"role": "assistant", "content": "ok"}]
    return path


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[int]:
    status = cli.main(["log", *argv, "--json"])
    runs = [r["run"] for r in json.loads(capsys.readouterr().out)]
    assert status == (0 if runs else 1)  # as grep: nothing matched is status 1
    return runs


def test_since_and_until_select_by_recording_time(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    assert listed(capsys, path, "--since", "2026-12-01") == [2, 3, 4]
    assert listed(capsys, path, "--until", "2026-12-01") == [1, 2, 3]  # the whole day
    assert listed(capsys, path, "--since", "2026-12-01", "--until", "2026-12-01") == [2, 3]
    assert listed(capsys, path, "--since", "2026-12-01T12:00:00Z") == [3, 4]
    assert listed(capsys, path, "--until", "2026-12-01T08:00:00") == [1, 2]  # naive is UTC
    assert listed(capsys, path, "--since", "2026-12-01T09:00:00+01:00") == [2, 3, 4]


def test_fact_selects_what_the_agent_was_told(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    # Run 1 was recorded on 30 November but told 1 December: --fact finds it, --since not.
    assert listed(capsys, path, "--fact", "date=2026-12-01") == [1, 2, 3]
    assert listed(capsys, path, "--fact", "date=2026-12-01", "--since", "2026-12-01") == [2, 3]
    assert listed(capsys, path, "--fact", "date=2026-12-02", "--fact", "date=2026-12-01") == []
    assert listed(capsys, path, "--fact", "ticket=RC-1") == []


def test_section_selects_runs_whose_section_changed(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(transcript)
    assert listed(capsys, path, "--section", "ci") == [2, 4]  # added in 2, changed in 4
    assert listed(capsys, path, "--section", "AGENTS.md") == [1, 3]  # added in 1, changed in 3
    assert listed(capsys, path, "--section", "ci", "--section", "AGENTS.md") == [1, 2, 3, 4]
    # Changes are against the run before in the transcript, whether it is listed or not.
    assert cli.main(["log", path, "--section", "ci", "--since", "2026-12-02"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run 4  2026-12-02 08:00:00Z  ")
    assert "  changed  section ci: tail 3 B blake3:" in out and "→ tail 5 B blake3:" in out
    assert "\n1 of 4 runs match\nchain  blake3:" in out


def test_text_output_says_how_many_runs_match(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["log", str(transcript), "--fact", "date=1999-01-01"]) == 1
    assert capsys.readouterr().out.startswith("0 of 4 runs match\nchain  blake3:")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--since", "yesterday"], "--since 'yesterday': expected an ISO date (2026-12-01) or "),
        (["--until", "2026-13-01"], "--until '2026-13-01': expected an ISO date"),
        (["--fact", "date"], "--fact 'date': expected NAME=VALUE, such as --fact branch="),
        (["--fact", "=x"], "--fact '=x': expected NAME=VALUE"),
        (
            ["--since", "2026-12-02", "--until", "2026-12-01"],
            "--since 2026-12-02 is after --until 2026-12-01: no run can match",
        ),
        (
            ["--run", "2", "--section", "ci"],
            "--since, --until, --date, --fact, --section and --last select runs to list; "
            "--run N shows one run: use one or the other",
        ),
        (["--run", "2", "--last", "1"], "--since, --until, --date, --fact, --section and --last"),
        (["--context"], "--context shows one run's head and tail: pass --run N too"),
        (["--date", "2026-12"], "--date '2026-12': expected a day as YYYY-MM-DD, such as --d"),
        (["--date", "2026-02-30"], "--date '2026-02-30': expected a day as YYYY-MM-DD"),
        (["--last", "0"], "--last 0: expected a number of runs, at least 1"),
        (["--section", ""], "--section '': expected a section name or a glob"),
        (["--max-line-bytes", "0"], "--max-line-bytes 0: expected at least 1"),
    ],
)
def test_bad_filters_are_one_line_errors(
    transcript: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    assert cli.main(["log", str(transcript), *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"runcontext log: {error}") and err.count("\n") == 1
