"""The file store and the PostgreSQL store side by side: appends, fleet size, open-and-verify.

    eval "$(.ci/postgres.sh start)"      # or set RUNCONTEXT_TEST_POSTGRES_DSN to a server
    python benches/bench_store.py

Prints medians:
- appends/s (``append_messages`` of one ~250-byte message, one transaction each) by 8
  processes into one session, and by 8 processes into 8 sessions;
- the size of 50 agents sharing an 8 KB AGENTS.md, with 20 runs each (1,000 runs in all) and
  with 1,000 runs each: the file store holds the body once per session (50 times), the
  PostgreSQL store once per tenant;
- the time to open and verify a 10,000-run session from each store.

It creates a database of its own on the server (dropped at the end). Without a server it
prints the file store's figures and says how to start one.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runcontext import RunContext
from runcontext.transcript.files import FileStore
from runcontext.transcript.session import Session
from runcontext.transcript.store import TranscriptStore

from _timing import fmt_time, median_seconds

SEED = {"role": "system", "content": "You are a careful coding agent working in this repo."}
AGENTS = "".join(f"Rule {i}: keep the build green and explain every change.\n" for i in range(150))
MESSAGE = {"role": "user", "content": "x" * 200}
PROCESSES = 8
APPENDS = 150  # per process
AGENTS_IN_FLEET = 50
FLEET_RUNS = (20, 1_000)  # 1,000 runs across the fleet, and 1,000 runs per agent
LONG_RUNS = 10_000

Opener = Callable[[str], TranscriptStore]


def clock() -> datetime:
    return datetime(2025, 1, 31, 9, 30, tzinfo=UTC)


def context(n: int) -> RunContext:
    moment = datetime(2025, 1, 31, 9, 30, tzinfo=UTC) + timedelta(minutes=n)
    return RunContext(
        head_sections=[("AGENTS.md", AGENTS)],
        facts=[("time", moment.isoformat()), ("branch", "main"), ("run", str(n))],
        tail_sections=[("notes", "CI is green; nothing urgent.")],
    )


def record_runs(session: Session, runs: int) -> None:
    conversation: list[dict[str, str]] = [SEED]
    for n in range(runs):
        conversation.append({"role": "user", "content": f"Step {n}: run the tests. " * 2})
        reply = {"role": "assistant", "content": f"Step {n} done, tests pass. " * 6}
        session.record_run(conversation, context(n), reply)
        conversation.append(reply)


def _worker(open_store: Opener, name: str, barrier: Any) -> None:
    with Session.open(open_store(name)) as session:
        barrier.wait()
        for _ in range(APPENDS):
            session.append_messages([MESSAGE])


def append_rate(open_store: Opener, names: list[str], repeat: int = 3) -> float:
    """Median appends/s of PROCESSES processes, process i appending to ``names[i]``."""
    ctx = multiprocessing.get_context("fork")
    rates = []
    for sample in range(repeat):
        targets = [f"{name}-{sample}" for name in names]
        for target in sorted(set(targets)):
            Session.create(open_store(target), [SEED], clock=clock).close()
        barrier = ctx.Barrier(PROCESSES + 1)
        procs = [
            ctx.Process(target=_worker, args=(open_store, target, barrier)) for target in targets
        ]
        for proc in procs:
            proc.start()
        barrier.wait()
        start = time.perf_counter()
        for proc in procs:
            proc.join()
            assert proc.exitcode == 0, proc.exitcode
        rates.append(PROCESSES * APPENDS / (time.perf_counter() - start))
    return statistics.median(rates)


def file_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def main() -> None:
    dsn = os.environ.get("RUNCONTEXT_TEST_POSTGRES_DSN")
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)

        def file_store(target: str) -> TranscriptStore:
            return FileStore(directory / f"{target}.jsonl")

        postgres = None if dsn is None else _Postgres(dsn)
        try:
            stores: list[tuple[str, Opener]] = [("file", file_store)]
            if postgres is not None:
                stores.append(("PostgreSQL", postgres.store))
            else:
                print(
                    "PostgreSQL: no server (RUNCONTEXT_TEST_POSTGRES_DSN is not set; start one "
                    'with `eval "$(.ci/postgres.sh start)"`): file store only\n'
                )
            _appends(stores)
            _fleet(directory, dsn)
            _open_long(directory, stores)
        finally:
            if postgres is not None:
                postgres.drop()


def _appends(stores: list[tuple[str, Opener]]) -> None:
    print(f"appends/s, {PROCESSES} processes × {APPENDS} append_messages each (median of 3)")
    for label, opener in stores:
        one = append_rate(opener, ["one"] * PROCESSES)
        many = append_rate(opener, [f"agent{i}" for i in range(PROCESSES)])
        print(f"  {label:<11} one session {one:9,.0f}/s   {PROCESSES} sessions {many:9,.0f}/s")


def _fleet(directory: Path, dsn: str | None) -> None:
    for runs in FLEET_RUNS:
        path = directory / f"fleet-agent-{runs}.jsonl"
        with Session.create(path, [SEED], clock=clock) as session:
            record_runs(session, runs)
        lines = file_lines(path)
        per_file = path.stat().st_size
        print(
            f"\n{AGENTS_IN_FLEET} agents × {runs:,} runs each, one {len(AGENTS):,}-byte "
            "AGENTS.md (every agent's session as this one)"
        )
        size = AGENTS_IN_FLEET * per_file
        print(f"  file store, {AGENTS_IN_FLEET} files (body once per session) {size:12,} bytes")
        if dsn is None:
            continue
        postgres = _Postgres(dsn)  # a database of its own, so its size is the fleet's
        try:
            for agent in range(AGENTS_IN_FLEET):
                with postgres.store(f"fleet-{agent}") as store:
                    store.create(lines)
            logical, total = postgres.sizes()
        finally:
            postgres.drop()
        print(f"  PostgreSQL, lines + bodies (body once per tenant) {logical:12,} bytes")
        print(f"  PostgreSQL, tables + indexes on disk              {total:12,} bytes")


def _open_long(directory: Path, stores: list[tuple[str, Opener]]) -> None:
    path = directory / "long.jsonl"
    with Session.create(path, [SEED], clock=clock) as session:
        record_runs(session, LONG_RUNS)
    lines = file_lines(path)
    print(f"\nopen and verify a {LONG_RUNS:,}-run session ({len(lines):,} records, median of 5)")
    for label, opener in stores:
        if label != "file":
            store = opener("long")
            try:
                store.create(lines)
            finally:
                store.close()
        target = "long"

        def reopen(opener: Opener = opener, target: str = target) -> None:
            Session.open(opener(target), writable=False).close()

        print(f"  {label:<11} {fmt_time(median_seconds(reopen, repeat=5))}")


class _Postgres:
    """A database of the benchmark's own on the server ``dsn`` names."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        from runcontext.transcript.postgres import init_schema

        self._server = dsn
        self._name = f"rc_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self._name}"'.encode())
        self.dsn = psycopg.conninfo.make_conninfo(dsn, dbname=self._name)
        init_schema(self.dsn)

    def store(self, target: str) -> Any:
        from runcontext.transcript.postgres import PostgresStore

        return PostgresStore(self.dsn, target, tenant="bench")

    def sizes(self) -> tuple[int, int]:
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            row = conn.execute(
                "SELECT (SELECT coalesce(sum(octet_length(line)), 0) FROM runcontext_records)"
                " + (SELECT coalesce(sum(octet_length(text)), 0) FROM runcontext_sections),"
                " pg_total_relation_size('runcontext_records')"
                " + pg_total_relation_size('runcontext_sections')"
                " + pg_total_relation_size('runcontext_sessions')"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self._server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{self._name}" WITH (FORCE)'.encode())


if __name__ == "__main__":
    main()
