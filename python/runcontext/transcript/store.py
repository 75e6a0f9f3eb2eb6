"""Where a transcript's records live: the interface every store implements, and
:func:`open_store`, which gives the store a path or a ``postgresql://`` URI names.

A store keeps one session's records as the exact canonical line bytes (docs/TRANSCRIPT.md) in
order; it knows nothing of what a record means. :class:`runcontext.transcript.Session` does
the format (through the core), the checks and the state, over any store, so the file and the
PostgreSQL store cannot drift: the same lines go in, the same lines come out, and
``runcontext transcript copy`` moves a session between them byte for byte.

The contract, which the behavioural test suite (``tests/transcript/``) checks for every store:

* ``create(lines)`` stores a new session holding ``lines`` (its header and first messages)
  atomically: afterwards the session exists with all of them, or, on any error, not at all.
  A session that already exists raises :class:`FileExistsError` and is left untouched.
* ``read(cursor)`` returns the complete records stored after ``cursor`` (``None``: from the
  first) and the cursor after the last of them. Lines carry no trailing newline. A store may
  return a partial batch (it bounds memory); calling again with the new cursor continues.
  Each line is at most ``max_line_bytes``; a longer one raises
  :class:`~runcontext.transcript.errors.TranscriptFormatError` naming it, without reading it
  into memory.
* ``writing()`` is a context manager for one append: it excludes every other writer of the
  session, on any machine, for its duration. Inside it, ``read`` sees every record committed
  before it was entered, and ``append(lines)`` adds records after them. When the block exits
  normally the appended records are committed together; when it raises, none of them are
  (a crash has the same effect: a run's records are whole or absent). The file store
  approximates this (a crash mid-batch leaves the whole records written before it and at most
  one torn line, which readers detect); stores with transactions do it exactly.
  ``append`` returns the cursor after the records it appended, so the session reads on from
  there (the file store's is the file's length after the write).
* ``close()`` releases what the store holds; it is idempotent.

What only some stores can do is a capability of its own, a protocol the session checks by
what the store offers, never by its class, so a new store needs no edit to the session:

* :class:`OpenedStore`: ``open(writable=...)`` opens an existing session for reading or for
  appending too (``writable=None``: for appending when this process may), and ``writable``
  says which. A store without it is opened by being made, and is writable unless it has a
  ``writable`` attribute that says otherwise.
* :class:`TornTailStore`: the store's last line can be left incomplete by a writer that was
  killed (a file; a store with transactions never has one). Its cursors are byte offsets;
  ``partial`` is the length of the incomplete line after the last ``read``; ``writer_active()``
  says whether a writer holds the lock now, without waiting; ``shared()`` holds the lock that
  writers wait for while a reader looks again; ``truncate(size)`` cuts the incomplete line off
  (``repair=True``).
* :class:`ChunkedStore`: ``read_chunks(cursor)`` is ``read`` with the lines handed over joined
  by newlines in a few large chunks, which the core splits (no object per line), when
  ``chunked`` is true.
* :class:`PathStore`: the session lives in a file, whose ``path`` the session reports.
* :class:`AppendCheckedStore`: ``check_appendable()`` raises what an append would raise now
  for a reason of the store's own (a file replaced since it was opened), without writing.
* :class:`GuardedAppendStore`: ``append_if_current(cursor, lines)`` appends without taking
  the writers' lock, in one step, if the session still ends where the caller read it to
  (``cursor``) and the store last found it; it returns the cursor after the lines, or ``None``
  with nothing written (another writer appended since, or the store cannot tell), and the
  session then appends as usual, under the lock.

Cursors are opaque to the session (a byte offset for the file, a sequence number for
PostgreSQL). Stores raise :class:`~runcontext.transcript.errors.TranscriptError` subclasses
for what is wrong with the data, :class:`FileNotFoundError` for a session that does not
exist, :class:`PermissionError` for a store that may not be written, and ``OSError`` (or the
driver's connection error, wrapped in a ``TranscriptError`` naming the store) for the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

# A record longer than this is refused on read unless the caller raises the cap: a hostile or
# damaged file must not make a reader allocate without bound (docs/TRANSCRIPT.md, Limits).
from runcontext._core import DEFAULT_MAX_LINE_BYTES
from runcontext.transcript.errors import shown_name
from runcontext.transcript.files import FileStore

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "AppendCheckedStore",
    "ChunkedStore",
    "GuardedAppendStore",
    "OpenedStore",
    "PathStore",
    "TornTailStore",
    "TranscriptStore",
    "is_postgres_dsn",
    "open_store",
    "read_all",
]


@runtime_checkable
class TranscriptStore(Protocol):
    """One session's records, in order, as canonical line bytes (see the module docstring)."""

    @property
    def name(self) -> str:
        """What error messages call this session: a path, or ``postgresql://…#session``."""
        ...

    def create(self, lines: Sequence[bytes]) -> None: ...

    def read(self, cursor: object | None) -> tuple[list[bytes], object | None]: ...

    def writing(self) -> AbstractContextManager[None]: ...

    def append(self, lines: Sequence[bytes]) -> object | None: ...

    def close(self) -> None: ...


