"""A PostgreSQL session altered outside runcontext (by hand, a bad restore, tampering) is refused
with a TranscriptError naming the session and the record, never read past or appended to."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from chained import message

# Without psycopg these tests skip locally; in CI its absence is an error, never a skip.
psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext import RunContext, canonical_json  # noqa: E402
from runcontext.cli import main  # noqa: E402
from runcontext.transcript.async_session import AsyncSession  # noqa: E402
from runcontext.transcript.errors import (  # noqa: E402
    TranscriptDigestError,
    TranscriptFormatError,
)
from runcontext.transcript.postgres import PostgresStore, init_schema  # noqa: E402
from runcontext.transcript.session import Session  # noqa: E402
from runcontext.transcript.store import read_all  # noqa: E402

CONTEXT = RunContext(head_sections=[("AGENTS.md", "Keep the build green.\n")], facts=[("d", "1")])


def query(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql.encode(), params)
        return cursor.fetchall() if cursor.description else []


def record(dsn: str, runs: int) -> list[dict[str, Any]]:
    """A session ``s`` of ``runs`` runs: records 1-2 (header, seed), then 3-6 for run 1 (a
    message, the section, the run-context, the reply) and three for each later run."""
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(PostgresStore(dsn, "s"), conversation) as session:
        for n in range(runs):
            conversation.append({"role": "user", "content": f"step {n}"})
            reply = {"role": "assistant", "content": f"done {n}"}
            session.record_run(conversation, CONTEXT, reply)
            conversation.append(reply)
    return conversation


def rows(dsn: str) -> list[tuple[Any, ...]]:
    return query(dsn, "SELECT seq, type FROM runcontext_records ORDER BY seq")


def session_row(dsn: str) -> tuple[Any, ...]:
    return query(dsn, "SELECT records, chain FROM runcontext_sessions")[0]


def chain_at(dsn: str, seq: int) -> str:
    line = query(dsn, "SELECT line FROM runcontext_records WHERE seq = %s", seq)[0][0]
    return str(json.loads(bytes(line))["chain"])


# -- what is read back must be UTF-8 ------------------------------------------------------------


def test_a_section_body_that_is_not_utf8_is_refused_naming_its_record(pg_dsn: str) -> None:
    record(pg_dsn, 1)
    query(pg_dsn, "UPDATE runcontext_sections SET text = '\\xff'::bytea || text")
    with pytest.raises(TranscriptFormatError) as caught:
        Session.open(pg_dsn, session_id="s")
    error = caught.value
    assert (error.kind, error.line) == ("not-json", 4)
    assert error.file.endswith("session=s")
    assert str(error) == (
        f"{error.file}:4: not JSON: invalid UTF-8 (byte 0 of the section body stored for "
        f"{query(pg_dsn, 'SELECT digest FROM runcontext_sections')[0][0]})"
    )
    with PostgresStore(pg_dsn, "s") as store, pytest.raises(TranscriptFormatError, match=":4: "):
        read_all(store)


@pytest.mark.parametrize("seq", [2, 4], ids=["a message", "a section without its body"])
def test_a_record_that_is_not_utf8_is_refused_naming_it(pg_dsn: str, seq: int) -> None:
    record(pg_dsn, 1)
    query(
        pg_dsn,
        "UPDATE runcontext_records SET line = overlay(line placing '\\xff'::bytea from 30)"
        " WHERE seq = %s",
        seq,
    )
    with pytest.raises(TranscriptFormatError, match=rf"session=s:{seq}: not JSON: invalid UTF-8"):
        Session.open(pg_dsn, session_id="s")


@pytest.mark.parametrize("seq", [4, 6], ids=["a section", "a message"])
def test_an_edited_size_column_does_not_let_a_line_past_the_cap(pg_dsn: str, seq: int) -> None:
    big = "x" * 5000
    context = RunContext(head_sections=[("AGENTS.md", big if seq == 4 else "small")])
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(PostgresStore(pg_dsn, "s"), conversation) as session:
        conversation.append({"role": "user", "content": "go"})
        reply = {"role": "assistant", "content": big if seq == 6 else "ok"}
        session.record_run(conversation, context, reply)
    query(pg_dsn, "UPDATE runcontext_records SET size = 10")
    with (
        PostgresStore(pg_dsn, "s", max_line_bytes=4096) as store,
        pytest.raises(
            TranscriptFormatError,
            match=rf"session=s:{seq}: record of 5\d\d\d bytes exceeds the limit of 4096",
        ),
    ):
        read_all(store)


# -- the session row and the records must agree -------------------------------------------------


def test_a_deleted_tail_is_refused_on_open_and_never_appended_after(pg_dsn: str) -> None:
    record(pg_dsn, 2)
    before = session_row(pg_dsn)
    assert before[0] == 9
    query(pg_dsn, "DELETE FROM runcontext_records WHERE seq > 6")  # the last run's rows
    message = (
        r"session=s:7: the session row counts 9 records, but the last one stored is record 6 "
        r"\(records 7 to 9 are missing: deleted by hand or by a partial restore\)"
    )
    with pytest.raises(TranscriptDigestError, match=message) as caught:
        Session.open(pg_dsn, session_id="s")
    assert (caught.value.kind, caught.value.line) == ("anchor", 7)
    # The readers that list or copy it refuse it too (no "anchored 9 records" over 6).
    with PostgresStore(pg_dsn, "s") as store, pytest.raises(TranscriptDigestError, match=message):
        read_all(store)
    assert [seq for seq, _ in rows(pg_dsn)] == [1, 2, 3, 4, 5, 6]
    assert session_row(pg_dsn) == before


def test_log_copy_and_async_open_refuse_a_deleted_tail(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(pg_dsn, 2)
    query(pg_dsn, "DELETE FROM runcontext_records WHERE seq > 6")
    message = "the session row counts 9 records, but the last one stored is record 6"
    for argv in (
        ["log", f"{pg_dsn}&session=s"],
        ["transcript", "copy", f"{pg_dsn}&session=s", str(tmp_path / "copy.jsonl")],
    ):
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.count("\n") == 1 and message in captured.err
    assert not (tmp_path / "copy.jsonl").exists()
    with pytest.raises(TranscriptDigestError, match=message):
        asyncio.run(AsyncSession.open(pg_dsn, session_id="s"))


def test_a_writer_open_before_the_tail_was_deleted_refuses_to_append(pg_dsn: str) -> None:
    conversation = record(pg_dsn, 2)
    with Session.open(pg_dsn, session_id="s") as session:
        query(pg_dsn, "DELETE FROM runcontext_records WHERE seq > 6")
        conversation.append({"role": "user", "content": "again"})
        with pytest.raises(
            TranscriptDigestError,
            match=r"session=s:7: the session row counts 9 records, but the last one stored is "
            r"record 6",
        ):
            session.record_run(conversation, CONTEXT, {"role": "assistant", "content": "ok"})
    assert [seq for seq, _ in rows(pg_dsn)] == [1, 2, 3, 4, 5, 6]
    assert session_row(pg_dsn)[0] == 9


def test_a_writer_that_read_records_since_deleted_refuses_to_append(pg_dsn: str) -> None:
    """The tail deleted and the row set to match by hand: the store agrees with itself, but
    this writer read records that are gone, and would chain onto them."""
    conversation = record(pg_dsn, 2)
    with Session.open(pg_dsn, session_id="s") as session:
        query(pg_dsn, "DELETE FROM runcontext_records WHERE seq > 6")
        query(pg_dsn, "UPDATE runcontext_sessions SET records = 6, chain = %s", chain_at(pg_dsn, 6))
        conversation.append({"role": "user", "content": "again"})
        with pytest.raises(
            TranscriptDigestError,
            match=r"session=s:7: this session has read 9 records, but only 6 are stored: records "
            r"were deleted since it read them; reopen the session",
        ):
            session.record_run(conversation, CONTEXT, {"role": "assistant", "content": "ok"})
    assert [seq for seq, _ in rows(pg_dsn)] == [1, 2, 3, 4, 5, 6]


def test_the_write_itself_refuses_to_leave_a_gap(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with the row checked against the records switched off, the write takes the next
    seq from the last record stored and the update of the row refuses the difference."""
    record(pg_dsn, 2)
    query(pg_dsn, "DELETE FROM runcontext_records WHERE seq > 6")
    monkeypatch.setattr(PostgresStore, "_check_anchor", lambda *_: None)
    line = canonical_json(message(6, "again") | {"chain": chain_at(pg_dsn, 6)})
    with (
        PostgresStore(pg_dsn, "s") as store,
        pytest.raises(
            TranscriptDigestError,
            match=r"session=s:7: the session row does not count the 6 records stored before "
            r"this write; nothing was written",
        ),
    ):
        store.append([line])
    assert [seq for seq, _ in rows(pg_dsn)] == [1, 2, 3, 4, 5, 6]
    assert session_row(pg_dsn)[0] == 9


