"""PostgresStore against a real server: records, sections, transactions, batches, errors."""

from __future__ import annotations

import importlib
import json
import os
import threading
from typing import Any

import pytest
from chained import chain_lines, message, new_session, run_context, section

# Without psycopg these tests skip locally; in CI its absence is an error, never a skip.
psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.transcript import postgres  # noqa: E402
from runcontext.transcript.errors import (  # noqa: E402
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
)
from runcontext.transcript.postgres import PostgresStore, init_schema, parse_dsn  # noqa: E402
from runcontext.transcript.store import TranscriptStore, read_all  # noqa: E402


def query(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def test_is_a_transcript_store(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, "s") as store:
        assert isinstance(store, TranscriptStore)


def test_create_then_read_gives_the_same_bytes(pg_dsn: str) -> None:
    lines = new_session()
    with PostgresStore(pg_dsn, "s1") as store:
        store.create(lines)
        assert read_all(store) == lines
    with PostgresStore(f"{pg_dsn}&session=s1") as again:
        assert read_all(again) == lines
        assert again.head() == (len(lines), json.loads(lines[-1])["chain"])


def test_lines_may_come_with_their_newline(pg_dsn: str) -> None:
    lines = new_session()
    with PostgresStore(pg_dsn, "s1") as store:
        store.create([line + b"\n" for line in lines])
        assert read_all(store) == lines
        with pytest.raises(TranscriptFormatError, match=":6: a line holds a newline before"):
            store.append([b'{"type":"message"}\n{}'])


def test_create_refuses_an_existing_session_and_leaves_it(pg_dsn: str) -> None:
    lines = new_session()
    with PostgresStore(pg_dsn, "s1") as store:
        store.create(lines)
        with pytest.raises(FileExistsError, match="already exists"):
            store.create(new_session("other text"))
        assert read_all(store) == lines


def test_create_is_atomic(pg_dsn: str) -> None:
    lines = [*new_session(), b"not json"]
    with PostgresStore(pg_dsn, "s1") as store:
        with pytest.raises(TranscriptFormatError, match=r"session=s1:6: not a JSON record"):
            store.create(lines)
        with pytest.raises(FileNotFoundError, match=r"Session\.create"):
            store.read(None)
    assert query(pg_dsn, "SELECT count(*) FROM runcontext_records") == [(0,)]


def test_section_text_is_stored_once_per_tenant(pg_dsn: str) -> None:
    text = "Keep the build green.\n" * 400
    for tenant in ("acme", "globex"):
        for sid in ("a", "b", "c"):
            with PostgresStore(pg_dsn, sid, tenant=tenant) as store:
                store.create(new_session(text))
                assert read_all(store) == new_session(text)
    assert query(
        pg_dsn, "SELECT tenant, count(*) FROM runcontext_sections GROUP BY tenant ORDER BY tenant"
    ) == [("acme", 1), ("globex", 1)]
    # The records row keeps the line without the text.
    ((stored,),) = query(
        pg_dsn, "SELECT line FROM runcontext_records WHERE type = 'section' LIMIT 1"
    )
    assert b"Keep the build" not in bytes(stored)
    assert len(stored) < 300


def test_a_tenant_never_reads_another_tenants_sections(pg_dsn: str) -> None:
    text = "acme's secret instructions"
    with PostgresStore(pg_dsn, "s", tenant="acme") as store:
        store.create(new_session(text))
    # globex names the same digest without holding the body: the foreign key refuses the row,
    # since a section record is stored only beside its own tenant's body.
    acme_lines = new_session(text)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO runcontext_sessions (tenant, session_id, format_version, records)"
            " VALUES ('globex', 's', 2, 0)"
        )
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute(
                "INSERT INTO runcontext_records (tenant, session_id, seq, type, section_digest,"
                " size, line) SELECT 'globex', 's', 1, type, section_digest, size, line"
                " FROM runcontext_records WHERE tenant = 'acme' AND type = 'section'"
            )
    with PostgresStore(pg_dsn, "s", tenant="globex") as store:
        assert read_all(store) == []
    with PostgresStore(pg_dsn, "s", tenant="acme") as store:
        assert read_all(store) == acme_lines


def test_a_section_with_a_wrong_digest_never_enters_the_shared_table(pg_dsn: str) -> None:
    forged = section("AGENTS.md", "honest text") | {"text": "planted text"}
    lines = chain_lines([json.loads(new_session()[0]), forged])
    with PostgresStore(pg_dsn, "s") as store, pytest.raises(TranscriptDigestError, match=":2:"):
        store.create(lines)
    assert query(pg_dsn, "SELECT count(*) FROM runcontext_sections") == [(0,)]


