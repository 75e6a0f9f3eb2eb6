"""A COMMIT that fails (refused by the server, or the connection dropped at that moment) leaves
the session where the server is: nothing of the run in memory, so the next ``record_run``
records it, and the transcript verifies. Both ways of appending are tried: a lone writer's one
statement, and the row-locked transaction of a writer that finds another one appended since."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest
from chained import verify_chain

# Without psycopg these tests skip locally; in CI its absence is an error, never a skip.
psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext import RunContext  # noqa: E402
from runcontext.transcript.errors import TranscriptError  # noqa: E402
from runcontext.transcript.postgres import PostgresStore  # noqa: E402
from runcontext.transcript.session import Session  # noqa: E402
from runcontext.transcript.store import read_all  # noqa: E402

CONTEXT = RunContext(head_sections=[("AGENTS.md", "Keep the build green.\n")], facts=[("d", "1")])
REPLY = {"role": "assistant", "content": "Done."}

# A constraint trigger deferred to COMMIT: while `commit_failure` holds a row, every COMMIT
# that inserted records fails, by an error ('refuse') or by the backend terminating its own
# connection ('terminate'), after the statements themselves succeeded.
FAIL_AT_COMMIT = (
    "CREATE TABLE commit_failure (mode text NOT NULL)",
    """
    CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        how text := (SELECT mode FROM commit_failure LIMIT 1);
    BEGIN
        IF how = 'refuse' THEN
            RAISE EXCEPTION 'the test refuses this commit';
        ELSIF how = 'terminate' THEN
            PERFORM pg_terminate_backend(pg_backend_pid());
            PERFORM pg_sleep(5);  -- the termination arrives while it waits
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON runcontext_records
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_at_commit()
    """,
)


def query(dsn: str, sql: str, *params: Any) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.encode(), params)


@pytest.mark.parametrize("behind", [False, True], ids=["lone-writer", "row-locked"])
@pytest.mark.parametrize("mode", ["refuse", "terminate"])
def test_a_failed_commit_leaves_the_session_where_the_server_is(
    pg_dsn: str, mode: str, behind: bool
) -> None:
    for statement in FAIL_AT_COMMIT:
        query(pg_dsn, statement)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(PostgresStore(pg_dsn, "s"), messages) as session:
        messages += [{"role": "user", "content": "first"}]
        session.record_run(messages, CONTEXT, REPLY)
        messages.append(REPLY)
        if behind:  # another writer appends: this one's next append takes the row lock
            with Session.open(PostgresStore(pg_dsn, "s")) as other:
                messages.append({"role": "user", "content": "from the other writer"})
                other.record_run(messages, CONTEXT, REPLY)
                messages.append(REPLY)
        session.refresh()
        before = (session.message_count, len(session.runs()), session.chain)
        messages.append({"role": "user", "content": "second"})
        query(pg_dsn, "INSERT INTO commit_failure VALUES (%s)", mode)
        expected = (
            r"the test refuses this commit"
            if mode == "refuse"
            # libpq's first line: the server's FATAL, or the closed socket, as it reads it
            else r"the PostgreSQL connection failed: .*(terminat|closed the connection)"
        )
        with pytest.raises((psycopg.Error, TranscriptError), match=expected):
            session.record_run(messages, CONTEXT, REPLY)
        query(pg_dsn, "DELETE FROM commit_failure")
        # Nothing moved: the session is not ahead of the server, which stored nothing of it.
        assert (session.message_count, len(session.runs()), session.chain) == before
        run = session.record_run(messages, CONTEXT, REPLY)  # the same run, recorded now
        assert run.number == (3 if behind else 2)
        assert session.messages() == [*messages, REPLY]
    with Session.open(pg_dsn, session_id="s") as reopened:
        assert reopened.messages() == [*messages, REPLY]
        assert [r.number for r in reopened.runs()] == ([1, 2, 3] if behind else [1, 2])
    verify_chain(read_all(PostgresStore(pg_dsn, "s")))
