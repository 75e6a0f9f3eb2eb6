"""Session transcripts: an append-only JSONL file of the conversation and of each run's context.

The context stays out of the conversation, yet a transcript must answer "what was this agent
told, that day?". Each run gets a small ``run-context`` envelope (digests, facts, a timestamp);
a section body is stored once per transcript however many runs repeat it, so forty runs with
the same 8 KB AGENTS.md cost forty envelopes, not 320 KB.

Every line is one canonical JSON record (RFC 8785). Writers append under an exclusive
``flock``, each record with one ``write`` of the whole line on an ``O_APPEND`` descriptor, so
lines never interleave and a crash leaves at most one torn last line, which
:meth:`Session.open` reports and repairs only when asked. Readers take no lock: they read the
complete lines and leave alone a last line that a writer is still appending. The format is
specified in ``docs/TRANSCRIPT.md``.

Create a transcript with :meth:`Session.create` (it needs the conversation's first message, its
seed); resume or read one with :meth:`Session.open`, then :meth:`Session.check_conversation` the
conversation you are about to continue (:class:`runcontext.Loop` does so on every run).
"""

from __future__ import annotations

import copy
import errno
import fcntl
import os
import threading
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from runcontext._core import RunContext, digest, digest_bytes
from runcontext._splice import check_messages
from runcontext.errors import RunContextError
from runcontext.transcript._records import (
    TRANSCRIPT_VERSION,
    Clock,
    Envelope,
    Structure,
    check_fields,
    fail,
    header_line,
    message_body,
    message_digest,
    message_line,
    parse_line,
    read_header,
    read_message,
    read_run_context,
    read_section,
    run_context_line,
    section_line,
    structure,
    timestamp,
    utc_now,
)
from runcontext.transcript.errors import (
    ConversationMismatchError,
    SeedMismatchError,
    TornTranscriptError,
    TornTranscriptWarning,
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
)

__all__ = [
    "TRANSCRIPT_VERSION",
    "ConversationMismatchError",
    "Run",
    "SeedMismatchError",
    "Session",
    "TornTail",
    "TornTranscriptError",
    "TornTranscriptWarning",
    "TranscriptDigestError",
    "TranscriptError",
    "TranscriptFormatError",
    "TranscriptVersionError",
]

# Why opening a file for writing failed when it can still be read: fall back to read-only.
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


@dataclass(frozen=True)
class TornTail:
    """An incomplete last record: it starts on ``line``, at byte ``offset``, ``length`` bytes."""

    line: int
    offset: int
    length: int


@dataclass(frozen=True)
class Run:
    """One recorded run.

    ``number`` counts from 1; ``time`` is the envelope's UTC timestamp; ``messages`` is how many
    conversation messages the request carried (the tail followed message ``messages - 1``);
    ``context`` is the RunContext rebuilt from the transcript, and ``context.digest == digest``
    (verified when the transcript was read).
    """

    number: int
    time: datetime
    digest: str
    messages: int
    context: RunContext


class _Mark(NamedTuple):
    """What the session has read, to roll back to if applying a record is interrupted."""

    offset: int
    lines: int
    messages: int
    envelopes: int
    last_message_line: int


def _check_reply(reply: object) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping):
        raise TypeError(
            f"reply: expected a message mapping with a 'role', got {type(reply).__name__}"
        )
    if "role" not in reply:
        raise TypeError("reply: the message has no 'role' key")
    return reply


