"""A writer process for the prune-under-writers test: starts session after session in one
tenant, each recording runs told section bodies that move on with the session's number
(session i tells AGENTS.md versions i to i + 2 and notes edition i // 2): every writer names
the same bodies at about the same time, so a body is often named by the sessions being pruned
alone just as a slower writer is about to name it.

    python pg_prune_writer.py DSN TENANT WRITER SESSIONS

After each session is complete and closed it prints ``done ID`` and flushes: the parent prunes
only finished sessions. Any error ends the process with status 1 and the error on stderr.
"""

from __future__ import annotations

import sys

from fleet_data import SEED

from runcontext import RunContext
from runcontext.transcript import Session


def told(i: int, run: int, writer: str) -> RunContext:
    return RunContext(
        head_sections=[("AGENTS.md", f"Shared instructions, version {i + run}.\n" * 50)],
        facts=[("writer", writer)],
        tail_sections=[("notes", f"Notes, edition {i // 2}.\n" * 20)],
    )


def main() -> None:
    dsn, tenant, writer, sessions = sys.argv[1:]
    for i in range(int(sessions)):
        session_id = f"w{writer}-{i}"
        session = Session.create(dsn, [SEED], session_id=session_id, tenant=tenant)
        messages: list[dict[str, str]] = [SEED]
        for run in range(3):
            messages = [*messages, {"role": "user", "content": f"{session_id} q{run}"}]
            session.record_run(
                messages, told(i, run, writer), {"role": "assistant", "content": "ok"}
            )
            messages.append({"role": "assistant", "content": "ok"})
        session.close()
        print(f"done {session_id}", flush=True)


if __name__ == "__main__":
    main()
