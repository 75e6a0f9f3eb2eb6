"""Where a transcript's records live: the interface every store implements.

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
  there (the file store returns ``None``: the session counts its bytes itself).
* ``close()`` releases what the store holds; it is idempotent.

Cursors are opaque to the session (a byte offset for the file, a sequence number for
PostgreSQL). Stores raise :class:`~runcontext.transcript.errors.TranscriptError` subclasses
for what is wrong with the data, :class:`FileNotFoundError` for a session that does not
exist, :class:`PermissionError` for a store that may not be written, and ``OSError`` (or the
driver's connection error, wrapped in a ``TranscriptError`` naming the store) for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

# A record longer than this is refused on read unless the caller raises the cap: a hostile or
# damaged file must not make a reader allocate without bound (docs/TRANSCRIPT.md, Limits). The
# core's constant, re-exported here; the modules `runcontext log` needs import it from the core,
# so that listing a transcript does not import this module (and typing and contextlib with it).
from runcontext._core import DEFAULT_MAX_LINE_BYTES

__all__ = ["DEFAULT_MAX_LINE_BYTES", "TranscriptStore", "read_all"]


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