@runtime_checkable
class OpenedStore(Protocol):
    """A store that opens an existing session for reading, or for appending too."""

    @property
    def writable(self) -> bool: ...

    def open(self, *, writable: bool | None) -> None: ...


@runtime_checkable
class TornTailStore(Protocol):
    """A store whose last line a killed writer can leave incomplete; cursors are byte
    offsets."""

    @property
    def partial(self) -> int: ...

    def writer_active(self) -> bool: ...

    def shared(self) -> AbstractContextManager[None]: ...

    def truncate(self, size: int) -> None: ...


@runtime_checkable
class ChunkedStore(Protocol):
    """A store that can hand over its lines joined in large chunks."""

    @property
    def chunked(self) -> bool: ...

    def read_chunks(self, cursor: object | None) -> tuple[list[bytes], object | None]: ...


@runtime_checkable
class PathStore(Protocol):
    """A store that keeps the session in a file."""

    @property
    def path(self) -> Path: ...


@runtime_checkable
class AppendCheckedStore(Protocol):
    """A store that can say, without writing, that an append would be refused."""

    def check_appendable(self) -> None: ...


@runtime_checkable
class GuardedAppendStore(Protocol):
    """A store that can append without the writers' lock when nobody appended since."""

    def append_if_current(self, cursor: object | None, lines: Sequence[bytes]) -> object | None: ...


def read_all(store: TranscriptStore) -> list[bytes]:
    """Every record of ``store``, in order, as line bytes (for copying or checking a whole
    session; :class:`~runcontext.transcript.Session` reads batch by batch instead)."""
    lines: list[bytes] = []
    cursor: object | None = None
    while True:
        batch, cursor = store.read(cursor)
        if not batch:
            return lines
        lines.extend(batch)


def is_postgres_dsn(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL store (a ``postgresql://``/``postgres://`` URI)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_store(
    target: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    session_id: str | None = None,
    tenant: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    durable: bool = False,
) -> TranscriptStore:
    """The store ``target`` names: what ``Session.create``/``Session.open`` and the command
    line accept wherever they take a transcript.

    A path gives a :class:`~runcontext.transcript.files.FileStore` (which opens nothing until
    ``Session.open`` or its own ``open``); ``session_id`` and ``tenant`` are refused for it, as
    a file holds one session. A ``postgresql://host/db?session=ID&tenant=T`` URI (or
    ``postgres://``) gives a connected :class:`~runcontext.transcript.postgres.PostgresStore`
    (``session_id=`` and ``tenant=`` may stand in for the query parameters; the session id is
    required, the tenant defaults to ``"default"``); it needs the ``postgres`` extra, which is
    imported only then. ``durable`` is the file store's (PostgreSQL commits are as durable as
    the server is configured to make them).
    """
    if not isinstance(target, str):  # bytes or a path object: the file store's str form
        target = os.fsdecode(target)
    if is_postgres_dsn(target):
        # Imported here: psycopg is an optional dependency, which a file store never needs.
        from runcontext.transcript.postgres import PostgresStore

        return PostgresStore(target, session_id, tenant=tenant, max_line_bytes=max_line_bytes)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", target)
    if scheme is not None:
        raise ValueError(
            f"{shown_name(target)}: unknown store scheme {scheme.group(1)!r}; give a path or a "
            "postgresql:// URI"
        )
    if session_id is not None or tenant is not None:
        raise ValueError(
            f"{shown_name(target)}: session_id and tenant are for a PostgreSQL store; a "
            "transcript file holds one session"
        )
    return FileStore(target, durable=durable, max_line_bytes=max_line_bytes)
