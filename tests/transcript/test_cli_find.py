"""``runcontext find``: text and JSON, every criterion, the command that shows a run, errors."""

from __future__ import annotations

import importlib
import json
import os
import shlex
from pathlib import Path

import pytest
from fleet_data import T0, context, file_session, record

from runcontext.cli import main

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def fleet(pg_dsn: str) -> str:
    record(pg_dsn, [context(1, "main"), context(2, "release")], session_id="a", tenant="acme")
    record(pg_dsn, [context(2, "release")], session_id="b")
    return pg_dsn


def test_text_names_each_run_and_the_command_that_shows_it(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "find", fleet, "--fact", "branch=release")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"acme  a  run 2  2026-12-01T09:01:00Z  runcontext log "
        f"{shlex.quote(fleet + '&session=a&tenant=acme')} --run 2",
        f"default  b  run 1  2026-12-01T09:00:00Z  runcontext log "
        f"{shlex.quote(fleet + '&session=b')} --run 1",
    ]
    # The command shows that run.
    command = shlex.split(out.splitlines()[0].split("  ", 4)[4])
    status, shown, _ = run(capsys, *command[1:])
    assert status == 0
    assert "branch: release" in shown


def test_json_and_each_criterion(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    v1 = context(1, "x").sections[0].digest

    def found(*argv: str) -> list[tuple[str, str, int]]:
        status, out, _ = run(capsys, "find", fleet, "--json", *argv)
        assert status == 0
        return [(r["tenant"], r["session"], r["run"]) for r in json.loads(out)]

    assert found("--digest", v1) == [("acme", "a", 1)]
    assert found("--section", "AGENTS.md", "--tenant", "default") == [("default", "b", 1)]
    assert found("--fact", "branch=release", "--session", "a") == [("acme", "a", 2)]
    assert found("--since", "2026-12-01T09:00:30Z") == [("acme", "a", 2)]
    # Newest first; runs recorded at the same moment by tenant, then session.
    assert found("--until", "2026-12-01T09:00:00Z") == [("acme", "a", 1), ("default", "b", 1)]
    status, out, _ = run(capsys, "find", fleet, "--json", "--digest", v1)
    assert status == 0
    [one] = json.loads(out)
    assert one["time"] == "2026-12-01T09:00:00Z"
    assert one["digest"] == context(1, "main").digest
    assert one["command"] == f"runcontext log {shlex.quote(one['address'])} --run 1"


def test_no_run_matches(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "find", fleet, "--fact", "branch=nope") == (
        1,
        "",
        "runcontext find: no run matches\n",
    )


def test_a_directory_of_transcripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file_session(tmp_path, "t.jsonl", [context(1, "main"), context(2, "release")], start=T0)
    status, out, err = run(capsys, "find", str(tmp_path), "--section", "AGENTS.md", "--json")
    assert (status, err) == (0, "")
    assert [(r["tenant"], r["session"], r["run"]) for r in json.loads(out)] == [
        (None, "t.jsonl", 2),
        (None, "t.jsonl", 1),
    ]
    status, out, _ = run(capsys, "find", str(tmp_path / "t.jsonl"), "--fact", "branch=main")
    assert (
        out == f"t.jsonl  run 1  2026-12-01T09:00:00Z  runcontext log {tmp_path}/t.jsonl --run 1\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fact", "branch"], "--fact 'branch': expected NAME=VALUE (such as branch=release)"),
        (["--fact", "=x"], "--fact '=x': expected NAME=VALUE (such as branch=release)"),
        (["--fact", "b=1", "--fact", "b=2"],
         "--fact b= is given twice with different values ('1', '2'): no run is told both"),
        (["--session", "s"], "--session is for a PostgreSQL URI; name a transcript file instead"),
        (["--until", "5x"], "--until '5x': expected an ISO date (2026-12-01) or date-time "
         "(2026-12-01T09:30:00Z) or an age (30d, 12h)"),
    ],
)  # fmt: skip
def test_errors_in_command_line_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(capsys, "find", str(tmp_path), *argv) == (1, "", f"runcontext find: {message}\n")


def test_a_uri_and_an_argument_that_disagree(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "find", fleet + "&tenant=acme", "--tenant", "zeta")
    assert status == 1
    assert err == (
        "runcontext find: --tenant 'zeta' differs from the URI's tenant='acme'; give it once\n"
    )
