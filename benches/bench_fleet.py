"""The fleet questions on a store of 1,000 sessions × 200 runs, and many sessions in one
process through one connection pool versus a connection each.

    eval "$(.ci/postgres.sh start)"      # or set RUNCONTEXT_TEST_POSTGRES_DSN to a server
    python benches/bench_fleet.py [SESSIONS [RUNS]]

1. Builds the store: two template sessions are recorded through ``Session`` (200 runs each:
   AGENTS.md moving to a new version every 20 runs, a ``branch`` fact cycling through five
   values, a ``date`` fact; the "rare" template tells one AGENTS.md version nobody else is
   told), then copied in SQL, ``INSERT … SELECT`` over ``generate_series``, into SESSIONS
   sessions (default 1,000) across 10 tenants, the rare one into 5 of them. Each copy's
   records keep their lines (so every copy opens and verifies) and the trigger fills the run
   columns from them as for any insert; the copies' ``time`` and ``updated`` columns are
   shifted by an hour per session, so time ranges select some sessions and not others (the
   lines keep the template's times: the columns are what the questions read).
2. Times each question (median of 7, after one warm-up) through the Python API, and once
   through the command line (median of 3 new processes: the interpreter's start-up included,
   beside two floors: ``runcontext --version``, and the same with the modules a question
   imports, psycopg among them), and prints the plan (``EXPLAIN ANALYZE``) of each query, so
   the indexes used are shown.
3. Records runs into 64 sessions from 8 threads in one process, first with a store (so a
   connection) per session, then with every store borrowing from one
   ``psycopg_pool.ConnectionPool`` of at most 8: runs/s and the connections the database saw.
4. What schema version 2 costs a writer: the server's time per run-context row inserted (the
   trigger parsing the line, the run columns' indexes) in a version 1 and a version 2
   database.

It creates a database of its own on the server and drops it at the end.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool

from runcontext import RunContext
from runcontext.transcript import Session
from runcontext.transcript.fleet import find_runs, list_sessions
from runcontext.transcript.postgres import PostgresStore, init_schema

SEED = {"role": "system", "content": "You are a careful coding agent working in this repo."}
T0 = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
AGENTS_RULES = "".join(
    f"Rule {i}: keep the build green and explain every change.\n" for i in range(60)
)
BRANCHES = ("main", "release", "dev", "hotfix", "docs")
TENANTS = 10
RARE_COPIES = 5
POOL_SESSIONS = 64
POOL_THREADS = 8
POOL_RUNS = 10  # per session
CLI = "import sys; from runcontext.cli import main; sys.exit(main())"
# What `sessions` and `find` import before they send their query.
CLI_IMPORTS = (
    "import runcontext.cli.sessions, runcontext.cli.find, runcontext.transcript._fleet_postgres"
)


def agents(version: int) -> tuple[str, str]:
    return ("AGENTS.md", f"AGENTS.md version {version}\n{AGENTS_RULES}")


def context(run: int, version: int) -> RunContext:
    day = (T0 + timedelta(minutes=run)).date().isoformat()
    return RunContext(
        head_sections=[agents(version)],
        facts=[("date", day), ("branch", BRANCHES[run % len(BRANCHES)])],
        tail_sections=[("notes", f"Run {run // 50} notes.\n")],
    )


def record_template(dsn: str, session_id: str, runs: int, *, rare: bool) -> None:
    moments = iter(T0 + timedelta(seconds=18 * n) for n in range(10 * runs))
    session = Session.create(
        dsn, [SEED], session_id=session_id, tenant="template", clock=lambda: next(moments)
    )
    messages: list[dict[str, Any]] = [SEED]
    for run in range(runs):
        messages = [*messages, {"role": "user", "content": f"Please do task {run}. " * 8}]
        version = 10_000 if rare and run == runs // 2 else run // 20
        reply = {"role": "assistant", "content": f"Done with task {run}. " * 12}
        session.record_run(messages, context(run, version), reply)
        messages.append(reply)
    session.close()


def build(dsn: str, sessions: int, runs: int) -> None:
    record_template(dsn, "common", runs, rare=False)
    record_template(dsn, "rare", runs, rare=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Session n: tenant t{n % 10}, id s{n}; the rare template for the first five.
        conn.execute(
            "CREATE TEMP TABLE copies AS"
            f" SELECT n, 't' || (n % {TENANTS}) AS tenant, 's' || n AS session_id,"
            f"  CASE WHEN n < {RARE_COPIES} THEN 'rare' ELSE 'common' END AS template,"
            "  interval '1 hour' * n AS shift"
            f" FROM generate_series(0, {int(sessions)} - 1) AS n"
        )
        conn.execute(
            "INSERT INTO runcontext_sections (tenant, digest, name, text)"
            " SELECT DISTINCT c.tenant, s.digest, s.name, s.text"
            " FROM runcontext_sections AS s CROSS JOIN (SELECT DISTINCT tenant FROM copies) AS c"
            " WHERE s.tenant = 'template'"
        )
        conn.execute(
            "INSERT INTO runcontext_sessions"
            " (tenant, session_id, format_version, records, chain, created, updated)"
            " SELECT c.tenant, c.session_id, s.format_version, s.records, s.chain,"
            "        s.created + c.shift, s.updated - interval '2000 hours' + c.shift"
            " FROM copies AS c JOIN runcontext_sessions AS s"
            "   ON s.tenant = 'template' AND s.session_id = c.template"
        )
        conn.execute(
            "INSERT INTO runcontext_records (tenant, session_id, seq, type, run, time,"
            " context_digest, section_digest, size, line)"
            " SELECT c.tenant, c.session_id, r.seq, r.type, r.run, r.time + c.shift,"
            "        r.context_digest, r.section_digest, r.size, r.line"
            " FROM copies AS c JOIN runcontext_records AS r"
            "   ON r.tenant = 'template' AND r.session_id = c.template"
            " ORDER BY c.n, r.seq"
        )
        conn.execute("DELETE FROM runcontext_sessions WHERE tenant = 'template'")
        conn.execute("DELETE FROM runcontext_sections WHERE tenant = 'template'")
        conn.execute("VACUUM ANALYZE")


def median(fn: Callable[[], object], repeat: int = 7) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def asked_query(ask: Callable[[], object]) -> tuple[Any, Any]:
    """The query (and its parameters) that ``ask`` sends: the one EXPLAIN is shown for."""
    seen: list[tuple[Any, Any]] = []
    execute = psycopg.Connection.execute

    def spy(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        seen.append((query, params))
        return execute(self, query, params, **kwargs)

    psycopg.Connection.execute = spy  # type: ignore[method-assign]
    try:
        ask()
    finally:
        psycopg.Connection.execute = execute  # type: ignore[method-assign]
    return seen[-1]


def explain(dsn: str, query: Any, params: Any) -> list[str]:
    """The plan lines of the query that name a scan or an index, and its execution time."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        text = psycopg.ClientCursor(conn).mogrify(query, params)
        rows = conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {text}".encode()).fetchall()
    return [row[0] for row in rows if "Scan" in row[0] or "Execution" in row[0]]


