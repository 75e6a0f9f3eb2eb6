"""Eight writer processes into one PostgreSQL session, and into eight sessions sharing section
bodies: nothing lost, duplicated or interleaved; the chain verifies; one body per digest."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chained import new_session, verify_chain

from runcontext.transcript.store import read_all

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.transcript.postgres import PostgresStore  # noqa: E402

WRITER = Path(__file__).with_name("pg_writer.py")
WRITERS = 8
BLOCKS = 250  # two records each: 500 records per writer


def run_writers(dsn: str, sessions: list[str], tenant: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(WRITER.parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), dsn, sessions[w], tenant, str(w), str(BLOCKS), "pairs"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for w in range(WRITERS)
    ]
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err.decode()


def check_session(lines: list[bytes], writers: list[int]) -> None:
    verify_chain(lines)
    added = lines[len(new_session()) :]
    assert len(added) == 2 * BLOCKS * len(writers)
    seen: dict[int, list[int]] = {w: [] for w in writers}
    for i in range(0, len(added), 2):
        shared, msg = json.loads(added[i]), json.loads(added[i + 1])
        # Each block's two records are adjacent: a section, then its writer's message.
        assert shared["type"] == "section" and msg["type"] == "message"
        writer, k = msg["message"]["content"][1:].split("-")
        seen[int(writer)].append(int(k))
    indices = [json.loads(line)["index"] for line in lines if b'"type":"message"' in line]
    assert indices == list(range(len(indices)))
    for writer in writers:
        assert seen[writer] == list(range(BLOCKS)), f"writer {writer}: lost or reordered blocks"


@pytest.mark.slow
def test_eight_writers_into_one_session(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, "shared", tenant="acme") as store:
        store.create(new_session())
    run_writers(pg_dsn, ["shared"] * WRITERS, "acme")
    with PostgresStore(pg_dsn, "shared", tenant="acme") as store:
        lines = read_all(store)
        assert store.head() == (len(lines), json.loads(lines[-1])["chain"])
    check_session(lines, list(range(WRITERS)))


@pytest.mark.slow
def test_eight_writers_into_eight_sessions_sharing_sections(pg_dsn: str) -> None:
    names = [f"agent-{w}" for w in range(WRITERS)]
    for name in names:
        with PostgresStore(pg_dsn, name, tenant="acme") as store:
            store.create(new_session())
    run_writers(pg_dsn, names, "acme")
    for w, name in enumerate(names):
        with PostgresStore(pg_dsn, name, tenant="acme") as store:
            check_session(read_all(store), [w])
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT tenant, count(*), count(DISTINCT digest) FROM runcontext_sections GROUP BY 1"
        ).fetchall()
    # The four shared bodies and new_session()'s one, each stored once for the whole fleet.
    assert rows == [("acme", 5, 5)]


def _session_writer(dsn: str, writer: int, count: int) -> None:
    from runcontext.transcript.session import Session

    with Session.open(dsn) as session:
        for k in range(count):
            session.append_messages([{"role": "user", "content": f"w{writer}-{k}"}])


@pytest.mark.slow
def test_eight_session_writers_and_the_session_verifies(pg_dsn: str) -> None:
    import multiprocessing

    from runcontext.transcript.session import Session

    dsn = f"{pg_dsn}&session=fleet"
    seed = {"role": "system", "content": "You are careful."}
    Session.create(dsn, [seed]).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_session_writer, args=(dsn, w, 60)) for w in range(WRITERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    with Session.open(dsn, writable=False) as session:  # verifies every line's chain
        messages = session.messages()
        chain = session.chain
        assert session.store.head() == (len(messages) + 1, chain)  # type: ignore[attr-defined]
    assert messages[0] == seed
    for writer in range(WRITERS):
        mine = [m["content"] for m in messages[1:] if m["content"].startswith(f"w{writer}-")]
        assert mine == [f"w{writer}-{k}" for k in range(60)]
    assert len(messages) == 1 + WRITERS * 60
