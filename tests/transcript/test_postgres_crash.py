"""SIGKILL a PostgreSQL writer at random moments: every committed run is there and whole, and
no run is there in part (its transaction is rolled back by the server)."""

from __future__ import annotations

import importlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chained import new_session, verify_chain

from runcontext.transcript.store import read_all

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.transcript.postgres import PostgresStore  # noqa: E402

WRITER = Path(__file__).with_name("pg_writer.py")
KILLS = 50


@pytest.mark.slow
def test_killed_writers_leave_only_whole_committed_runs(pg_dsn: str) -> None:
    rng = random.Random(20261201)
    with PostgresStore(pg_dsn, "crash") as store:
        store.create(new_session())
    env = {**os.environ, "PYTHONPATH": str(WRITER.parent)}
    acknowledged: set[str] = set()
    # At one kill, chosen by the seeded generator, the writer kills itself with two of a run's
    # three records appended, so a kill inside a transaction is certain.
    certain = rng.randrange(KILLS)
    for kill in range(KILLS):
        mode = "runs-die" if kill == certain else "runs"
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), pg_dsn, "crash", "default", str(kill), "100000", mode],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the writer is connected and committing runs
        assert first.startswith(b"ack "), first
        # The moment is random (seeded), not a timing assertion: anywhere within a few runs.
        if kill != certain:
            time.sleep(rng.uniform(0, 0.05))
            proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
        proc.wait()
        for ack in (first + rest).split(b"\n"):
            if ack.startswith(b"ack "):
                acknowledged.add(f"w{kill}-r{int(ack[4:])}")
        with PostgresStore(pg_dsn, "crash") as store:
            lines = read_all(store)
            assert store.head() == (len(lines), json.loads(lines[-1])["chain"])
        verify_chain(lines)
        added = [json.loads(line) for line in lines[len(new_session()) :]]
        assert len(added) % 3 == 0, f"kill {kill}: a partial run"
        present = set()
        for i in range(0, len(added), 3):
            user, envelope, reply = added[i : i + 3]
            assert (user["type"], envelope["type"], reply["type"]) == (
                "message",
                "run-context",
                "message",
            ), f"kill {kill}: run at record {i} is not whole"
            assert reply["message"]["content"] == user["message"]["content"] + " reply"
            present.add(user["message"]["content"])
        assert acknowledged <= present, f"kill {kill}: committed runs missing"
        if kill == certain:
            assert proc.returncode == -signal.SIGKILL
            assert f"w{kill}-r2" in present and f"w{kill}-r3" not in present
    assert len(acknowledged) >= KILLS