class Session:
    """An append-only JSONL transcript of one conversation and of the context of each run.

    Use :meth:`create` for a new transcript and :meth:`open` to read or resume one. A session
    holds an open file descriptor: :meth:`close` it, or use it as a context manager.
    """

    def __init__(self) -> None:
        raise TypeError("use Session.create(path, messages) or Session.open(path)")

    # --- creating and opening ---------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        messages: Sequence[Mapping[str, Any]],
        *,
        durable: bool = False,
        clock: Clock | None = None,
    ) -> Session:
        """Start a transcript at ``path`` for the conversation ``messages`` and open it.

        ``messages`` is the conversation so far; it must hold at least the message at index 0,
        whose digest becomes the transcript's seed. They are all recorded. The file appears
        complete or not at all (written aside, then hard-linked into place); an existing file
        is never overwritten (``FileExistsError``).
        """
        check_messages(messages)
        if len(messages) == 0:
            raise ValueError(
                "messages: a transcript needs the conversation's first message (its seed); "
                "create the session once the conversation has one"
            )
        clock = utc_now if clock is None else clock
        target = Path(path)
        # Encode every message first: a bad one is refused naming its index, before anything
        # is written, and the seed digest hashes the bytes already encoded.
        bodies = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]
        data = header_line(digest_bytes(bodies[0]), timestamp(clock)) + b"".join(
            message_line(i, body) for i, body in enumerate(bodies)
        )
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            # link() fails if the target exists, and a reader never sees a half-written header.
            os.link(temporary, target)
        finally:
            os.unlink(temporary)
        if durable:
            _fsync_directory(target.parent)
        return cls.open(target, writable=True, durable=durable, clock=clock)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        repair: bool = False,
        writable: bool | None = None,
        durable: bool = False,
        clock: Clock | None = None,
    ) -> Session:
        """Read and verify the transcript at ``path``; the session can then append to it.

        Every record is checked (canonical JSON, known type and fields, section digests, each
        run's rebuilt context digest); the first bad line raises a :class:`TranscriptError`
        naming it. A torn last line (a writer killed mid-append) is reported with a
        :class:`TornTranscriptWarning` and :attr:`torn`; the complete records before it stay
        readable, and appending is refused until the file is opened with ``repair=True``,
        which truncates the torn bytes (:attr:`repaired` then says what was removed).

        ``writable=None`` (the default) opens the file for appending if this process may write
        it and read-only otherwise (:attr:`writable` says which); ``writable=True`` insists on
        appending (``PermissionError`` if it cannot), ``writable=False`` only reads.
        ``durable=True`` makes every append ``fsync`` the file before returning.
        """
        if repair and writable is False:
            raise ValueError("repair=True needs a writable session: repairing truncates the file")
        can_write = writable is not False
        if can_write:
            try:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
            except OSError as error:
                if writable or repair or error.errno not in _READ_ONLY_ERRNOS:
                    raise
                can_write = False  # only readable here: read it, and say so if asked to append
        if not can_write:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self = object.__new__(cls)
        self._setup(Path(path), fd, writable=can_write, durable=durable, clock=clock)
        try:
            with self._thread_lock:
                if repair:
                    with self._file_lock(fcntl.LOCK_EX):
                        self._update_torn(self._read_new(), warn=False)
                        self._check_header()
                        if self._torn is not None:
                            os.ftruncate(fd, self._torn.offset)
                            if durable:
                                os.fsync(fd)
                            self._repaired, self._torn = self._torn, None
                else:
                    self._refresh(warn=False)
                    self._check_header()
        except BaseException:
            self.close()
            raise
        if self._torn is not None:
            self._warn_torn(stacklevel=3)
        return self

    def _setup(
        self, path: Path, fd: int, *, writable: bool, durable: bool, clock: Clock | None
    ) -> None:
        self._path = path
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        self._writable = writable
        self._durable = durable
        self._clock = utc_now if clock is None else clock
        self._thread_lock = threading.RLock()  # threads of one process share the descriptor
        self._offset = 0  # bytes of complete records read so far
        self._lines = 0  # complete lines read so far
        self._seed = ""
        self._created = datetime.min.replace(tzinfo=UTC)
        self._messages: list[Any] = []
        self._last_message_line = 0  # the line of the last message record
        self._last_digest: tuple[int, str] | None = None  # (index, digest) of a recorded message
        self._sections: dict[str, tuple[str, str]] = {}  # digest -> (name, text)
        self._envelopes: list[Envelope] = []
        self._contexts: dict[Structure, RunContext] = {}  # each verified context, built once
        self._torn: TornTail | None = None
        self._repaired: TornTail | None = None

    def close(self) -> None:
        """Close the file descriptor (idempotent)."""
        self._closer()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<Session {os.fspath(self._path)!r}: {len(self._messages)} messages, "
            f"{len(self._envelopes)} runs>"
        )

    # --- properties -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def seed(self) -> str:
        """The digest of the conversation's message at index 0 when the transcript started."""
        return self._seed

    @property
    def created(self) -> datetime:
        """The header's UTC timestamp."""
        return self._created

    @property
    def durable(self) -> bool:
        return self._durable

    @property
    def writable(self) -> bool:
        """Whether the session can append (see the ``writable`` argument of :meth:`open`)."""
        return self._writable

    @property
    def torn(self) -> TornTail | None:
        """The torn last record, if the file ends with one (appends are refused until repaired)."""
        return self._torn

    @property
    def repaired(self) -> TornTail | None:
        """The torn record that ``open(..., repair=True)`` truncated, if there was one."""
        return self._repaired

    @property
    def message_count(self) -> int:
        """How many conversation messages the transcript records (as last read)."""
        return len(self._messages)

    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read (and verify) the records other writers appended since this session last looked.

        The reading methods call it; appends do it under their lock. It takes no lock: a last
        line that another writer is still appending is left for the next refresh.
        """
        with self._thread_lock:
            self._refresh(warn=True)

    def messages(self) -> list[Any]:
        """The conversation alone, in order, as recorded (never a context); a fresh copy."""
        with self._thread_lock:
            self._refresh(warn=True)
            return copy.deepcopy(self._messages)

    def runs(self) -> list[Run]:
        """Every run, each with its RunContext rebuilt from the transcript."""
        with self._thread_lock:
            self._refresh(warn=True)
            return [self._run(envelope) for envelope in self._envelopes]

    def context_at(self, run: int) -> RunContext:
        """The RunContext of run number ``run`` (1-based), rebuilt from the transcript."""
        with self._thread_lock:
            self._refresh(warn=True)
            if isinstance(run, bool) or not isinstance(run, int):
                raise TypeError(f"run: expected a run number (int), got {type(run).__name__}")
            if not 1 <= run <= len(self._envelopes):
                span = f"runs 1 to {len(self._envelopes)}" if self._envelopes else "no runs yet"
                raise IndexError(
                    f"{os.fspath(self._path)}: no run {run}: the transcript has {span}"
                )
            return self._run(self._envelopes[run - 1]).context

    # --- checking ---------------------------------------------------------------------------

    def check_seed(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a conversation whose index-0 message is not this transcript's seed.

        Raises :class:`SeedMismatchError` showing both digests. A RunContext is never part of
        this check: the next run may say something completely different.
        """
        check_messages(messages)
        given = message_digest(messages[0], "messages[0]") if len(messages) else None
        if given != self._seed:
            shown = "it is empty" if given is None else f"its message 0 has digest {given}"
            raise SeedMismatchError(
                f"the conversation does not continue this transcript: {shown}, but the "
                f"transcript's seed (message 0 when it started) is {self._seed}; pass the "
                "conversation it records (session.messages()) or start a new transcript with "
                "Session.create",
                path=self._path,
                recorded=self._seed,
                given=given,
            )

    def check_conversation(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a conversation that does not continue the one this transcript records.

        The checks :meth:`record_run` makes, without writing: message 0 is the seed
        (:class:`SeedMismatchError`), the conversation is at least as long as the recorded one,
        and its message at the index of the last recorded message has that message's digest
        (:class:`ConversationMismatchError` naming the index and both digests). Messages
        between the first and the last recorded one are not compared: see
        ``docs/TRANSCRIPT.md``, *The conversation check*.
        """
        self.check_seed(messages)
        with self._thread_lock:
            self._refresh(warn=True)
            self._check_continues(messages)

    def check_appendable(self) -> None:
        """Raise the error an append would raise now, without writing anything.

        ``ValueError`` for a closed or read-only session, :class:`TornTranscriptError` for a
        file that ends with a torn record. :class:`runcontext.Loop` calls it before it spends a
        request on a run it could not record.
        """
        self._check_writable()
        with self._thread_lock:
            self._refresh(warn=False)
            self._check_not_torn()

    def _check_continues(self, messages: Sequence[Mapping[str, Any]]) -> None:
        recorded = len(self._messages)
        if len(messages) < recorded:
            raise ConversationMismatchError(
                f"the conversation has {len(messages)} messages but the transcript already "
                f"records {recorded}; a transcript is append-only: pass the whole "
                "conversation, or start a new transcript with Session.create",
                path=self._path,
                line=None,
            )
        if recorded < 2:
            return  # nothing recorded, or only message 0, which the seed check covers
        last = recorded - 1
        if self._last_digest is None or self._last_digest[0] != last:
            self._last_digest = (last, digest(self._messages[last]))
        expected = self._last_digest[1]
        given = message_digest(messages[last], f"messages[{last}]")
        if given != expected:
            raise ConversationMismatchError(
                f"the conversation does not continue this transcript: its message {last} has "
                f"digest {given}, but the transcript's message {last} (the last recorded) has "
                f"digest {expected}; pass the conversation it records (session.messages() plus "
                "the new messages) or start a new transcript with Session.create",
                path=self._path,
                line=self._last_message_line,
                index=last,
                recorded=expected,
                given=given,
            )

    # --- appending --------------------------------------------------------------------------

    def append_messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Append ``messages`` to the recorded conversation, each as one ``message`` record."""
        check_messages(messages)
        bodies = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]

        def build() -> list[bytes]:
            start = len(self._messages)
            return [message_line(start + offset, body) for offset, body in enumerate(bodies)]

        self._append(build)

    def record_run(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext | None = None,
        reply: Mapping[str, Any] | None = None,
    ) -> Run:
        """Record one run, under one lock: the conversation as sent, its context, the reply.

        ``messages`` is the whole conversation the request carried: it must continue the
        recorded one (:meth:`check_conversation`, checked again under the lock), and the
        messages the transcript does not hold yet are appended. Then come a ``section`` record
        for each section body not already in the file, the ``run-context`` envelope, and
        ``reply`` (if given) as the next message. ``context=None`` is the empty context.
        """
        self.check_seed(messages)
        context = RunContext() if context is None else context
        if not isinstance(context, RunContext):
            raise TypeError(f"context: expected a RunContext, got {type(context).__name__}")
        reply_body = None if reply is None else message_body(_check_reply(reply), "reply")
        number = [0]  # the run number given under the lock

        def build() -> list[bytes]:
            self._check_continues(messages)
            recorded = len(self._messages)
            lines = [
                message_line(index, message_body(messages[index], f"messages[{index}]"))
                for index in range(recorded, len(messages))
            ]
            written: set[str] = set()
            for section in context.sections:
                if section.digest not in self._sections and section.digest not in written:
                    written.add(section.digest)
                    lines.append(section_line(section.digest, section.name, section.text))
            number[0] = len(self._envelopes) + 1
            lines.append(
                run_context_line(number[0], context, timestamp(self._clock), len(messages))
            )
            if reply_body is not None:
                lines.append(message_line(len(messages), reply_body))
            return lines

        self._append(build, context)
        envelope = self._envelopes[number[0] - 1]
        return Run(
            number=envelope.number,
            time=envelope.time,
            digest=context.digest,
            messages=len(messages),
            context=context,
        )

    def _check_writable(self) -> None:
        if not self._closer.alive:
            raise ValueError(f"{os.fspath(self._path)}: the session is closed")
        if not self._writable:
            raise ValueError(
                f"{os.fspath(self._path)}: the session is read-only (opened with "
                "writable=False, or the file is not writable by this process); open it with "
                "writable=True to append"
            )

    def _check_not_torn(self) -> None:
        if self._torn is not None:
            raise TornTranscriptError(
                f"the file ends with a torn record ({self._torn.length} bytes without a "
                "newline, from a writer that was killed mid-append); appending after it "
                "would corrupt the next record: reopen with Session.open(path, "
                "repair=True) to truncate it",
                path=self._path,
                line=self._torn.line,
            )

    def _append(self, build: Callable[[], list[bytes]], context: RunContext | None = None) -> None:
        self._check_writable()
        with self._thread_lock, self._file_lock(fcntl.LOCK_EX):
            # Another writer may have appended since we last looked: read its records first so
            # message indices, run numbers and section dedupe stay right.
            self._update_torn(self._read_new(), warn=False)
            self._check_not_torn()
            lines = build()  # encodes everything before the first write: a bad value writes nothing
            self._write(lines)
            for data in lines:
                self._apply(data[:-1], trusted=True, context=context)

    def _write(self, lines: list[bytes]) -> None:
        """Write each line with one ``write`` (finishing a short one under the lock), then
        ``fsync`` once if durable: one fsync makes the whole batch durable."""
        written = 0
        try:
            for data in lines:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                written += 1
            if self._durable:
                os.fsync(self._fd)
        except BaseException as error:
            # A failed or interrupted write (disk full, a signal) must not leave a torn line for
            # the next writer to glue its record onto. Its complete lines stay, as a crash at
            # this point would leave them: a lock-free reader may already have read them.
            complete = self._offset + sum(len(data) for data in lines[:written])
            with suppress(OSError):  # if this fails too, the next open reports a torn line
                os.ftruncate(self._fd, complete)
            if written:
                error.add_note(
                    f"runcontext: {written} of the {len(lines)} records of this append were "
                    f"written to {os.fspath(self._path)} before it failed"
                )
            raise

    # --- locking and reading the file -------------------------------------------------------

    @contextmanager
    def _file_lock(self, operation: int) -> Iterator[None]:
        fcntl.flock(self._fd, operation)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _refresh(self, *, warn: bool) -> None:
        """Read new complete records without a lock (the caller holds the thread lock).

        A partial last line is either an append in progress or a torn record. Which one is
        decided without waiting: if a writer holds the lock, it is still writing, and the line
        is left for later; otherwise it is read again under a shared lock (the writer may have
        finished in between), and what is still partial is torn.
        """
        if not self._closer.alive:
            raise ValueError(f"{os.fspath(self._path)}: the session is closed")
        partial = self._read_new()
        if partial:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                partial = 0  # a writer holds the lock: an append in progress, not a torn line
            else:
                try:
                    partial = self._read_new()
                finally:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._update_torn(partial, warn=warn)

    def _read_new(self) -> int:
        """Apply the complete lines appended since the last read; return the length of a
        partial last line (0 if the file ends with a newline)."""
        size = os.fstat(self._fd).st_size
        if size < self._offset:
            raise TranscriptError(
                f"the file is {size} bytes, shorter than the {self._offset} bytes of records "
                "already read: another program truncated or rewrote it; reopen it",
                path=self._path,
                line=None,
            )
        chunks: list[bytes] = []
        position = self._offset
        while position < size:
            chunk = os.pread(self._fd, size - position, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
        data = b"".join(chunks)
        end = data.rfind(b"\n") + 1
        start = 0
        while start < end:
            stop = data.index(b"\n", start)
            self._apply(data[start:stop], trusted=False)
            start = stop + 1
        return len(data) - end

    def _update_torn(self, partial: int, *, warn: bool) -> None:
        previous = self._torn
        self._torn = (
            TornTail(line=self._lines + 1, offset=self._offset, length=partial) if partial else None
        )
        if warn and self._torn is not None and self._torn != previous:
            self._warn_torn(stacklevel=5)  # the caller of messages(), runs(), refresh(), …

    def _warn_torn(self, *, stacklevel: int) -> None:
        torn = self._torn
        assert torn is not None
        warnings.warn(
            TornTranscriptWarning(
                f"{os.fspath(self._path)}:{torn.line}: the last record is torn ({torn.length} "
                "bytes without a newline, probably a writer killed mid-append); the "
                f"{self._lines} complete records before it are readable; open with "
                "repair=True to truncate it before appending"
            ),
            stacklevel=stacklevel,
        )

    def _check_header(self) -> None:
        if self._lines == 0:
            raise TranscriptFormatError(
                "no header record: the file is empty or holds only a torn first line; "
                "it is not a transcript (create one with Session.create)",
                path=self._path,
                line=1,
            )

    # --- parsing records --------------------------------------------------------------------

    def _apply(self, raw: bytes, *, trusted: bool, context: RunContext | None = None) -> None:
        """Ingest one complete line and move past it, or, if that fails or is interrupted,
        leave the session as it was: what it holds always matches the file up to its offset."""
        mark = _Mark(
            self._offset,
            self._lines,
            len(self._messages),
            len(self._envelopes),
            self._last_message_line,
        )
        try:
            self._ingest(raw, mark.lines + 1, trusted=trusted, context=context)
            self._offset = mark.offset + len(raw) + 1
            self._lines = mark.lines + 1
        except BaseException:
            self._offset, self._lines = mark.offset, mark.lines
            del self._messages[mark.messages :]
            del self._envelopes[mark.envelopes :]
            self._last_message_line = mark.last_message_line
            raise

    def _ingest(
        self, raw: bytes, line: int, *, trusted: bool, context: RunContext | None = None
    ) -> None:
        """Parse, verify and apply one complete line (without its newline).

        ``trusted`` lines are the ones this session just wrote: their canonical form, section
        digests and the digest of ``context`` (the run's own) are known already.
        """
        record = parse_line(raw, self._path, line, trusted=trusted)
        kind = record["type"]
        if kind == "header" or line == 1:
            self._seed, self._created = read_header(record, self._path, line)
            return
        check_fields(record, self._path, line)
        if kind == "message":
            index = len(self._messages)
            self._messages.append(read_message(record, self._path, line, index=index))
            self._last_message_line = line
        elif kind == "section":
            recorded, body = read_section(record, self._path, line, verify=not trusted)
            # A repeated identical body is harmless (its digest matched); writers never write one.
            self._sections[recorded] = body
        else:
            envelope = read_run_context(
                record,
                self._path,
                line,
                number=len(self._envelopes) + 1,
                recorded_messages=len(self._messages),
                sections=self._sections,
            )
            self._add_run(envelope, line, context if trusted else None)

    def _add_run(self, envelope: Envelope, line: int, known: RunContext | None) -> None:
        """Verify a run's context digest, building its context once per distinct structure."""
        context = self._contexts.get(envelope.structure)
        if context is None:
            if known is not None and known.digest == envelope.digest:
                context = known  # this session's own run: the context it was given
            else:
                context = self._build_context(envelope.structure, envelope.number, line)
        if context.digest != envelope.digest:
            raise TranscriptDigestError(
                f"run {envelope.number}'s context rebuilt from the transcript has digest "
                f"{context.digest}, but its envelope records {envelope.digest}: the file was "
                "altered",
                path=self._path,
                line=line,
            )
        self._contexts[envelope.structure] = context
        self._envelopes.append(envelope)

    def _build_context(self, recorded: Structure, number: int, line: int) -> RunContext:
        sections, facts = recorded
        head = [self._sections[d] for position, _, d in sections if position == "head"]
        tail = [self._sections[d] for position, _, d in sections if position == "tail"]
        try:
            context = RunContext(head_sections=head, facts=facts, tail_sections=tail)
        except (RunContextError, ValueError, TypeError) as error:
            fail(self._path, line, f"run {number}'s context cannot be rebuilt: {error}")
        if structure(context) != recorded:
            # The envelope names entries a RunContext would drop or change (an empty section,
            # text with trailing whitespace): a writer never records those.
            fail(
                self._path,
                line,
                f"run {number}'s sections and facts are not those of a RunContext built from "
                "them (an entry is empty or not normalised): the file was altered",
            )
        return context

    def _run(self, envelope: Envelope) -> Run:
        return Run(
            number=envelope.number,
            time=envelope.time,
            digest=envelope.digest,
            messages=envelope.messages,
            context=self._contexts[envelope.structure],
        )


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
