"""PostgreSQL appends beside the engine's own limit and the frameworks' stores, on one cluster.

    RUNCONTEXT_PG_DURABLE=1 .ci/postgres.sh start > /tmp/pg.env && . /tmp/pg.env
    python benches/bench_pg_append.py [--seconds 5] [--rounds 3] [--before DIR]

The workload of a coding agent: per turn, 2–3 new messages of 200–2,000 bytes (the user's,
sometimes a tool result, and the reply) and a RunContext holding a 4 KB AGENTS.md; 50 turns per
session, then a new session. Each system is measured by 1 process on 1 session and by 8
processes on 8 sessions (each its own), the systems in turn, ``--rounds`` times; the medians
are printed with each one's share of the engine's minimal append:

- ``pgbench``: PostgreSQL's minimal append, one 2 KB row and a counter update in one
  transaction (a custom script, prepared statements);
- runcontext ``Session.record_run`` and ``Loop.run`` (a backend that answers at once) on the
  PostgreSQL store; with ``--before DIR`` (a directory holding an earlier ``runcontext``
  package, e.g. ``git archive OLD python/runcontext | tar -x -C DIR`` plus a built ``_core``),
  the earlier code too, interleaved with the current, in a database of its own whose schema
  the earlier code creates (a store refuses a schema newer than its code's);
- LangGraph's ``PostgresSaver`` (a one-node graph over ``MessagesState``, the AGENTS.md text in
  a state channel);
- the OpenAI Agents SDK's ``SQLAlchemySession`` (``add_items`` of the turn's items, through
  SQLAlchemy's asyncio engine and psycopg).

Also per append: round trips (libpq's trace of one session's connection: each run of messages
sent that is followed by one received is a round trip), the client's CPU (each process's), the
server's CPU (every process of the cluster, read from /proc: the cluster must run on this
machine), and the bytes one turn adds at turn 50. The cluster's fsync and synchronous_commit
are printed: the figures mean something only when both are on. The frameworks are in the
``bench`` extra; a missing one is skipped with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TURNS = 50  # per session
PROCESSES = 8
AGENTS = "".join(f"Rule {i:03}: keep the build green and explain each change.\n" for i in range(72))
SYSTEMS = ("pgbench", "record_run", "record_run, locked", "Loop.run", "langgraph", "agents-sdk")
assert 4000 <= len(AGENTS) <= 4200


# -- the workload ---------------------------------------------------------------------------


def turn_messages(rng: random.Random, turn: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The new messages of one turn (1 or 2 before the reply) and the reply."""
    new = [{"role": "user", "content": f"turn {turn}: " + "u" * rng.randint(200, 2000)}]
    if rng.random() < 0.5:
        new.append({"role": "user", "content": "tool output: " + "t" * rng.randint(200, 2000)})
    reply = {"role": "assistant", "content": "a" * rng.randint(200, 2000)}
    return new, reply


def dsn_with_db(dsn: str, database: str) -> str:
    """The DSN with its database replaced (a ``postgresql://`` URI)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, ""))


# -- the systems (each run in a worker process) ---------------------------------------------


class RecordRun:
    """runcontext's Session.record_run, or Loop.run with ``loop=True``."""

    def __init__(self, dsn: str, prefix: str, *, loop: bool) -> None:
        self.dsn, self.prefix, self.use_loop = dsn, prefix, loop
        self.number = 0
        self.session: Any = None

    def new_session(self) -> None:
        import psycopg_pool

        from runcontext import Loop, Session
        from runcontext.transcript.postgres import PostgresStore

        if self.session is not None:
            self.session.close()
        else:  # one connection per process, as the other systems have, whatever the sessions
            self.pool = psycopg_pool.ConnectionPool(self.dsn, min_size=1, max_size=1)
        self.number += 1
        seed = {"role": "system", "content": "You are a careful coding agent."}
        self.messages: list[Any] = [seed]
        store = PostgresStore(pool=self.pool, session_id=f"{self.prefix}-{self.number}")
        self.session = Session.create(store, self.messages)
        self.reply: dict[str, Any] = {}
        self.loop = Loop(lambda _request: self.reply, self.session)

    def turn(self, rng: random.Random, turn: int) -> None:
        from runcontext import RunContext

        new, reply = turn_messages(rng, turn)
        context = RunContext(
            head_sections=[("AGENTS.md", AGENTS)], facts=[("branch", "main"), ("turn", str(turn))]
        )
        self.messages.extend(new)
        if self.use_loop:
            self.reply = reply
            self.loop.run(self.messages, context=context)
        else:
            self.session.record_run(self.messages, context, reply)
        self.messages.append(reply)

    def connection(self) -> Any:
        with self.pool.connection() as conn:
            return conn

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.pool.close()


