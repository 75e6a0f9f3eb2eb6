"""The TranscriptStore contract (python/runcontext/transcript/store.py), checked for the file
store and the PostgreSQL store alike, directly and through Session."""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chained import chain_lines, message, new_session

from runcontext import RunContext
from runcontext.transcript.errors import SeedMismatchError
from runcontext.transcript.files import FileStore
from runcontext.transcript.session import Session
from runcontext.transcript.store import TranscriptStore, read_all


@dataclass
class Backend:
    kind: str
    new: Callable[[str], TranscriptStore]  # a store for a session that may not exist yet
    opened: Callable[[str], TranscriptStore]  # a store for an existing session, ready to use
    wait_blocked: Callable[[], None]  # returns once another writer waits for the lock
    transactional: bool


def _file_backend(directory: Path) -> Backend:
    def new(name: str) -> TranscriptStore:
        return FileStore(directory / f"{name}.jsonl")

    def opened(name: str) -> TranscriptStore:
        store = FileStore(directory / f"{name}.jsonl")
        store.open(writable=True)
        return store

    def wait_blocked() -> None:
        # /proc/locks lists a waiter with "->": wait for one (no timing involved).
        while not re.search(r"-> FLOCK", Path("/proc/locks").read_text()):
            threading.Event().wait(0.005)

    return Backend("file", new, opened, wait_blocked, transactional=False)


def _postgres_backend(dsn: str) -> Backend:
    import psycopg

    from runcontext.transcript.postgres import PostgresStore

    def new(name: str) -> TranscriptStore:
        return PostgresStore(dsn, name, tenant="contract")

    def wait_blocked() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while True:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                ).fetchone()
                if row and row[0]:
                    return
                conn.execute("SELECT pg_sleep(0.005)")

    return Backend("postgres", new, new, wait_blocked, transactional=True)