def test_append_commits_on_exit_and_rolls_back_on_error(pg_dsn: str) -> None:
    lines = new_session()
    more = chain_lines([message(2, "Next."), run_context(2, [], 3)], previous=lines[-1])
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines)
        with pytest.raises(RuntimeError, match="boom"), store.writing():
            store.append(more)
            raise RuntimeError("boom")
        assert read_all(store) == lines
        with store.writing():
            seen, _ = store.read(None)
            assert seen == lines
            store.append(more[:1])
            store.append(more[1:])
        assert read_all(store) == lines + more
        assert store.head() == (len(lines) + 2, json.loads(more[-1])["chain"])
    rows = query(pg_dsn, "SELECT seq, type, run FROM runcontext_records ORDER BY seq")
    assert rows[-1] == (7, "run-context", 2)


def test_append_outside_writing_is_its_own_transaction(pg_dsn: str) -> None:
    lines = new_session()
    more = chain_lines([message(2, "Next.")], previous=lines[-1])
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines)
        store.append(more)
        assert read_all(store) == lines + more


def test_read_continues_from_its_cursor(pg_dsn: str) -> None:
    lines = new_session()
    more = chain_lines([message(2 + i, f"m{i}") for i in range(3)], previous=lines[-1])
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines)
        _, cursor = store.read(None)
        assert store.read(cursor) == ([], cursor)
        store.append(more)
        assert store.read(cursor) == (more, len(lines) + 3)


def test_reads_come_in_bounded_batches(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = new_session()
    more = chain_lines([message(2 + i, "x" * 1000) for i in range(20)], previous=lines[-1])
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines + more)
        monkeypatch.setattr(postgres, "_BATCH_ROWS", 7)
        sizes = []
        cursor: object | None = None
        while batch := store.read(cursor):
            if not batch[0]:
                break
            sizes.append(len(batch[0]))
            cursor = batch[1]
        assert sizes == [7, 7, 7, 4]
        monkeypatch.setattr(postgres, "_BATCH_BYTES", 2500)
        assert len(store.read(len(lines))[0]) == 2  # two 1 KB lines fit, a third would not
        assert read_all(store) == lines + more


def test_a_line_over_the_cap_is_refused_by_number(pg_dsn: str) -> None:
    lines = new_session()
    long = chain_lines([message(2, "x" * 5000)], previous=lines[-1])
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines + long)
    with PostgresStore(pg_dsn, "s", max_line_bytes=4096) as store:
        batch, cursor = store.read(None)
        assert batch == lines  # the records before it
        with pytest.raises(TranscriptFormatError, match=r":6: record of \d+ bytes exceeds"):
            store.read(cursor)


def test_writing_excludes_another_writer(pg_dsn: str) -> None:
    lines = new_session()
    first = chain_lines([message(2, "first")], previous=lines[-1])
    second = chain_lines([message(3, "second")], previous=first[-1])
    seen: list[list[bytes]] = []
    with PostgresStore(pg_dsn, "s") as a, PostgresStore(pg_dsn, "s") as b:
        a.create(lines)

        def other() -> None:
            with b.writing():
                seen.append(read_all(b))
                b.append(second)

        with a.writing():
            thread = threading.Thread(target=other)
            thread.start()
            # Wait (without a timing assertion) until b is blocked on the session row's lock.
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                while not conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                ).fetchone()[0]:
                    conn.execute("SELECT pg_sleep(0.01)")
            a.append(first)
        thread.join()
        assert seen == [lines + first]
        assert read_all(a) == lines + first + second


def test_lock_timeout(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, "s") as a, PostgresStore(pg_dsn, "s", lock_timeout=0.05) as b:
        a.create(new_session())
        expired = pytest.raises(TranscriptError, match=r"held the session for more than 0\.05 s")
        with a.writing(), expired, b.writing():
            pass
        with b.writing():  # the lock is free again; the failed block left nothing behind
            assert b.read(None)[0] == new_session()
    with pytest.raises(ValueError, match="lock_timeout must be a positive"):
        PostgresStore(pg_dsn, "s", lock_timeout=0)


