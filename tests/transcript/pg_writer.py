"""A writer process for the concurrency and crash tests: appends to one PostgreSQL session.

    python pg_writer.py DSN SESSION TENANT WRITER BLOCKS MODE

Each of BLOCKS ``writing()`` blocks reads what other writers appended, then appends, chained to
the last line: in mode ``pairs`` a section (from a pool of four shared texts) and a message;
in mode ``runs`` a whole run (a user message, a run-context and the reply), one ``append`` per
record so a kill often lands inside the transaction; mode ``runs-die`` SIGKILLs itself after
the second record of its fourth run, which certainly does. After each block commits it prints
``ack K`` and flushes, so the parent knows what was committed.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from chained import chain_lines, message, run_context, section

from runcontext.transcript.postgres import PostgresStore

POOL = [section("AGENTS.md", f"Shared instructions, version {n}.\n" * 200) for n in range(4)]


def main() -> None:
    dsn, session_id, tenant, writer, blocks, mode = sys.argv[1:]
    with PostgresStore(dsn, session_id, tenant=tenant) as store:
        cursor: object | None = None
        last = b""
        next_index = next_run = 0
        for k in range(int(blocks)):
            with store.writing():
                while True:
                    lines, cursor = store.read(cursor)
                    if not lines:
                        break
                    last = lines[-1]
                    for line in lines:
                        record = json.loads(line)
                        if record["type"] == "message":
                            next_index = record["index"] + 1
                        elif record["type"] == "run-context":
                            next_run = record["run"] + 1
                if mode == "pairs":
                    shared = POOL[(int(writer) + k) % len(POOL)]
                    records = [shared, message(next_index, f"w{writer}-{k}")]
                else:
                    records = [
                        message(next_index, f"w{writer}-r{k}"),
                        run_context(max(next_run, 1), [], next_index + 1),
                        message(next_index + 1, f"w{writer}-r{k} reply", role="assistant"),
                    ]
                lines = chain_lines(records, previous=last)
                if mode == "pairs":
                    store.append(lines)
                else:
                    for number, line in enumerate(lines):
                        if mode == "runs-die" and k == 3 and number == 2:
                            os.kill(os.getpid(), signal.SIGKILL)
                        store.append([line])
            print(f"ack {k}", flush=True)


if __name__ == "__main__":
    main()