@pytest.fixture(params=["file", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "file":
        yield _file_backend(tmp_path)
    else:
        yield _postgres_backend(request.getfixturevalue("pg_dsn"))


def with_newlines(lines: list[bytes]) -> list[bytes]:
    return [line + b"\n" for line in lines]


def clock() -> datetime:
    return datetime(2026, 12, 1, 19, 0, tzinfo=UTC)


def test_create_then_read(backend: Backend) -> None:
    lines = new_session()
    store = backend.new("s")
    store.create(with_newlines(lines))
    store.close()
    store = backend.opened("s")
    assert isinstance(store, TranscriptStore)
    assert read_all(store) == lines
    store.close()
    store.close()  # idempotent


def test_create_refuses_an_existing_session(backend: Backend) -> None:
    lines = new_session()
    backend.new("s").create(with_newlines(lines))
    with pytest.raises(FileExistsError):
        backend.new("s").create(with_newlines(new_session("another body")))
    assert read_all(backend.opened("s")) == lines


def test_a_missing_session(backend: Backend) -> None:
    with pytest.raises(FileNotFoundError, match=r"Session\.create"):
        read_all(backend.opened("nope"))


def test_append_inside_writing_and_read_from_a_cursor(backend: Backend) -> None:
    lines = new_session()
    more = chain_lines([message(2, "a"), message(3, "b")], previous=lines[-1])
    backend.new("s").create(with_newlines(lines))
    store = backend.opened("s")
    _, cursor = store.read(None)
    with store.writing():
        assert store.read(cursor)[0] == []
        store.append(with_newlines(more))
    assert store.read(cursor)[0] == more
    assert read_all(backend.opened("s")) == lines + more


def test_a_raising_block(backend: Backend) -> None:
    """A transaction keeps none of a block that raised; the file store, which appends as it
    goes, keeps its whole lines (docs/TRANSCRIPT.md, Crash safety), never a torn one."""
    lines = new_session()
    more = chain_lines([message(2, "a")], previous=lines[-1])
    backend.new("s").create(with_newlines(lines))
    store = backend.opened("s")
    with pytest.raises(KeyboardInterrupt), store.writing():
        store.append(with_newlines(more))
        raise KeyboardInterrupt
    expected = lines if backend.transactional else lines + more
    assert read_all(backend.opened("s")) == expected


def test_writing_excludes_another_writer(backend: Backend) -> None:
    lines = new_session()
    first = chain_lines([message(2, "first")], previous=lines[-1])
    second = chain_lines([message(3, "second")], previous=first[-1])
    backend.new("s").create(with_newlines(lines))
    a, b = backend.opened("s"), backend.opened("s")
    seen: list[list[bytes]] = []

    def other() -> None:
        with b.writing():
            seen.append(read_all(b))
            b.append(with_newlines(second))

    with a.writing():
        thread = threading.Thread(target=other)
        thread.start()
        backend.wait_blocked()
        a.append(with_newlines(first))
    thread.join()
    assert seen == [lines + first]
    assert read_all(backend.opened("s")) == lines + first + second


def test_sessions_over_the_store_record_and_verify(backend: Backend) -> None:
    context = RunContext(head_sections=[("AGENTS.md", "Keep it green.\n" * 50)], facts=[("d", "1")])
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(backend.new("s"), conversation, clock=clock) as session:
        for n in range(3):
            conversation.append({"role": "user", "content": f"step {n}"})
            reply = {"role": "assistant", "content": f"done {n}"}
            session.record_run(conversation, context, reply)
            conversation.append(reply)
        chain = session.chain
    with Session.open(backend.opened("s")) as again:
        assert [run.digest for run in again.runs()] == [context.digest] * 3
        assert again.messages() == conversation
        assert again.chain == chain
        store = again.store
        if backend.kind == "postgres":
            assert store.head() == (len(read_all(store)), chain)  # type: ignore[attr-defined]


def test_the_same_session_is_the_same_bytes_in_both_stores(tmp_path: Path, pg_dsn: str) -> None:
    from runcontext.transcript.postgres import PostgresStore

    context = RunContext(head_sections=[("AGENTS.md", "Keep it green.\n")], facts=[("d", "1")])
    conversation = [{"role": "system", "content": "You are careful."}]
    stores: list[TranscriptStore] = [
        FileStore(tmp_path / "s.jsonl"),
        PostgresStore(pg_dsn, f"s-{uuid.uuid4().hex}"),
    ]
    recorded = []
    for store in stores:
        with Session.create(store, conversation, clock=clock) as session:
            session.record_run([*conversation, {"role": "user", "content": "go"}], context)
        reopened = FileStore(tmp_path / "s.jsonl") if isinstance(store, FileStore) else store
        if isinstance(reopened, FileStore):
            reopened.open(writable=False)
        else:
            reopened = PostgresStore(pg_dsn, store.session_id)  # type: ignore[attr-defined]
        recorded.append(read_all(reopened))
    assert recorded[0] == recorded[1]
    assert [json.loads(line)["type"] for line in recorded[0]] == [
        "header",
        "message",
        "message",
        "section",
        "run-context",
    ]
    assert os.path.getsize(tmp_path / "s.jsonl") == sum(len(line) + 1 for line in recorded[0])


def test_a_session_opened_read_only_refuses_to_append(backend: Backend) -> None:
    conversation = [{"role": "system", "content": "You are careful."}]
    Session.create(backend.new("s"), conversation, clock=clock).close()
    with Session.open(backend.new("s"), writable=False) as session:
        assert not session.writable
        with pytest.raises(ValueError, match="read-only"):
            session.append_messages([{"role": "user", "content": "hi"}])


def test_open_or_create_starts_then_resumes_the_same_session(backend: Backend) -> None:
    first = [{"role": "user", "content": "Is T-1 open?"}]
    with Session.open_or_create(backend.new("oc"), first) as session:
        session.record_run(first, None, {"role": "assistant", "content": "Yes."})
    conversation = [*first, {"role": "assistant", "content": "Yes."}]
    with Session.open_or_create(backend.new("oc"), conversation) as session:
        assert session.messages() == conversation  # opened, not created again
        assert session.writable
        assert len(session.runs()) == 1


def test_open_or_create_refuses_another_conversation(backend: Backend) -> None:
    Session.open_or_create(backend.new("other"), [{"role": "user", "content": "a"}]).close()
    with pytest.raises(SeedMismatchError, match="does not continue this transcript"):
        Session.open_or_create(backend.new("other"), [{"role": "user", "content": "b"}])


def test_open_or_create_from_racing_threads_makes_one_session(backend: Backend) -> None:
    seed = [{"role": "user", "content": "race"}]
    sessions: list[Session] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            sessions.append(Session.open_or_create(backend.new("race"), seed))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({session.chain for session in sessions}) == 1  # one transcript, opened by all
    for session in sessions:
        session.close()
    assert len(read_all(backend.opened("race"))) == 2  # header and message 0, written once