def test_dsn_parameters(pg_dsn: str) -> None:
    conninfo, session, tenant = parse_dsn(
        "postgresql://u:pw@h:5433/db?session=s%201&sslmode=require&tenant=t"
    )
    assert (conninfo, session, tenant) == (
        "postgresql://u:pw@h:5433/db?sslmode=require",
        "s 1",
        "t",
    )
    assert parse_dsn("host=/tmp dbname=x") == ("host=/tmp dbname=x", None, None)
    with pytest.raises(ValueError, match="the session parameter is given twice"):
        parse_dsn("postgresql://h/db?session=a&session=b")
    with PostgresStore(pg_dsn + "&tenant=acme&session=s%2F1") as store:
        assert (store.tenant, store.session_id) == ("acme", "s/1")
        assert store.name.endswith(
            "?host=" + pg_dsn.split("host=")[1] + "&session=s%2F1&tenant=acme"
        )
    with pytest.raises(ValueError, match="no session id; pass session_id= or add"):
        PostgresStore(pg_dsn)
    with pytest.raises(ValueError, match="session_id='b' differs from the DSN's session='a'"):
        PostgresStore(pg_dsn + "&session=a", "b")
    with pytest.raises(ValueError, match="session id is empty"):
        PostgresStore(pg_dsn, "")
    with pytest.raises(ValueError, match="NUL"):
        PostgresStore(pg_dsn, "a\x00b")


def test_a_server_that_does_not_answer(tmp_path: Any) -> None:
    dsn = f"postgresql://runcontext:secret@/db?host={tmp_path}&session=s"
    with pytest.raises(TranscriptError, match="cannot connect to PostgreSQL: ") as caught:
        PostgresStore(dsn)
    assert "secret" not in str(caught.value)
    assert str(caught.value).startswith(f"postgresql://runcontext@/db?host={tmp_path}&session=s: ")
    with pytest.raises(TranscriptError, match="cannot connect to PostgreSQL"):
        init_schema(dsn)


def test_a_database_without_the_schema(pg_database: str) -> None:
    with pytest.raises(
        TranscriptError, match=r"no runcontext schema; run `runcontext transcript init "
    ):
        PostgresStore(pg_database, "s")


def test_init_schema_is_idempotent_and_refuses_a_newer_one(pg_database: str) -> None:
    assert init_schema(pg_database) == 2
    assert init_schema(pg_database) == 2
    query(pg_database, "UPDATE runcontext_schema_version SET version = 3 RETURNING 1")
    with pytest.raises(TranscriptVersionError, match="schema version 3, newer than this"):
        init_schema(pg_database)
    with pytest.raises(TranscriptVersionError, match="schema version 3, newer than this"):
        PostgresStore(pg_database, "s")


def test_a_missing_session(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, "nope", tenant="acme") as store:
        with pytest.raises(
            FileNotFoundError,
            match=r"no session 'nope' for tenant 'acme' \(start one with Session.create\)",
        ):
            store.read(None)
        with pytest.raises(FileNotFoundError, match=r"Session\.create"), store.writing():
            pass


def test_a_session_of_a_newer_format(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, "s") as store:
        store.create(new_session())
    query(pg_dsn, "UPDATE runcontext_sessions SET format_version = 3 RETURNING 1")
    with PostgresStore(pg_dsn, "s") as store:
        with pytest.raises(TranscriptVersionError, match=r":1: .*format version 3, newer"):
            store.read(None)
        with pytest.raises(TranscriptVersionError), store.writing():
            pass


def test_close_is_idempotent(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, "s")
    store.close()
    store.close()
    with pytest.raises(ValueError, match="the store is closed"):
        store.read(None)


def test_a_pool_of_connections_serves_many_sessions(pg_dsn: str) -> None:
    psycopg_pool = pytest.importorskip("psycopg_pool")
    lines = new_session()
    more = chain_lines([message(2, "Next.")], previous=lines[-1])
    with psycopg_pool.ConnectionPool(pg_dsn, min_size=1, max_size=2, open=True) as pool:
        stores = [PostgresStore(session_id=f"s{i}", pool=pool) for i in range(5)]
        for store in stores:  # more stores than connections: each borrows per operation
            store.create(lines)
        for store in stores:
            with store.writing():
                assert store.read(None)[0] == lines
                store.append(more)
            assert read_all(store) == lines + more
            store.close()
        assert pool.get_stats()["pool_max"] == 2
    with pytest.raises(TypeError, match="give a dsn or a pool="):
        PostgresStore(session_id="s")