class LangGraph:
    """LangGraph's PostgresSaver: one graph turn per turn."""

    def __init__(self, dsn: str, prefix: str) -> None:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.graph import START, MessagesState, StateGraph
        from psycopg.rows import dict_row

        self.conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(self.conn)

        class State(MessagesState):
            context: str

        def agent(state: State) -> dict[str, Any]:
            return {"messages": [self.reply]}

        graph = StateGraph(State)
        graph.add_node("agent", agent)
        graph.add_edge(START, "agent")
        self.graph = graph.compile(checkpointer=saver)
        self.prefix, self.number = prefix, 0
        self.reply: dict[str, Any] = {}

    def new_session(self) -> None:
        self.number += 1
        self.config = {"configurable": {"thread_id": f"{self.prefix}-{self.number}"}}

    def turn(self, rng: random.Random, turn: int) -> None:
        new, self.reply = turn_messages(rng, turn)
        self.graph.invoke({"messages": new, "context": AGENTS}, self.config)

    def connection(self) -> Any:
        return self.conn

    def close(self) -> None:
        self.conn.close()


class AgentsSDK:
    """The Agents SDK's SQLAlchemySession: add_items of the turn's items."""

    def __init__(self, dsn: str, prefix: str) -> None:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy import event
        from sqlalchemy.ext.asyncio import create_async_engine

        url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
        self.engine = create_async_engine(url, pool_size=1)
        self.raw: list[Any] = []

        @event.listens_for(self.engine.sync_engine, "connect")
        def connected(dbapi_connection: Any, _record: Any) -> None:
            self.raw.append(dbapi_connection.driver_connection)

        self.cls, self.prefix, self.number = SQLAlchemySession, prefix, 0
        self.aio = asyncio.new_event_loop()

    def new_session(self) -> None:
        self.number += 1
        self.session = self.cls(f"{self.prefix}-{self.number}", engine=self.engine)

    def turn(self, rng: random.Random, turn: int) -> None:
        new, reply = turn_messages(rng, turn)
        self.aio.run_until_complete(self.session.add_items([*new, reply]))

    def connection(self) -> Any:
        return self.raw[-1]

    def close(self) -> None:
        self.aio.run_until_complete(self.engine.dispose())
        self.aio.close()


def make_system(name: str, dsn: str, prefix: str) -> Any:
    if name == "record_run":
        return RecordRun(dsn, prefix, loop=False)
    if name == "record_run, locked":  # every append under the row lock: two round trips
        from runcontext.transcript.session import Session

        Session._append_if_current = lambda *_: False  # type: ignore[method-assign]
        return RecordRun(dsn, prefix, loop=False)
    if name == "Loop.run":
        return RecordRun(dsn, prefix, loop=True)
    if name == "langgraph":
        return LangGraph(dsn, prefix)
    if name == "agents-sdk":
        return AgentsSDK(dsn, prefix)
    raise ValueError(name)