def questions(dsn: str, sessions: int) -> None:
    rare = context(0, 10_000).sections[0].digest
    middle = T0 + timedelta(hours=sessions // 2)
    later = middle + timedelta(hours=1)
    asked: list[tuple[str, Callable[[], list[Any]], list[str]]] = [
        ("sessions: newest 100 of all tenants", lambda: list_sessions(dsn), ["sessions", dsn]),
        (
            "sessions: tenant t3, newest 100",
            lambda: list_sessions(dsn, tenant="t3"),
            ["sessions", dsn, "--tenant", "t3"],
        ),
        (
            "find: runs told the rare AGENTS.md (by digest)",
            lambda: find_runs(dsn, section_digest=rare),
            ["find", dsn, "--digest", rare],
        ),
        (
            "find: branch=release in one hour, all tenants",
            lambda: find_runs(dsn, facts={"branch": "release"}, since=middle, until=later),
            ["find", dsn, "--fact", "branch=release", "--since", middle.isoformat(),
             "--until", later.isoformat()],
        ),
        (
            "find: section AGENTS.md and branch=hotfix, tenant t3",
            lambda: find_runs(dsn, section_name="AGENTS.md", facts={"branch": "hotfix"},
                              tenant="t3"),
            ["find", dsn, "--section", "AGENTS.md", "--fact", "branch=hotfix", "--tenant", "t3"],
        ),
    ]  # fmt: skip

    def process(*args: str, repeat: int = 3) -> float:
        """The median wall time of a new ``python`` process running ``args``."""
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, *args], check=False, stdout=subprocess.DEVNULL)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    floor = process("-c", CLI, "--version", repeat=5)
    imports = process("-c", f"{CLI_IMPORTS}; {CLI}", "--version", repeat=5)
    print(
        f"\nCLI start-up (median of 5 processes): `runcontext --version` {floor * 1e3:.0f} ms;"
        f" with the modules `sessions` and `find` import {imports * 1e3:.0f} ms"
    )
    print(
        "\nquestion                                               API (median)  CLI (median of 3)"
    )
    plans = []
    for title, ask, argv in asked:
        found = len(ask())
        api = median(ask)
        cli = process("-c", CLI, *argv, "--limit", "100")
        print(f"{title:<55}{api * 1e3:8.1f} ms {cli * 1e3:10.0f} ms   ({found} found)")
        plans.append((title, explain(dsn, *asked_query(ask))))
    for title, plan in plans:
        print(f"\nEXPLAIN ANALYZE, {title}:")
        for line in plan:
            print(f"  {line}")