def test_a_session_whose_records_were_all_deleted_is_refused(pg_dsn: str) -> None:
    record(pg_dsn, 1)
    query(pg_dsn, "DELETE FROM runcontext_records")
    with pytest.raises(
        TranscriptDigestError,
        match=r"session=s:1: the session row counts 6 records, but none is stored",
    ):
        Session.open(pg_dsn, session_id="s")


def test_records_beyond_the_rows_count_are_refused(pg_dsn: str) -> None:
    """As a write whose session-row update was lost would leave them."""
    record(pg_dsn, 2)
    query(pg_dsn, "UPDATE runcontext_sessions SET records = 6, chain = %s", chain_at(pg_dsn, 6))
    message = (
        r"session=s:7: the session row counts 6 records, but records 7 to 9 are stored after "
        r"them"
    )
    with pytest.raises(TranscriptDigestError, match=message):
        Session.open(pg_dsn, session_id="s")
    with PostgresStore(pg_dsn, "s") as store, pytest.raises(TranscriptDigestError, match=message):
        store.append([b"{}"])
    assert len(rows(pg_dsn)) == 9


def test_a_row_whose_chain_is_not_the_last_records_is_refused(pg_dsn: str) -> None:
    record(pg_dsn, 1)
    query(pg_dsn, "UPDATE runcontext_sessions SET chain = %s", chain_at(pg_dsn, 5))
    with pytest.raises(
        TranscriptDigestError,
        match=r"session=s:6: the session row anchors chain blake3:[0-9a-f]{64}, but record 6 "
        r"has chain blake3:[0-9a-f]{64}",
    ):
        Session.open(pg_dsn, session_id="s")


