"""Sessions for the fleet tests: real runs recorded through ``Session`` at chosen times, into
a PostgreSQL database or a directory of files."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runcontext import RunContext
from runcontext.transcript import Session

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SEED = {"role": "system", "content": "You are careful."}


def agents(version: int) -> tuple[str, str]:
    return ("AGENTS.md", f"Keep the build green (version {version}).\n")


def context(version: int, branch: str, *tail: tuple[str, str]) -> RunContext:
    return RunContext(
        head_sections=[agents(version)], facts=[("branch", branch)], tail_sections=list(tail)
    )


def _clock(start: datetime) -> Iterator[datetime]:
    moment = start
    while True:
        yield moment
        moment += timedelta(seconds=1)


def record(
    target: Any,
    contexts: Sequence[RunContext],
    *,
    start: datetime = T0,
    **store: Any,
) -> Session:
    """A session at ``target`` (a path, a URI or a store) with one run per context, the
    first recorded at ``start`` and each a minute after the one before; closed."""
    ticks = _clock(start)
    session = Session.create(target, [SEED], clock=lambda: next(ticks), **store)
    messages: list[dict[str, Any]] = [SEED]
    for number, told in enumerate(contexts):
        messages = [*messages, {"role": "user", "content": f"question {number}"}]
        ticks = _clock(start + timedelta(minutes=number))
        session.record_run(messages, told, {"role": "assistant", "content": f"answer {number}"})
        messages.append({"role": "assistant", "content": f"answer {number}"})
    session.close()
    return session


def file_session(directory: Path, name: str, contexts: Sequence[RunContext], **kw: Any) -> Path:
    path = directory / name
    record(path, contexts, **kw)
    return path