def pooled(dsn: str) -> None:
    def drive(stores: list[PostgresStore]) -> tuple[float, int]:
        peak = [0]
        stop = threading.Event()
        name = urlsplit(dsn).path.lstrip("/")

        def watch() -> None:
            with psycopg.connect(dsn, autocommit=True) as conn:
                while not stop.is_set():
                    (count,) = conn.execute(
                        "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %s", (name,)
                    ).fetchone() or (0,)
                    peak[0] = max(peak[0], int(count))
                    time.sleep(0.01)

        opened = [Session.create(store, [SEED]) for store in stores]
        watcher = threading.Thread(target=watch)
        watcher.start()

        def work(mine: list[Session]) -> None:
            for run in range(POOL_RUNS):
                for session in mine:
                    messages = [*session.messages(), {"role": "user", "content": f"q{run}"}]
                    session.record_run(
                        messages, context(run, 0), {"role": "assistant", "content": "ok"}
                    )

        threads = [
            threading.Thread(target=work, args=(opened[t::POOL_THREADS],))
            for t in range(POOL_THREADS)
        ]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        stop.set()
        watcher.join()
        for session in opened:
            session.close()
        return POOL_SESSIONS * POOL_RUNS / elapsed, peak[0]

    print(
        f"\n{POOL_SESSIONS} sessions, {POOL_THREADS} threads, {POOL_RUNS} runs each, one process:"
    )
    tag = uuid.uuid4().hex[:6]
    each = [PostgresStore(dsn, f"own-{tag}-{n}") for n in range(POOL_SESSIONS)]
    rate, peak = drive(each)
    print(f"  a connection per session: {rate:7.0f} runs/s, {peak} connections")
    with psycopg_pool.ConnectionPool(dsn, min_size=2, max_size=POOL_THREADS, open=True) as pool:
        shared = [
            PostgresStore(pool=pool, session_id=f"pool-{tag}-{n}") for n in range(POOL_SESSIONS)
        ]
        rate, peak = drive(shared)
        print(f"  one pool (max {POOL_THREADS}):       {rate:7.0f} runs/s, {peak} connections")


def append_cost(server: str) -> None:
    """Server time per run-context row inserted, schema version 1 against 2 (the trigger
    parsing the line, the run columns' indexes): 4,000 copies of one real row per sample,
    databases in turn."""
    from runcontext.transcript.postgres import _SCHEMA

    samples: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(4):
        for version in (1, 2):
            name = f"rc_bench_v{version}_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"'.encode())
            parts = urlsplit(server)
            dsn = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
            try:
                if version == 1:
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute(
                            "CREATE TABLE runcontext_schema_version (version integer NOT NULL,"
                            " installed timestamptz NOT NULL DEFAULT now())"
                        )
                        for statement in _SCHEMA:
                            conn.execute(statement.encode())
                        conn.execute("INSERT INTO runcontext_schema_version VALUES (1)")
                else:
                    init_schema(dsn)
                with Session.create(dsn, [SEED], session_id="s") as session:
                    messages = [SEED, {"role": "user", "content": "q"}]
                    session.record_run(
                        messages, context(1, 0), {"role": "assistant", "content": "ok"}
                    )
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(
                        "INSERT INTO runcontext_sessions (tenant, session_id, format_version,"
                        " records) VALUES ('default', 'copy', 2, 0)"
                    )
                    start = time.perf_counter()
                    conn.execute(
                        "INSERT INTO runcontext_records (tenant, session_id, seq, type, run, time,"
                        " context_digest, size, line)"
                        " SELECT 'default', 'copy', n, type, run, time, context_digest, size, line"
                        " FROM runcontext_records, generate_series(1, 4000) AS n"
                        " WHERE session_id = 's' AND type = 'run-context'"
                    )
                    samples[version].append((time.perf_counter() - start) / 4000)
            finally:
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())
    print("\nserver time per run-context row inserted (4 samples of 4,000 rows, median):")
    for version, times in samples.items():
        print(f"  schema version {version}: {statistics.median(times) * 1e6:5.0f} µs")


def main() -> None:
    server = os.environ.get("RUNCONTEXT_TEST_POSTGRES_DSN")
    if not server:
        sys.exit('set RUNCONTEXT_TEST_POSTGRES_DSN (eval "$(.ci/postgres.sh start)")')
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    name = f"rc_bench_fleet_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(server)
    dsn = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        init_schema(dsn)
        start = time.perf_counter()
        build(dsn, sessions, runs)
        with psycopg.connect(dsn, autocommit=True) as conn:
            (records,) = conn.execute("SELECT count(*) FROM runcontext_records").fetchone() or (0,)
            (size,) = conn.execute("SELECT pg_database_size(current_database())").fetchone() or (0,)
        print(
            f"built {sessions} sessions × {runs} runs ({records:,} records, "
            f"{size / 1e6:.0f} MB on disk) in {time.perf_counter() - start:.1f} s"
        )
        with Session.open(dsn, session_id="s7", tenant="t7", writable=False) as copy:
            assert len(copy.runs()) == runs  # a copy opens and verifies
        questions(dsn, sessions)
        pooled(dsn)
        append_cost(server)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


if __name__ == "__main__":
    main()
