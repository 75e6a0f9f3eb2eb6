"""``runcontext transcript``: each error is one line on stderr and exit status 1."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.cli import main  # noqa: E402


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_init_creates_the_schema_and_is_idempotent(
    pg_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        assert run(capsys, "transcript", "init", pg_database) == (
            0,
            "runcontext schema version 1 is installed\n",
            "",
        )


def test_init_refuses_a_newer_schema(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE runcontext_schema_version SET version = 9")
    status, out, err = run(capsys, "transcript", "init", pg_dsn)
    assert (status, out) == (1, "")
    assert err.count("\n") == 1
    assert "schema version 9, newer than this runcontext's (1); upgrade runcontext" in err


def test_init_of_a_server_that_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys, "transcript", "init", f"postgresql://u:hunter2@/db?host={tmp_path}"
    )
    assert (status, out) == (1, "")
    assert err.startswith(
        f"runcontext transcript: postgresql://u@/db?host={tmp_path}: cannot connect to PostgreSQL: "
    )
    assert err.count("\n") == 1 and "hunter2" not in err
