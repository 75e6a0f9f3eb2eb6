"""How many times an append waits for the server: one round trip for a lone writer, two under
the row lock, none before the backend in ``Loop.run``; and a writer that finds another one
appended since falls back to the lock and records its run after theirs."""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chained import chain_lines, message, new_session, verify_chain

# Without psycopg these tests skip locally; in CI its absence is an error, never a skip.
psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext import Loop, RunContext  # noqa: E402
from runcontext.transcript.postgres import PostgresStore  # noqa: E402
from runcontext.transcript.session import Session  # noqa: E402
from runcontext.transcript.store import read_all  # noqa: E402

CONTEXT = RunContext(head_sections=[("AGENTS.md", "Keep the build green.\n")], facts=[("d", "1")])
REPLY = {"role": "assistant", "content": "Done."}


class Trips:
    """The round trips on a connection: each run of messages the client sent that the server
    then answered (libpq's trace of the protocol)."""

    def __init__(self) -> None:
        self.count = 0


@contextmanager
def traced(store: PostgresStore) -> Iterator[Trips]:
    conn: Any = store._conn
    trips = Trips()
    with tempfile.TemporaryFile("w+") as log:
        conn.pgconn.trace(log.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield trips
        finally:
            conn.pgconn.untrace()
            log.seek(0)
            sending = False
            for line in log:
                direction = line.split("\t", 1)[0]
                if direction == "F":
                    sending = True
                elif direction == "B" and sending:
                    trips.count, sending = trips.count + 1, False


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    for n in range(turns):
        messages += [{"role": "user", "content": f"step {n}"}, REPLY]
    return messages


def test_a_lone_writers_run_is_one_round_trip(pg_dsn: str) -> None:
    messages = conversation(0)
    with Session.create(PostgresStore(pg_dsn, "s"), messages) as session:
        store = session.store
        assert isinstance(store, PostgresStore)
        for n in range(3):
            messages.append({"role": "user", "content": f"step {n}"})
            with traced(store) as trips:
                session.record_run(messages, CONTEXT, REPLY)
            messages.append(REPLY)
            assert trips.count == 1
    with Session.open(pg_dsn, session_id="s") as reopened:
        assert [run.number for run in reopened.runs()] == [1, 2, 3]
        assert reopened.messages() == messages
    verify_chain(read_all(PostgresStore(pg_dsn, "s")))


def test_under_the_row_lock_an_append_is_two_round_trips(pg_dsn: str) -> None:
    lines = new_session()
    with PostgresStore(pg_dsn, "s") as store:
        store.create(lines)
        more = chain_lines([message(2, "Next.")], previous=lines[-1])
        with traced(store) as trips, store.writing():
            assert store.read(len(lines)) == ([], len(lines))  # read up to the lock: asks nothing
            store.append(more)
        assert trips.count == 2  # BEGIN with the lock and the last record; the write with COMMIT
        assert read_all(store) == lines + more


def test_loop_run_asks_the_store_nothing_before_the_backend(pg_dsn: str) -> None:
    messages = conversation(1)
    with Session.create(PostgresStore(pg_dsn, "s"), messages) as session:
        store = session.store
        assert isinstance(store, PostgresStore)
        seen: list[int] = []

        with traced(store) as trips:

            def backend(request: Any) -> dict[str, Any]:
                seen.append(trips.count)  # (the trace is counted when the block ends)
                return REPLY

            Loop(backend, session).run([*messages, {"role": "user", "content": "more"}])
        assert seen == [0]
        assert trips.count == 1  # the run itself


def test_a_writer_behind_another_falls_back_to_the_lock(pg_dsn: str) -> None:
    """B appends after A last looked: A's guarded write is refused with nothing written, and A
    appends under the lock after B's records, as the next run."""
    messages = conversation(1)
    with Session.create(PostgresStore(pg_dsn, "s"), messages) as a:
        with Session.open(PostgresStore(pg_dsn, "s")) as b:
            b_messages = [*messages, {"role": "user", "content": "from b"}]
            b.record_run(b_messages, CONTEXT, REPLY)
        store = a.store
        assert isinstance(store, PostgresStore)
        a_messages = [*b_messages, REPLY, {"role": "user", "content": "from a"}]
        with traced(store) as trips:
            run = a.record_run(a_messages, CONTEXT, REPLY)
        # the refused guarded write, the lock, B's records, the write with COMMIT
        assert trips.count == 4
        assert run.number == 2
    with Session.open(pg_dsn, session_id="s") as reopened:
        assert reopened.messages() == [*a_messages, REPLY]
        assert [r.number for r in reopened.runs()] == [1, 2]
    verify_chain(read_all(PostgresStore(pg_dsn, "s")))
