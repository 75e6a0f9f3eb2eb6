"""prune over PostgreSQL: what goes and what stays, the dry run, the section bodies no
remaining record names, and pruning while eight writer processes append."""

from __future__ import annotations

import importlib
import os
import queue
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from chained import chain_lines, message
from fleet_data import SEED, context, record

from runcontext.transcript import Session
from runcontext.transcript.prune import prune
from runcontext.transcript.store import read_all

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.transcript.postgres import PostgresStore  # noqa: E402

WRITER = Path(__file__).with_name("pg_prune_writer.py")
OLD = timedelta(days=30)


def query(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql.encode(), params)
        return cursor.fetchall() if cursor.description else []


def make_old(dsn: str, *session_ids: str) -> None:
    query(
        dsn,
        "UPDATE runcontext_sessions SET updated = now() - interval '40 days'"
        " WHERE session_id = ANY(%s)",
        list(session_ids),
    )


def bodies(dsn: str) -> set[tuple[str, str]]:
    return {(t, d) for t, d in query(dsn, "SELECT tenant, digest FROM runcontext_sections")}


def sessions(dsn: str) -> set[tuple[str, str]]:
    return {(t, s) for t, s in query(dsn, "SELECT tenant, session_id FROM runcontext_sessions")}


@pytest.fixture
def fleet(pg_dsn: str) -> str:
    """acme/old (AGENTS.md v1 then v2; 40 days idle), acme/new (v2), zeta/old (v1, 40 days
    idle): v1 of acme is named by acme/old alone; v2 also by acme/new."""
    record(pg_dsn, [context(1, "main"), context(2, "main")], session_id="old", tenant="acme")
    record(pg_dsn, [context(2, "main")], session_id="new", tenant="acme")
    record(pg_dsn, [context(1, "main")], session_id="old", tenant="zeta")
    make_old(pg_dsn, "old")
    return pg_dsn


def test_a_dry_run_reports_and_deletes_nothing(fleet: str) -> None:
    before = (sessions(fleet), bodies(fleet))
    report = prune(fleet, older_than=OLD, tenant="acme")
    assert report.deleted is False
    assert [(s.tenant, s.session_id, s.records) for s in report.sessions] == [("acme", "old", 10)]
    [old] = report.sessions
    stored = query(
        fleet,
        "SELECT sum(size) + count(*) FROM runcontext_records"
        " WHERE tenant = 'acme' AND session_id = 'old'",
    )[0][0]
    assert old.bytes == stored
    v1 = context(1, "x").sections[0]
    assert (report.sections, report.section_bytes) == (1, len(v1.text.encode()))
    assert report.bytes == old.bytes + report.section_bytes
    assert (sessions(fleet), bodies(fleet)) == before


def test_delete_removes_the_sessions_and_the_bodies_no_one_names(fleet: str) -> None:
    v1, v2 = (context(n, "x").sections[0].digest for n in (1, 2))
    report = prune(fleet, older_than=OLD, tenant="acme", delete=True)
    assert report.deleted is True
    assert [(s.tenant, s.session_id) for s in report.sessions] == [("acme", "old")]
    assert report.sections == 1
    assert sessions(fleet) == {("acme", "new"), ("zeta", "old")}
    # acme's v1 went; acme's v2 is named by acme/new; zeta's v1 by zeta/old.
    assert bodies(fleet) == {("acme", v2), ("zeta", v1)}
    assert query(fleet, "SELECT count(*) FROM runcontext_records WHERE session_id = 'old'") == [
        (4 + 2,)  # zeta/old's records only: header, seed, question, section, run, reply
    ]
    with Session.open(fleet, session_id="new", tenant="acme") as survivor:
        assert len(survivor.runs()) == 1
    # Again: nothing left to do.
    again = prune(fleet, older_than=OLD, tenant="acme", delete=True)
    assert (again.sessions, again.sections) == ([], 0)


def test_criteria_all_hold(fleet: str) -> None:
    assert {(s.tenant, s.session_id) for s in prune(fleet, older_than=OLD).sessions} == {
        ("acme", "old"),
        ("zeta", "old"),
    }
    assert [s.session_id for s in prune(fleet, session_ids=["new"]).sessions] == ["new"]
    assert prune(fleet, session_ids=["new"], older_than=OLD).sessions == []
    assert [s.tenant for s in prune(fleet + "&tenant=zeta").sessions] == ["zeta"]
    assert [s.session_id for s in prune(fleet + "&session=new").sessions] == ["new"]
    with pytest.raises(ValueError, match="nothing chooses what to prune"):
        prune(fleet)
    with pytest.raises(ValueError, match="older_than must not be negative"):
        prune(fleet, older_than=-OLD)


