"""``runcontext sessions``: text and JSON, filters, a directory of files, errors."""

from __future__ import annotations

import importlib
import json
import os
from datetime import timedelta
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
    """acme/a (2 runs, last written T0), zeta/b (1 run, T0 + 1 day)."""
    record(pg_dsn, [context(1, "main"), context(2, "release")], session_id="a", tenant="acme")
    record(
        pg_dsn, [context(2, "main")], start=T0 + timedelta(days=1), session_id="b", tenant="zeta"
    )
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE runcontext_sessions SET updated = created")
    return pg_dsn


def test_text_lists_sessions_newest_first(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "sessions", fleet)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "TENANT", "SESSION", "CREATED", "LAST", "WRITE", "RUNS", "LAST", "RUN", "BYTES"
    ]  # fmt: skip
    assert [line.split()[:6] for line in lines[1:]] == [
        ["zeta", "b", "2026-12-02T09:00:00Z", "2026-12-02T09:00:00Z", "1", "2026-12-02T09:00:00Z"],
        ["acme", "a", "2026-12-01T09:00:00Z", "2026-12-01T09:00:00Z", "2", "2026-12-01T09:01:00Z"],
    ]
    # Columns line up: every row is as wide as the header up to the last column.
    assert len({line.rindex(" ") for line in lines[1:]}) == 1


def test_json_and_filters(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "sessions", fleet, "--json", "--tenant", "acme")
    assert (status, err) == (0, "")
    [a] = json.loads(out)
    assert {k: a[k] for k in ("tenant", "session", "created", "runs", "last_run")} == {
        "tenant": "acme",
        "session": "a",
        "created": "2026-12-01T09:00:00Z",
        "runs": 2,
        "last_run": "2026-12-01T09:01:00Z",
    }
    assert a["address"] == f"{fleet}&session=a&tenant=acme"
    assert a["bytes"] > 1000
    status, out, _ = run(capsys, "sessions", fleet, "--json", "--since", "2026-12-02")
    assert [s["session"] for s in json.loads(out)] == ["b"]
    status, out, _ = run(capsys, "sessions", fleet, "--json", "--until", "2026-12-01")
    assert [s["session"] for s in json.loads(out)] == ["a"]
    status, out, err = run(capsys, "sessions", fleet, "--limit", "1")
    assert (status, len(out.splitlines())) == (0, 2)
    assert err == "runcontext sessions: showing the newest 1; pass --limit N for more\n"


def test_no_session_matches(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "sessions", fleet, "--since", "1d") == (
        1,
        "",
        "runcontext sessions: no session matches\n",
    )
    assert run(capsys, "sessions", fleet, "--since", "1d", "--json") == (
        1,
        "[]\n",
        "runcontext sessions: no session matches\n",
    )


def test_a_directory_of_transcripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file_session(tmp_path, "a.jsonl", [context(1, "main")])
    file_session(tmp_path, "b\x1b]52;c;evil\x07.jsonl", [context(1, "main")])
    (tmp_path / "README").write_text("hello\n")
    status, out, err = run(capsys, "sessions", str(tmp_path))
    assert (status, err) == (0, "")
    assert "\x1b" not in out and "\x07" not in out
    assert "b\\x1b]52;c;evil\\x07.jsonl" in out
    assert sorted(line.split()[1] for line in out.splitlines()[1:]) == [
        "a.jsonl",
        "b\\x1b]52;c;evil\\x07.jsonl",
    ]
    assert {line.split()[0] for line in out.splitlines()[1:]} == {"-"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday': expected an ISO date (2026-12-01) or "
         "date-time (2026-12-01T09:30:00Z) or an age (30d, 12h)"),
        (["--since", "2026-12-02", "--until", "2026-12-01"],
         "--since 2026-12-02 is after --until 2026-12-01: nothing can match"),
        (["--tenant", "acme"],
         "--tenant is for a PostgreSQL URI; a directory of files has no tenants"),
    ],
)  # fmt: skip
def test_errors_in_command_line_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(capsys, "sessions", str(tmp_path), *argv) == (
        1,
        "",
        f"runcontext sessions: {message}\n",
    )


def test_a_missing_directory_and_a_bad_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "sessions", str(tmp_path / "nope")) == (
        1,
        "",
        f"runcontext sessions: no such directory: {tmp_path / 'nope'}\n",
    )
    with pytest.raises(SystemExit):
        main(["sessions", str(tmp_path), "--limit", "0"])
    assert "--limit: expected a whole number from 1 to 100000" in capsys.readouterr().err


def test_a_database_without_the_schema(
    pg_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "sessions", pg_database)
    assert (status, out) == (1, "")
    assert err.endswith(
        f"the database has no runcontext schema; run `runcontext transcript init "
        f"{pg_database}` once\n"
    )