def test_a_gap_in_seq_is_refused_naming_where(pg_dsn: str) -> None:
    record(pg_dsn, 2)
    query(pg_dsn, "DELETE FROM runcontext_records WHERE seq = 5")
    with pytest.raises(TranscriptDigestError) as caught:
        Session.open(pg_dsn, session_id="s")
    assert (caught.value.kind, caught.value.line) == ("chain", 6)
    assert str(caught.value).endswith(
        "session=s:6: record 5 is missing (record 6 follows record 4): records were deleted"
    )


def test_a_consistent_session_still_opens_and_appends(pg_dsn: str) -> None:
    conversation = record(pg_dsn, 2)
    with Session.open(pg_dsn, session_id="s") as session:
        conversation.append({"role": "user", "content": "again"})
        session.record_run(conversation, CONTEXT, {"role": "assistant", "content": "ok"})
        chain = session.chain
    assert session_row(pg_dsn) == (12, chain)
    assert [seq for seq, _ in rows(pg_dsn)] == list(range(1, 13))


@pytest.fixture
def sql_ascii_dsn(postgres_server: str) -> Iterator[str]:
    """A database whose encoding is SQL_ASCII: its text columns hold any bytes, and psycopg
    returns them as bytes."""
    name = f"rc_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(
            f"CREATE DATABASE \"{name}\" ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C'"
            " TEMPLATE template0".encode()
        )
    try:
        parts = urlsplit(postgres_server)  # the test server's DSN is a URI (conftest)
        dsn = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
        init_schema(dsn)
        yield dsn
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


def test_a_chain_column_that_is_not_utf8_is_refused(sql_ascii_dsn: str) -> None:
    record(sql_ascii_dsn, 1)
    query(
        sql_ascii_dsn, "UPDATE runcontext_sessions SET chain = convert_from('\\xff', 'SQL_ASCII')"
    )
    with PostgresStore(sql_ascii_dsn, "s") as store:
        assert store.head() == (6, "\\xff")
    with pytest.raises(
        TranscriptDigestError,
        match=r"session=s:6: the session row anchors chain \\xff, but record 6 has chain blake3:",
    ):
        Session.open(sql_ascii_dsn, session_id="s")