def worker(name: str, dsn: str, prefix: str) -> None:
    """Warm up, say so, read the start and stop times (wall clock) from stdin, and append
    turns between them; print appends and CPU as JSON."""
    rng = random.Random(prefix)
    system = make_system(name, dsn, prefix)
    system.new_session()
    system.turn(rng, 0)  # warm up: connection, prepared statements, imports
    print("ready", flush=True)
    start, stop = map(float, sys.stdin.readline().split())
    turn, appends = 1, 0
    time.sleep(max(0.0, start - time.time()))
    cpu = time.process_time()
    while time.time() < stop:
        if turn == TURNS:
            system.new_session()
            turn = 0
        system.turn(rng, turn)
        turn += 1
        appends += 1
    cpu = time.process_time() - cpu
    elapsed = time.time() - start
    system.close()
    print(json.dumps({"appends": appends, "elapsed": elapsed, "cpu": cpu}))


# -- measuring ------------------------------------------------------------------------------


def server_cpu(postmaster: int) -> float:
    """CPU seconds of the cluster: its live processes, and the exited ones its postmaster
    waited for."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        if pid == postmaster:
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        elif ppid == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def run_workers(
    name: str, dsn: str, processes: int, seconds: float, pythonpath: str | None, postmaster: int
) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    tag = uuid.uuid4().hex[:8]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", name, dsn, f"{name}-{tag}-{i}"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    for process in workers:  # every worker connected and warmed up
        assert process.stdout is not None and process.stdout.readline() == "ready\n", name
    start = time.time() + 0.2
    stop = start + seconds
    for process in workers:
        assert process.stdin is not None
        process.stdin.write(f"{start} {stop}\n")
        process.stdin.flush()
    time.sleep(max(0.0, start - time.time()))
    before = server_cpu(postmaster)
    time.sleep(max(0.0, stop - time.time()))
    after = server_cpu(postmaster)
    results = []
    for process in workers:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"{name} worker failed ({process.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    appends = sum(r["appends"] for r in results)
    elapsed = max(r["elapsed"] for r in results)
    return {
        "rate": appends / elapsed,
        "client_ms": 1e3 * sum(r["cpu"] for r in results) / appends,
        "server_ms": 1e3 * (after - before) / appends,
    }


PGBENCH_SCRIPT = """\
\\set s random(1, 1000)
BEGIN;
INSERT INTO bench_append_rows (session, payload) VALUES (:s, repeat('x', 2000));
UPDATE bench_append_sessions SET n = n + 1 WHERE id = :s;
END;
"""


def pgbench(dsn: str, processes: int, seconds: float, postmaster: int) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(PGBENCH_SCRIPT)
    before_server = server_cpu(postmaster)
    before_client = os.times()
    try:
        out = subprocess.run(
            [
                "pgbench",
                "-n",
                "-M",
                "prepared",
                "-c",
                str(processes),
                "-j",
                str(processes),
                "-T",
                str(max(1, round(seconds))),
                "-f",
                script.name,
                "-d",
                dsn,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    after_client = os.times()
    after_server = server_cpu(postmaster)
    found = re.search(r"number of transactions actually processed: (\d+)", out)
    tps = re.search(r"tps = ([\d.]+)", out)
    assert found is not None and tps is not None, out
    appends = int(found.group(1))
    client = (after_client.children_user + after_client.children_system) - (
        before_client.children_user + before_client.children_system
    )
    return {
        "rate": float(tps.group(1)),
        "client_ms": 1e3 * client / appends,
        "server_ms": 1e3 * (after_server - before_server) / appends,
    }


@contextmanager
def traced(connection: Any) -> Iterator[Callable[[], int]]:
    """Count the round trips on ``connection`` (a psycopg connection) inside the block."""
    from psycopg import pq

    with tempfile.TemporaryFile("w+") as log:
        pgconn = connection.pgconn
        pgconn.trace(log.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        counted: list[int] = []
        try:
            yield lambda: counted[0]
        finally:
            pgconn.untrace()
        log.seek(0)
        trips, sending = 0, False
        for line in log:
            direction = line.split("\t", 1)[0]
            if direction == "F":
                sending = True
            elif direction == "B" and sending:
                trips, sending = trips + 1, False
        counted.append(trips)


def profile_one(name: str, dsn: str, pythonpath: str | None) -> dict[str, float]:
    """Round trips per append over one session's 50 turns, and the bytes turn 50 adds."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, __file__, "--profile", name, dsn],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def profile_worker(name: str, dsn: str) -> None:
    import psycopg

    rng = random.Random("profile")  # the same turns for every system
    prefix = f"profile-{uuid.uuid4().hex[:8]}"
    system = make_system(name, dsn, prefix)
    system.new_session()
    system.turn(rng, 0)
    with traced(system.connection()) as trips:
        for turn in range(1, TURNS - 1):
            system.turn(rng, turn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        size_before = stored_bytes(conn, name)
        system.turn(rng, TURNS - 1)
        size_after = stored_bytes(conn, name)
    system.close()
    print(json.dumps({"trips": trips() / (TURNS - 2), "bytes": size_after - size_before}))


def stored_bytes(conn: Any, name: str) -> int:
    """The bytes the system's rows hold (pg_column_size of each row), in the tables it writes."""
    tables = {
        "record_run": ("runcontext_records", "runcontext_sections", "runcontext_sessions"),
        "record_run, locked": ("runcontext_records", "runcontext_sections", "runcontext_sessions"),
        "Loop.run": ("runcontext_records", "runcontext_sections", "runcontext_sessions"),
        "langgraph": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
        "agents-sdk": ("agent_messages", "agent_sessions"),
    }[name]
    total = 0
    for table in tables:
        row = conn.execute(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} AS t")
        total += int(row.fetchone()[0])
    return total


# -- the table ------------------------------------------------------------------------------


def setup(dsn: str) -> None:
    import psycopg

    from runcontext.transcript.postgres import init_schema

    init_schema(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE bench_append_rows (id bigserial PRIMARY KEY, session integer,"
            " payload text)"
        )
        conn.execute("CREATE TABLE bench_append_sessions (id integer PRIMARY KEY, n bigint)")
        conn.execute(
            "INSERT INTO bench_append_sessions SELECT i, 0 FROM generate_series(1, 1000) AS i"
        )
    try:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
    except ImportError:
        pass
    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        async def create() -> None:
            session = SQLAlchemySession.from_url(
                "setup",
                url=dsn.replace("postgresql://", "postgresql+psycopg://", 1),
                create_tables=True,
            )
            await session.get_items()
            await session.engine.dispose()

        asyncio.run(create())
    except ImportError:
        pass


INIT_SCHEMA = (
    "import sys; from runcontext.transcript.postgres import init_schema; init_schema(sys.argv[1])"
)


def available(name: str) -> bool:
    module = {"langgraph": "langgraph.checkpoint.postgres", "agents-sdk": "sqlalchemy"}.get(name)
    if module is None:
        return True
    try:
        __import__(module)
        if name == "agents-sdk":
            __import__("agents.extensions.memory.sqlalchemy_session")
    except ImportError:
        print(f"  {name}: not installed (pip install -e '.[bench]'): skipped")
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", help="a directory holding an earlier runcontext package")
    parser.add_argument("--only", nargs="*", help="measure these systems only")
    args = parser.parse_args()
    base = os.environ.get("RUNCONTEXT_TEST_POSTGRES_DSN")
    if base is None:
        sys.exit(
            "set RUNCONTEXT_TEST_POSTGRES_DSN to a durable server: "
            "RUNCONTEXT_PG_DURABLE=1 .ci/postgres.sh start"
        )
    import psycopg

    database = f"bench_pg_append_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        settings = {
            key: admin.execute(f"SHOW {key}").fetchone()[0]  # type: ignore[index]
            for key in ("fsync", "synchronous_commit", "full_page_writes")
        }
        data = admin.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
        admin.execute(f"CREATE DATABASE {database}")
    postmaster = int(Path(data, "postmaster.pid").read_text().split()[0])
    print("cluster: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    if settings["fsync"] != "on" or settings["synchronous_commit"] != "on":
        print("  not durable: these are not the figures of a production server")
    dsn = dsn_with_db(base, database)
    before_dsn = dsn_with_db(base, f"{database}_before")
    try:
        setup(dsn)
        if args.before:
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {database}_before")
            subprocess.run(
                [sys.executable, "-c", INIT_SCHEMA, before_dsn],
                env={**os.environ, "PYTHONPATH": args.before},
                check=True,
            )

        def dsn_for(path: str | None) -> str:
            return dsn if path is None else before_dsn

        variants: list[tuple[str, str, str | None]] = []  # label, system, PYTHONPATH
        for name in SYSTEMS:
            if (args.only and name not in args.only) or not available(name):
                continue
            if args.before and name in ("record_run", "Loop.run"):
                variants.append((f"{name} (before)", name, args.before))
            variants.append((name, name, None))
        samples: dict[tuple[str, int], list[dict[str, float]]] = {}
        for round_number in range(args.rounds):
            for processes in (1, PROCESSES):
                for label, name, path in variants:
                    if name == "pgbench":
                        result = pgbench(dsn, processes, args.seconds, postmaster)
                    else:
                        result = run_workers(
                            name, dsn_for(path), processes, args.seconds, path, postmaster
                        )
                    samples.setdefault((label, processes), []).append(result)
                    print(
                        f"  round {round_number + 1}, {processes}×: {label:<22}"
                        f" {result['rate']:8,.0f} /s",
                        flush=True,
                    )
        profiles = {
            label: profile_one(name, dsn_for(path), path)
            for label, name, path in variants
            if name != "pgbench"
        }
        print_results(variants, samples, profiles, args)
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database} WITH (FORCE)")
            admin.execute(f"DROP DATABASE IF EXISTS {database}_before WITH (FORCE)")


def print_results(
    variants: list[tuple[str, str, str | None]],
    samples: dict[tuple[str, int], list[dict[str, float]]],
    profiles: dict[str, dict[str, float]],
    args: argparse.Namespace,
) -> None:
    def median(label: str, processes: int, key: str) -> float:
        return statistics.median(s[key] for s in samples[(label, processes)])

    def share(label: str, processes: int) -> str:
        """The median over rounds of the rate's share of the engine's in the same round (a
        round's samples are minutes apart at most: the disk and the neighbours change less)."""
        if ("pgbench", processes) not in samples:
            return ""
        ratios = [
            mine["rate"] / engine["rate"]
            for mine, engine in zip(
                samples[(label, processes)], samples[("pgbench", processes)], strict=True
            )
        ]
        return f" ({statistics.median(ratios):4.0%})"

    print(
        f"\nappends/s, medians of {args.rounds} rounds of {args.seconds:g} s (the median share"
        " of the engine's minimal append in the same round); per append: round trips, client"
        " and server CPU (ms); bytes turn 50 adds"
    )
    header = (
        f"{'':<22} {'1 process, 1 session':>22} {'8 processes, 8 sessions':>24}"
        f" {'trips':>6} {'client 1/8':>12} {'server 1/8':>12} {'bytes@50':>9}"
    )
    print(header)
    for label, name, _ in variants:
        cells = []
        for processes in (1, PROCESSES):
            rate = median(label, processes, "rate")
            cells.append(f"{rate:,.0f} /s{share(label, processes)}")
        trips = "4" if name == "pgbench" else f"{profiles[label]['trips']:.1f}"
        size = "–" if name == "pgbench" else f"{profiles[label]['bytes'] / 1000:.1f} KB"
        client = "/".join(f"{median(label, p, 'client_ms'):.2f}" for p in (1, PROCESSES))
        server = "/".join(f"{median(label, p, 'server_ms'):.2f}" for p in (1, PROCESSES))
        print(
            f"{label:<22} {cells[0]:>22} {cells[1]:>24} {trips:>6} {client:>12} {server:>12}"
            f" {size:>9}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--profile":
        profile_worker(sys.argv[2], sys.argv[3])
    else:
        main()
