"""A :class:`~runcontext.transcript.Session` for asyncio code.

Every call that reads or writes the store runs in a worker thread (``asyncio.to_thread``), so
waiting for another writer's lock, an ``fsync`` or a database round trip never blocks the event
loop. One implementation serves both: the record format and its checks are CPU work in the
core, the store calls are few per run, and the session's own lock makes the threads safe. (A
native ``psycopg.AsyncConnection`` store would save a thread hop per append and duplicate every
store; docs/TRANSCRIPT.md, *PostgreSQL store*, says why that trade was not taken.)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from runcontext._core import RunContext
from runcontext.transcript.session import Compaction, Elision, Run, Session
from runcontext.transcript.store import TranscriptStore

__all__ = ["AsyncSession"]

T = TypeVar("T")


async def _thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    # asyncio is imported by the code that awaits this, not by every user of a transcript.
    import asyncio

    return await asyncio.to_thread(function, *args, **kwargs)


class AsyncSession:
    """``await AsyncSession.create(...)`` / ``await AsyncSession.open(...)`` take the arguments
    of :meth:`Session.create` / :meth:`Session.open`; the methods are those of a
    :class:`Session`, awaited. :attr:`session` is the session itself (``Loop`` takes either)."""

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"session: expected a Session, got {type(session).__name__}")
        self._session = session

    @classmethod
    async def create(
        cls,
        path: str | os.PathLike[str] | TranscriptStore,
        messages: Sequence[Mapping[str, Any]],
        **options: Any,
    ) -> AsyncSession:
        return cls(await _thread(functools.partial(Session.create, **options), path, messages))

    @classmethod
    async def open_or_create(
        cls,
        path: str | os.PathLike[str] | TranscriptStore,
        messages: Sequence[Mapping[str, Any]],
        **options: Any,
    ) -> AsyncSession:
        opened = functools.partial(Session.open_or_create, **options)
        return cls(await _thread(opened, path, messages))

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str] | TranscriptStore, **options: Any
    ) -> AsyncSession:
        return cls(await _thread(functools.partial(Session.open, **options), path))

    @property
    def session(self) -> Session:
        return self._session

    @property
    def chain(self) -> str:
        return self._session.chain

    async def record_run(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext | None = None,
        reply: Mapping[str, Any] | None = None,
        *,
        tokens: Mapping[str, Any] | None = None,
        edits: Literal["refuse", "record"] = "refuse",
    ) -> Run:
        return await _thread(
            self._session.record_run, messages, context, reply, tokens=tokens, edits=edits
        )

    async def compact(
        self,
        start: int,
        end: int,
        messages: Sequence[Mapping[str, Any]],
        **options: Any,
    ) -> Compaction:
        """:meth:`Session.compact`, in a worker thread."""
        return await _thread(self._session.compact, start, end, messages, **options)

    async def elide(self, stubs: Mapping[int, Mapping[str, Any]]) -> Elision:
        return await _thread(self._session.elide, stubs)

    async def trim(self, keep: int, **options: Any) -> Compaction | None:
        return await _thread(self._session.trim, keep, **options)

    async def reconcile(
        self, messages: Sequence[Mapping[str, Any]], **options: Any
    ) -> Compaction | Elision | None:
        return await _thread(self._session.reconcile, messages, **options)

    async def messages_at(self, run: int) -> list[Any]:
        return await _thread(self._session.messages_at, run)

    async def edits(self) -> list[Compaction | Elision]:
        return await _thread(self._session.edits)

    async def append_messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        await _thread(self._session.append_messages, messages)

    async def messages(self) -> list[Any]:
        return await _thread(self._session.messages)

    async def runs(self) -> list[Run]:
        return await _thread(self._session.runs)

    async def context_at(self, run: int) -> RunContext:
        return await _thread(self._session.context_at, run)

    async def check_conversation(self, messages: Sequence[Mapping[str, Any]]) -> None:
        await _thread(self._session.check_conversation, messages)

    async def refresh(self) -> None:
        await _thread(self._session.refresh)

    async def close(self) -> None:
        await _thread(self._session.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncSession of {self._session!r}>"
