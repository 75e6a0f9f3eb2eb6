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
            "runcontext schema version 2 is installed\n",
            "",
        )


def test_init_refuses_a_newer_schema(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE runcontext_schema_version SET version = 9")
    status, out, err = run(capsys, "transcript", "init", pg_dsn)
    assert (status, out) == (1, "")
    assert err.count("\n") == 1
    assert "schema version 9, newer than this runcontext's (2); upgrade runcontext" in err


def test_init_of_a_server_that_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys, "transcript", "init", f"postgresql://u:hunter2@/db?host={tmp_path}"
    )
    assert (status, out) == (1, "")
    assert err.startswith(
        f"runcontext transcript init: postgresql://u@/db?host={tmp_path}: cannot connect to "
        "PostgreSQL: "
    )
    assert err.count("\n") == 1 and "hunter2" not in err


def make_file_session(path: Path) -> list[bytes]:
    from runcontext import RunContext
    from runcontext.transcript.session import Session

    context = RunContext(head_sections=[("AGENTS.md", "Keep it green.\n" * 40)], facts=[("d", "1")])
    conversation = [{"role": "system", "content": "You are careful."}]
    with Session.create(path, conversation) as session:
        for n in range(3):
            conversation.append({"role": "user", "content": f"step {n}"})
            reply = {"role": "assistant", "content": f"done {n}"}
            session.record_run(conversation, context, reply)
            conversation.append(reply)
    return path.read_bytes().splitlines()


def test_copy_file_to_postgres_and_back_is_byte_identical(
    tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "agent.jsonl"
    lines = make_file_session(source)
    target = f"{pg_dsn}&session=agent-1&tenant=acme"
    status, out, err = run(capsys, "transcript", "copy", str(source), target)
    assert (status, err) == (0, "")
    assert out.startswith(f"copied {len(lines)} records from {source} to postgresql://")
    back = tmp_path / "back.jsonl"
    assert run(capsys, "transcript", "copy", target, str(back))[0] == 0
    assert back.read_bytes() == source.read_bytes()
    # The --session/--tenant form names the same session.
    again = tmp_path / "again.jsonl"
    assert (
        run(
            capsys,
            "transcript",
            "copy",
            pg_dsn,
            str(again),
            "--session",
            "agent-1",
            "--tenant",
            "acme",
        )[0]
        == 0
    )
    assert again.read_bytes() == source.read_bytes()
    status, out, err = run(capsys, "log", target)
    assert status == 0 and err == ""
    assert out.count("\nrun ") + out.startswith("run ") == 3
    assert out.splitlines()[-2].startswith("chain  blake3:")
    assert (
        out.splitlines()[-1]
        == f"anchored  {len(lines)} records: the session row holds the same chain"
    )


def test_copy_brings_an_earlier_copy_up_to_date_and_refuses_any_other_destination(
    tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "agent.jsonl"
    lines = make_file_session(source)
    target = f"{pg_dsn}&session=agent-1"
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_bytes(b"".join(line + b"\n" for line in lines[:4]))  # an earlier state
    assert run(capsys, "transcript", "copy", str(earlier), target)[0] == 0
    status, out, err = run(capsys, "transcript", "copy", str(source), target)
    assert (status, err) == (0, "")
    assert out.startswith(f"appended {len(lines) - 4} records from {source} to postgresql://")
    assert out.endswith(", which held the first 4\n")
    status, out, err = run(capsys, "transcript", "copy", str(source), target)
    assert (status, err) == (0, "")
    assert out.endswith(f" already holds the {len(lines)} records of {source}: nothing to copy\n")
    back = tmp_path / "back.jsonl"
    assert run(capsys, "transcript", "copy", target, str(back))[0] == 0
    assert back.read_bytes() == source.read_bytes()
    status, out, _ = run(capsys, "log", target)
    assert status == 0 and out.endswith(
        f"anchored  {len(lines)} records: the session row holds the same chain\n"
    )
    other = tmp_path / "other.jsonl"
    make_file_session(other)  # the same messages, recorded at other times: not a copy
    status, out, err = run(capsys, "transcript", "copy", target, str(other))
    assert (status, out) == (1, "")
    assert err == (
        f"runcontext transcript copy: {other} already exists and is not a copy of "
        f"{target}: its record 1 differs; nothing was written: choose another DST\n"
    )
    assert other.read_bytes() != source.read_bytes()


def test_copy_refuses_a_damaged_source(
    tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "agent.jsonl"
    lines = make_file_session(source)
    at = next(i for i, line in enumerate(lines) if b"step 0" in line)
    lines[at] = lines[at].replace(b"step 0", b"step 9")
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    status, out, err = run(capsys, "transcript", "copy", str(source), f"{pg_dsn}&session=x")
    assert (status, out) == (1, "")
    assert err.count("\n") == 1 and f"{source}:{at + 1}:" in err
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM runcontext_sessions").fetchone() == (0,)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["log", "{dsn}&session=nope"], "no session 'nope' for tenant 'default'\n"),
        (["log", "{dsn}"], "no session id; pass --session ID or add ?session=ID to the URI"),
        (["log", "{dsn}&session=a", "--session", "b"], "differs from the URI's session='a'"),
        (["log", "{file}", "--session", "b"], "--session and --tenant are for a PostgreSQL URI"),
        (["log", "{db}&session=a"], "no runcontext schema; run `runcontext transcript init"),
        (["transcript", "copy", "{file}", "{dsn}"], "runcontext transcript copy: no such file: "),
        (["transcript", "copy", "s3://bucket/x", "{dsn}"], "unknown store scheme 's3'"),
    ],
)
def test_bad_input_is_one_line(
    argv: list[str],
    message: str,
    tmp_path: Path,
    pg_dsn: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(pg_dsn)
    name = f"rc_bare_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # a database without the schema
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    db = urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))
    filled = [a.format(dsn=pg_dsn, db=db, file=tmp_path / "missing.jsonl") for a in argv]
    try:
        status, out, err = run(capsys, *filled)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())
    assert (status, out) == (1, "")
    assert err.count("\n") == 1, err
    assert message in err
    # The command line's terms: flags, not a program's arguments or methods.
    assert not any(advice in err for advice in ("Session.", "session_id", "[Errno", "DSN")), err
