"""Schema version 2: what a run was told as columns the server fills, the migration from
version 1 that ``runcontext transcript init`` applies, and what needs version 2."""

from __future__ import annotations

import importlib
import os
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from chained import new_session
from fleet_data import context, record

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext import RunContext  # noqa: E402
from runcontext.transcript import Session  # noqa: E402
from runcontext.transcript.errors import TranscriptError  # noqa: E402
from runcontext.transcript.fleet import find_runs, list_sessions  # noqa: E402
from runcontext.transcript.postgres import (  # noqa: E402
    _SCHEMA,
    SWEEP_LOCK,
    PostgresStore,
    init_schema,
)


def query(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def execute(dsn: str, sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.encode())


def install_version_1(dsn: str) -> None:
    """The tables as runcontext with schema version 1 created them."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE runcontext_schema_version ("
            " version integer NOT NULL, installed timestamptz NOT NULL DEFAULT now())"
        )
        for statement in _SCHEMA:
            conn.execute(statement.encode())
        conn.execute("INSERT INTO runcontext_schema_version (version) VALUES (1)")


def told(dsn: str) -> list[tuple[Any, ...]]:
    return query(
        dsn,
        "SELECT session_id, run, section_names, facts FROM runcontext_records"
        " WHERE type = 'run-context' ORDER BY session_id, run",
    )


def test_a_run_is_told_in_columns_the_server_fills(pg_dsn: str) -> None:
    agents = ("AGENTS.md", "Keep the build green.\n")
    notes = ("notes", "Ask before deleting.\n")
    ctx = RunContext(head_sections=[agents], facts=[("branch", "release")], tail_sections=[notes])
    record(pg_dsn, [ctx], session_id="s", tenant="acme")
    rows = query(
        pg_dsn,
        "SELECT section_digests, section_names, facts FROM runcontext_records"
        " WHERE type = 'run-context'",
    )
    assert rows == [
        (
            [s.digest for s in ctx.sections],
            ["AGENTS.md", "notes"],
            [["branch", "release"]],
        )
    ]
    # Every other record leaves them empty.
    assert query(
        pg_dsn,
        "SELECT count(*) FROM runcontext_records WHERE type <> 'run-context'"
        " AND (section_digests IS NOT NULL OR section_names IS NOT NULL OR facts IS NOT NULL)",
    ) == [(0,)]


def test_a_fact_holding_nul_is_queryable_and_the_append_never_fails(pg_dsn: str) -> None:
    # jsonb cannot hold U+0000: the column holds U+FFFD in its place; the line is unchanged.
    record(pg_dsn, [RunContext(facts=[("odd", "a\x00b")])], session_id="s")
    assert told(pg_dsn) == [("s", 1, [], [["odd", "a\ufffdb"]])]
    assert [r.run for r in find_runs(pg_dsn, facts={"odd": "a\x00b"})] == [1]
    with Session.open(pg_dsn, session_id="s") as session:
        assert session.runs()[0].facts == (("odd", "a\x00b"),)


def test_a_run_context_line_that_is_not_json_gets_no_columns(pg_dsn: str) -> None:
    # The columns are for queries: an insert never fails over them.
    with PostgresStore(pg_dsn, "s") as store:
        store.create(new_session())
    query(
        pg_dsn,
        "INSERT INTO runcontext_records (tenant, session_id, seq, type, size, line)"
        " VALUES ('default', 's', 99, 'run-context', 3, '\\x7b7b7b'::bytea) RETURNING 1",
    )
    assert query(
        pg_dsn, "SELECT section_digests, facts FROM runcontext_records WHERE seq = 99"
    ) == [(None, None)]


def test_init_upgrades_version_1_and_fills_the_columns_of_runs_already_stored(
    pg_database: str,
) -> None:
    install_version_1(pg_database)
    # A store of this runcontext reads and writes a version 1 database (rolling upgrades).
    record(pg_database, [context(1, "main"), context(2, "release")], session_id="old")
    assert query(pg_database, "SELECT max(version) FROM runcontext_schema_version") == [(1,)]
    with pytest.raises(
        TranscriptError,
        match=r"holds runcontext schema version 1; questions across sessions and prune need "
        r"version 2: run `runcontext transcript init postgresql://.*` to upgrade it",
    ):
        list_sessions(pg_database)
    assert init_schema(pg_database) == 2
    assert init_schema(pg_database) == 2
    assert query(pg_database, "SELECT version FROM runcontext_schema_version ORDER BY 1") == [
        (1,),
        (2,),
    ]
    assert told(pg_database) == [
        ("old", 1, ["AGENTS.md"], [["branch", "main"]]),
        ("old", 2, ["AGENTS.md"], [["branch", "release"]]),
    ]
    assert [r.run for r in find_runs(pg_database, facts={"branch": "release"})] == [2]
    # New runs get the columns from the trigger.
    with Session.open(pg_database, session_id="old") as session:
        messages = [*session.messages(), {"role": "user", "content": "more"}]
        session.record_run(messages, context(3, "hotfix"))
    assert told(pg_database)[-1] == ("old", 3, ["AGENTS.md"], [["branch", "hotfix"]])


def test_a_new_database_and_an_upgraded_one_have_the_same_schema(
    pg_dsn: str, postgres_server: str
) -> None:
    name = f"rc_test_{uuid.uuid4().hex[:16]}"
    execute(postgres_server, f'CREATE DATABASE "{name}"')
    try:
        parts = urlsplit(postgres_server)
        upgraded = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
        install_version_1(upgraded)
        init_schema(upgraded)
        assert shape(pg_dsn) == shape(upgraded)
    finally:
        execute(postgres_server, f'DROP DATABASE "{name}" WITH (FORCE)')


def shape(dsn: str) -> list[tuple[Any, ...]]:
    return query(
        dsn,
        "SELECT 'c', table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_name LIKE 'runcontext%%'"
        " UNION ALL SELECT 'i', tablename, indexname, indexdef FROM pg_indexes"
        " WHERE tablename LIKE 'runcontext%%'"
        " UNION ALL SELECT 't', event_object_table, trigger_name, action_timing"
        " FROM information_schema.triggers WHERE trigger_name LIKE 'runcontext%%'"
        " ORDER BY 1, 2, 3",
    )


def test_the_schema_has_the_fleet_indexes_and_triggers(pg_dsn: str) -> None:
    names = {row[2] for row in shape(pg_dsn)}
    assert {
        "runcontext_records_told_digests",
        "runcontext_records_told_names",
        "runcontext_records_told_facts",
        "runcontext_records_run_time",
        "runcontext_records_section",
        "runcontext_sections_share",
        "runcontext_records_told",
    } <= names


def test_offering_a_section_body_takes_the_tenants_sweep_lock_shared(pg_dsn: str) -> None:
    # Even when the body is there already (ON CONFLICT DO NOTHING inserts nothing).
    for _ in range(2):
        with psycopg.connect(pg_dsn) as writer:
            writer.execute(
                "INSERT INTO runcontext_sections (tenant, digest, name, text)"
                " VALUES ('acme', 'blake3:00', 'AGENTS.md', 'x') ON CONFLICT DO NOTHING"
            )
            held = query(
                pg_dsn,
                "SELECT mode, granted FROM pg_locks WHERE locktype = 'advisory'"
                " AND classid = %s AND objid = hashtext('acme')::oid",
                SWEEP_LOCK,
            )
            assert held == [("ShareLock", True)]
