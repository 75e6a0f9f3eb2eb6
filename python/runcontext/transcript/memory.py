"""Checking a transcript held in memory: :func:`verify_bytes`.

It reads the bytes through the same :class:`~runcontext.transcript.Session` code as a file
(a read-only store over the bytes), so a port's conformance check, a transcript fetched from
elsewhere and a file on disk are verified by one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from runcontext._core import DEFAULT_MAX_LINE_BYTES
from runcontext.transcript.files import LineTooLong
from runcontext.transcript.session import Compaction, Elision, Run, Session, TornTail

__all__ = ["BytesStore", "Verified", "verify_bytes"]


class BytesStore:
    """A read-only :class:`~runcontext.transcript.store.TranscriptStore` over bytes."""

    writable = False

    def __init__(self, data: bytes, *, name: str, max_line_bytes: int) -> None:
        self._data = bytes(data)
        self._name = name
        self._max_line_bytes = max_line_bytes
        self.partial = 0

    @property
    def name(self) -> str:
        return self._name

    def create(self, lines: Sequence[bytes]) -> None:
        raise PermissionError(f"{self._name}: a transcript in memory is read-only")

    def read(self, cursor: object | None) -> tuple[list[bytes], int]:
        position = 0 if cursor is None else int(cursor)  # type: ignore[call-overload]
        lines: list[bytes] = []
        data = self._data
        while True:
            end = data.find(b"\n", position)
            stop = len(data) if end < 0 else end
            if stop - position > self._max_line_bytes:
                raise LineTooLong(lines, position, self._max_line_bytes)
            if end < 0:
                break
            lines.append(data[position:end])
            position = end + 1
        self.partial = len(data) - position
        return lines, position

    def writing(self) -> AbstractContextManager[None]:
        raise PermissionError(f"{self._name}: a transcript in memory is read-only")

    def append(self, lines: Sequence[bytes]) -> None:
        raise PermissionError(f"{self._name}: a transcript in memory is read-only")

    def close(self) -> None:
        pass

    # A TornTailStore: bytes that end without a newline are a torn last line (nobody is
    # writing them), and there is nothing to repair in memory.

    def writer_active(self) -> bool:
        return False

    def shared(self) -> AbstractContextManager[None]:
        return nullcontext()

    def truncate(self, size: int) -> None:
        raise PermissionError(f"{self._name}: a transcript in memory is read-only")


@dataclass(frozen=True)
class Verified:
    """What a verified transcript holds: its current conversation, its runs (each context
    rebuilt and checked), the last record's chain (``None`` for version 1, whose records carry
    none), a torn last line if any, and whether it is version 1 (``unchained``); ``sent`` is
    the conversation each run was sent (by run, as ``Session.messages_at``), ``edits`` every
    compaction and elision with the messages it added (a compaction's replacement, an
    elision's stubs in index order)."""

    messages: list[Any]
    runs: tuple[Run, ...]
    chain: str | None
    torn: TornTail | None
    unchained: bool
    sent: tuple[list[Any], ...] = ()
    edits: tuple[tuple[Compaction | Elision, list[Any]], ...] = ()


def verify_bytes(
    data: bytes, *, name: str = "<bytes>", max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Verified:
    """Verify a whole transcript given as bytes, as :meth:`Session.open` verifies a file.

    Raises the :class:`~runcontext.transcript.TranscriptError` of the first line that fails
    (its ``kind`` and ``line`` as docs/TRANSCRIPT.md's refusal table says); a torn last line
    warns, as it does for a file, and is returned as ``torn``. ``max_line_bytes`` is the line
    cap, at least 1, as for :meth:`Session.open`.
    """
    store = BytesStore(data, name=name, max_line_bytes=max_line_bytes)
    with Session.open(store, writable=False, max_line_bytes=max_line_bytes) as session:
        return Verified(
            messages=session.messages(),
            runs=tuple(session.runs()),
            chain=None if session.version == 1 else session.chain,
            torn=session.torn,
            unchained=session.version == 1,
            sent=tuple(session.messages_at(run.number) for run in session.runs()),
            edits=tuple((edit, session.edit_messages(i)) for i, edit in enumerate(session.edits())),
        )