def test_a_session_written_to_while_prune_waits_for_it_is_kept(fleet: str) -> None:
    result: list[Any] = []
    with PostgresStore(fleet, "old", tenant="acme") as store:
        lines = read_all(store)
        with store.writing():  # the writer holds the session's row
            pruner = threading.Thread(
                target=lambda: result.append(prune(fleet, older_than=OLD, delete=True))
            )
            pruner.start()
            deadline = time.monotonic() + 60
            while not query(
                fleet,
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE '%%DELETE FROM runcontext_sessions%%'",
            ):
                assert time.monotonic() < deadline, "prune never waited for the writer"
                time.sleep(0.02)
            # Committed when the block ends, with the row's new last write.
            store.append(chain_lines([message(5, "still here")], previous=lines[-1]))
    pruner.join()
    [report] = result
    assert [(s.tenant, s.session_id) for s in report.kept] == [("acme", "old")]
    assert [(s.tenant, s.session_id) for s in report.sessions] == [("zeta", "old")]
    with Session.open(fleet, session_id="old", tenant="acme") as kept:
        assert len(kept.runs()) == 2
        assert kept.messages()[-1]["content"] == "still here"


def test_a_writer_of_a_pruned_session_is_told_it_is_gone(fleet: str) -> None:
    with Session.open(fleet, session_id="old", tenant="acme") as session:
        prune(fleet, session_ids=["old"], tenant="acme", delete=True)
        messages = [*session.messages(), {"role": "user", "content": "hello?"}]
        with pytest.raises(FileNotFoundError, match="no session 'old' for tenant 'acme'"):
            session.record_run(messages, context(1, "main"))


def test_prune_while_eight_writers_append(pg_dsn: str) -> None:
    """Eight processes start session after session in one tenant, told bodies from a shared
    pool, while this process prunes every finished session as soon as it is done, sweeping
    the bodies no one else names: every writer finishes without an error, and every session
    left opens (its chain and every run's context verify: each body it names is there)."""
    tenant = "fleet"
    # Sessions that name the first bodies, pruned first: every body is then named by the
    # writers' sessions alone, which come and go.
    from pg_prune_writer import told

    for n in range(3):
        record(pg_dsn, [told(n, 0, "seed")], session_id=f"seed-{n}", tenant=tenant)
    env = {**os.environ, "PYTHONPATH": str(WRITER.parent)}
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), pg_dsn, tenant, str(w), "12"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    finished: queue.Queue[str] = queue.Queue()

    def collect(process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            finished.put(line.split()[1])

    readers = [threading.Thread(target=collect, args=(p,)) for p in writers]
    for reader in readers:
        reader.start()
    pruned: set[str] = set()
    swept = 0
    first = prune(pg_dsn, tenant=tenant, session_ids=[f"seed-{n}" for n in range(3)], delete=True)
    assert len(first.sessions) == 3
    while any(p.poll() is None for p in writers) or not finished.empty():
        done: list[str] = []
        while not finished.empty():
            done.append(finished.get())
        # Keep the last few sessions of each writer: they are the ones verified below.
        done = [d for d in done if int(d.split("-")[1]) < 9]
        if done:
            report = prune(pg_dsn, tenant=tenant, session_ids=done, delete=True)
            pruned.update(s.session_id for s in report.sessions)
            swept += report.sections
        else:
            time.sleep(0.01)
    for reader in readers:
        reader.join()
    errors = [p.stderr.read() for p in writers if p.stderr is not None]
    assert [p.wait() for p in writers] == [0] * 8, errors
    assert len(pruned) == 8 * 9
    assert swept > 0, "no body was ever collected: the test did not race anything"
    left = sorted(s for t, s in sessions(pg_dsn))
    assert left == sorted(f"w{w}-{i}" for w in range(8) for i in range(9, 12))
    for session_id in left:
        with Session.open(pg_dsn, session_id=session_id, tenant=tenant, writable=False) as s:
            assert len(s.runs()) == 3
            assert s.messages()[0] == SEED
    # And a sweep now collects nothing a survivor names.
    prune(pg_dsn, tenant=tenant, session_ids=["none"], delete=True)
    for session_id in left:
        with Session.open(pg_dsn, session_id=session_id, tenant=tenant, writable=False):
            pass
