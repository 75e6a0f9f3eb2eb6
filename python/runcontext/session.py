"""Session transcripts: an append-only JSONL file of the conversation and of each run's context.

The context stays out of the conversation, yet a transcript must answer "what was this agent
told, that day?". Each run gets a small ``run-context`` envelope (digests, facts, a timestamp);
a section body is stored once per transcript however many runs repeat it, so forty runs with
the same 8 KB AGENTS.md cost forty envelopes, not 320 KB.

Every line is one canonical JSON record (RFC 8785) written with a single ``write`` of the whole
line on an ``O_APPEND`` descriptor, under an exclusive ``flock``: concurrent writers never
interleave, and a crash leaves at most one torn last line, which :meth:`Session.open` reports
and repairs only when asked. The format is specified in ``docs/TRANSCRIPT.md``.

Create a transcript with :meth:`Session.create` (it needs the conversation's first message, its
seed); resume or read one with :meth:`Session.open`, then :meth:`Session.check_seed` the
conversation you are about to continue (:class:`runcontext.Loop` does so on every run).
"""

from __future__ import annotations

import copy
import fcntl
import json
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
from typing import Any, Literal, NoReturn

from runcontext._core import FORMAT_VERSION, RunContext, canonical_json, digest
from runcontext._splice import check_messages
from runcontext.errors import CanonicalJSONError, RunContextError

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

TRANSCRIPT_FORMAT = "runcontext-transcript"
TRANSCRIPT_VERSION = 1
RECORD_TYPES = ("header", "message", "section", "run-context")

Clock = Callable[[], datetime]

# The exact member names of each record type: a reader refuses any other, so nothing in a
# transcript is ever silently ignored.
_FIELDS: dict[str, frozenset[str]] = {
    "header": frozenset({"type", "format", "version", "context_format", "seed", "time"}),
    "message": frozenset({"type", "index", "message"}),
    "section": frozenset({"type", "digest", "name", "text"}),
    "run-context": frozenset({"type", "run", "digest", "time", "messages", "sections", "facts"}),
}


# --- errors -----------------------------------------------------------------------------------


class TranscriptError(ValueError):
    """A transcript that cannot be read or appended to as asked.

    ``path`` is the file and ``line`` the 1-based line number of the offending record, or
    ``None`` when the problem is not one line's. Both are also in the message.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str], line: int | None) -> None:
        where = f"{os.fspath(path)}:{line}" if line is not None else os.fspath(path)
        super().__init__(f"{where}: {message}")
        self.path = os.fspath(path)
        self.line = line


class TranscriptFormatError(TranscriptError):
    """A line that is not a valid record: not JSON, not canonical, an unknown type, a missing
    or unexpected field, a run that names a section the file does not hold, …"""


class TranscriptVersionError(TranscriptFormatError):
    """A transcript written by a newer runcontext (a format version this one cannot read)."""


class TranscriptDigestError(TranscriptError):
    """A record whose content does not match its recorded digest: the file was altered."""


class TornTranscriptError(TranscriptError):
    """An append refused because the file ends with a torn (incomplete) record."""


class ConversationMismatchError(TranscriptError):
    """A conversation that is not the one this transcript records."""


class SeedMismatchError(ConversationMismatchError):
    """The conversation's first message no longer matches the seed the transcript started with.

    ``recorded`` is the seed digest in the transcript's header, ``given`` the digest of the
    conversation's message at index 0 (``None`` for an empty conversation).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str],
        recorded: str,
        given: str | None,
    ) -> None:
        super().__init__(message, path=path, line=1)
        self.recorded = recorded
        self.given = given


class TornTranscriptWarning(UserWarning):
    """The transcript ends with a torn record; the complete records before it are readable."""


# --- public records ---------------------------------------------------------------------------


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


@dataclass(frozen=True)
class _Envelope:
    number: int
    time: datetime
    digest: str
    messages: int
    sections: tuple[tuple[Literal["head", "tail"], str, str], ...]  # (position, name, digest)
    facts: tuple[tuple[str, str], ...]


# --- helpers ----------------------------------------------------------------------------------


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are some."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def _timestamp(clock: Clock) -> str:
    moment = clock()
    if not isinstance(moment, datetime):
        raise TypeError(f"the session clock returned {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            "the session clock returned a naive datetime; return an aware one, "
            "such as datetime.now(timezone.utc)"
        )
    return _format_time(moment)


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _line(record: Mapping[str, Any]) -> bytes:
    return canonical_json(record) + b"\n"


def _message_line(index: int, message: Mapping[str, Any], argument: str) -> bytes:
    try:
        body = canonical_json(message if type(message) is dict else dict(message))
    except CanonicalJSONError as error:
        # TypeError for a value JSON cannot hold, ValueError otherwise; the cause keeps the
        # original class and its path.
        problem = TypeError if isinstance(error, TypeError) else ValueError
        raise problem(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from error
    # The record's members in canonical (sorted) order around the already-canonical message,
    # so a large message is encoded once; readers check every line is canonical anyway.
    return b'{"index":%d,"message":%s,"type":"message"}\n' % (index, body)


def _check_reply(reply: object) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping):
        raise TypeError(
            f"reply: expected a message mapping with a 'role', got {type(reply).__name__}"
        )
    if "role" not in reply:
        raise TypeError("reply: the message has no 'role' key")
    return reply


# --- the session ------------------------------------------------------------------------------


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
        clock = _utc_now if clock is None else clock
        target = Path(path)
        header = {
            "type": "header",
            "format": TRANSCRIPT_FORMAT,
            "version": TRANSCRIPT_VERSION,
            "context_format": FORMAT_VERSION,
            "seed": digest(messages[0] if type(messages[0]) is dict else dict(messages[0])),
            "time": _timestamp(clock),
        }
        data = _line(header) + b"".join(
            _message_line(index, message, f"messages[{index}]")
            for index, message in enumerate(messages)
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
        return cls.open(target, durable=durable, clock=clock)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        repair: bool = False,
        writable: bool = True,
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

        ``writable=False`` opens the file read-only (no appends, no repair). ``durable=True``
        makes every append ``fsync`` the file before returning.
        """
        if repair and not writable:
            raise ValueError("repair=True needs writable=True: repairing truncates the file")
        flags = (os.O_RDWR | os.O_APPEND) if writable else os.O_RDONLY
        fd = os.open(path, flags | os.O_CLOEXEC)
        self = object.__new__(cls)
        self._setup(Path(path), fd, writable=writable, durable=durable, clock=clock)
        try:
            with self._thread_lock, self._file_lock(fcntl.LOCK_EX if repair else fcntl.LOCK_SH):
                self._refresh_locked(warn=False)
                if self._lines == 0:
                    raise TranscriptFormatError(
                        "no header record: the file is empty or holds only a torn first line; "
                        "it is not a transcript (create one with Session.create)",
                        path=self._path,
                        line=1,
                    )
                if repair and self._torn is not None:
                    os.ftruncate(fd, self._torn.offset)
                    if durable:
                        os.fsync(fd)
                    self._repaired, self._torn = self._torn, None
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
        self._clock = _utc_now if clock is None else clock
        self._thread_lock = threading.RLock()  # threads of one process share the descriptor
        self._offset = 0  # bytes of complete records read so far
        self._lines = 0  # complete lines read so far
        self._seed = ""
        self._created = datetime.min.replace(tzinfo=UTC)
        self._messages: list[Any] = []
        self._sections: dict[str, tuple[str, str]] = {}  # digest -> (name, text)
        self._envelopes: list[_Envelope] = []
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

        The reading methods call it; appends do it under their lock.
        """
        if not self._closer.alive:
            raise ValueError(f"{os.fspath(self._path)}: the session is closed")
        with self._thread_lock, self._file_lock(fcntl.LOCK_SH):
            self._refresh_locked(warn=True)

    def messages(self) -> list[Any]:
        """The conversation alone, in order, as recorded (never a context); a fresh copy."""
        self.refresh()
        return copy.deepcopy(self._messages)

    def runs(self) -> list[Run]:
        """Every run, each with its RunContext rebuilt from the transcript."""
        self.refresh()
        return [self._run(envelope) for envelope in self._envelopes]

    def context_at(self, run: int) -> RunContext:
        """The RunContext of run number ``run`` (1-based), rebuilt from the transcript."""
        self.refresh()
        if isinstance(run, bool) or not isinstance(run, int):
            raise TypeError(f"run: expected a run number (int), got {type(run).__name__}")
        if not 1 <= run <= len(self._envelopes):
            span = f"runs 1 to {len(self._envelopes)}" if self._envelopes else "no runs yet"
            raise IndexError(f"{os.fspath(self._path)}: no run {run}: the transcript has {span}")
        return self._run(self._envelopes[run - 1]).context

    # --- checking ---------------------------------------------------------------------------

    def check_seed(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a conversation whose index-0 message is not this transcript's seed.

        Raises :class:`SeedMismatchError` showing both digests. A RunContext is never part of
        this check: the next run may say something completely different.
        """
        check_messages(messages)
        if len(messages) == 0:
            given = None
        else:
            first = messages[0]
            given = digest(first if type(first) is dict else dict(first))
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

    # --- appending --------------------------------------------------------------------------

    def append_messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Append ``messages`` to the recorded conversation, each as one ``message`` record."""
        check_messages(messages)

        def build() -> list[bytes]:
            start = len(self._messages)
            return [
                _message_line(start + offset, message, f"messages[{offset}]")
                for offset, message in enumerate(messages)
            ]

        self._append(build)

    def record_run(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext | None = None,
        reply: Mapping[str, Any] | None = None,
    ) -> Run:
        """Record one run, under one lock: the conversation as sent, its context, the reply.

        ``messages`` is the whole conversation the request carried: its seed is checked and
        the messages the transcript does not hold yet are appended. Then come a ``section``
        record for each section body not already in the file, the ``run-context`` envelope,
        and ``reply`` (if given) as the next message. ``context=None`` is the empty context.
        """
        self.check_seed(messages)
        context = RunContext() if context is None else context
        if not isinstance(context, RunContext):
            raise TypeError(f"context: expected a RunContext, got {type(context).__name__}")
        if reply is not None:
            _check_reply(reply)
        sections = context.sections
        number = [0]  # the run number given under the lock

        def build() -> list[bytes]:
            recorded = len(self._messages)
            self._check_length(messages, recorded)
            lines = [
                _message_line(index, messages[index], f"messages[{index}]")
                for index in range(recorded, len(messages))
            ]
            written: set[str] = set()
            for section in sections:
                if section.digest not in self._sections and section.digest not in written:
                    written.add(section.digest)
                    lines.append(
                        _line(
                            {
                                "type": "section",
                                "digest": section.digest,
                                "name": section.name,
                                "text": section.text,
                            }
                        )
                    )
            number[0] = len(self._envelopes) + 1
            envelope = {
                "type": "run-context",
                "run": number[0],
                "digest": context.digest,
                "time": _timestamp(self._clock),
                "messages": len(messages),
                "sections": [
                    {"position": s.position, "name": s.name, "digest": s.digest} for s in sections
                ],
                "facts": [list(fact) for fact in context.facts],
            }
            lines.append(_line(envelope))
            if reply is not None:
                lines.append(_message_line(len(messages), reply, "reply"))
            return lines

        self._append(build)
        envelope = self._envelopes[number[0] - 1]
        return Run(
            number=envelope.number,
            time=envelope.time,
            digest=context.digest,
            messages=len(messages),
            context=context,
        )

    def _check_length(self, messages: Sequence[Mapping[str, Any]], recorded: int) -> None:
        if len(messages) < recorded:
            raise ConversationMismatchError(
                f"the conversation has {len(messages)} messages but the transcript already "
                f"records {recorded}; a transcript is append-only: pass the whole "
                "conversation, or start a new transcript with Session.create",
                path=self._path,
                line=None,
            )

    def _append(self, build: Callable[[], list[bytes]]) -> None:
        if not self._closer.alive:
            raise ValueError(f"{os.fspath(self._path)}: the session is closed")
        if not self._writable:
            raise ValueError(f"{os.fspath(self._path)}: the session was opened with writable=False")
        with self._thread_lock, self._file_lock(fcntl.LOCK_EX):
            # Another writer may have appended since we last looked: read its records first so
            # message indices, run numbers and section dedupe stay right.
            self._refresh_locked(warn=True)
            if self._torn is not None:
                raise TornTranscriptError(
                    f"the file ends with a torn record ({self._torn.length} bytes without a "
                    "newline, from a writer that was killed mid-append); appending after it "
                    "would corrupt the next record: reopen with Session.open(path, "
                    "repair=True) to truncate it",
                    path=self._path,
                    line=self._torn.line,
                )
            lines = build()  # encodes everything before the first write: a bad value writes nothing
            try:
                for data in lines:
                    self._write_line(data)
                    self._ingest(data[:-1], self._lines + 1, trusted=True)
                    self._offset += len(data)
                    self._lines += 1
            except BaseException:
                # A failed or interrupted write (disk full, signal) must not leave a torn
                # line for the next writer to glue its record onto.
                with suppress(OSError):  # if this fails too, the next open reports a torn line
                    os.ftruncate(self._fd, self._offset)
                raise

    def _write_line(self, data: bytes) -> None:
        # One write() of the whole line; a short write (a full disk, a signal) is finished
        # under the same lock, so no other writer's bytes can land in between.
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        if self._durable:
            os.fsync(self._fd)

    # --- locking and reading the file -------------------------------------------------------

    @contextmanager
    def _file_lock(self, operation: int) -> Iterator[None]:
        fcntl.flock(self._fd, operation)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _refresh_locked(self, *, warn: bool) -> None:
        size = os.fstat(self._fd).st_size
        if size < self._offset:
            raise TranscriptError(
                f"the file is {size} bytes, shorter than the {self._offset} bytes of records "
                "already read: another program truncated or rewrote it; reopen it",
                path=self._path,
                line=None,
            )
        if size == self._offset:
            self._torn = None
            return
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
            self._ingest(data[start:stop], self._lines + 1, trusted=False)
            self._offset += stop + 1 - start
            self._lines += 1
            start = stop + 1
        previous = self._torn
        self._torn = (
            TornTail(line=self._lines + 1, offset=self._offset, length=len(data) - end)
            if end < len(data)
            else None
        )
        if warn and self._torn is not None and self._torn != previous:
            self._warn_torn(stacklevel=5)  # the caller of messages(), append_messages(), …

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

    # --- parsing records --------------------------------------------------------------------

    def _fail(self, line: int, message: str) -> NoReturn:
        raise TranscriptFormatError(message, path=self._path, line=line)

    def _ingest(self, raw: bytes, line: int, *, trusted: bool) -> None:
        """Parse, verify and apply one complete line (without its newline)."""
        if not raw:
            self._fail(line, "empty line: every line must be one JSON record")
        try:
            record = json.loads(raw, parse_constant=_refuse_constant)
        except json.JSONDecodeError as error:
            self._fail(line, f"not JSON: {error.msg} at column {error.colno}")
        except ValueError as error:  # invalid UTF-8, NaN, …
            self._fail(line, f"not JSON: {error}")
        if not trusted:
            try:
                canonical = canonical_json(record)
            except CanonicalJSONError as error:
                self._fail(line, f"a value has no canonical JSON form: {error}")
            if canonical != raw:
                self._fail(
                    line,
                    "the record is not in canonical JSON form (RFC 8785): the file was edited "
                    "or written by another tool; transcripts are byte-deterministic",
                )
        if not isinstance(record, dict):
            self._fail(line, f"expected a JSON object, got {type(record).__name__}")
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in _FIELDS:
            known = ", ".join(RECORD_TYPES)
            self._fail(line, f"unknown record type {kind!r} (a record's type is one of {known})")
        if kind == "header" or line == 1:
            self._ingest_header(record, line)
            return
        fields = set(record)
        if fields != _FIELDS[kind]:
            self._fail(line, _field_problem(kind, fields))
        if kind == "message":
            self._ingest_message(record, line)
        elif kind == "section":
            self._ingest_section(record, line)
        else:
            self._ingest_run(record, line)

    def _ingest_header(self, record: dict[str, Any], line: int) -> None:
        if line != 1:
            self._fail(line, "a second header record: the header is line 1 only")
        if record.get("type") != "header":
            self._fail(line, f"line 1 is a {record.get('type')!r} record, not the header")
        if record.get("format") != TRANSCRIPT_FORMAT:
            self._fail(line, f"not a runcontext transcript (format is {record.get('format')!r})")
        version = record.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            self._fail(line, f"invalid format version {version!r}")
        if version > TRANSCRIPT_VERSION:
            raise TranscriptVersionError(
                f"transcript format version {version} is newer than this runcontext reads "
                f"({TRANSCRIPT_VERSION}); upgrade runcontext to read it",
                path=self._path,
                line=line,
            )
        fields = set(record)
        if fields != _FIELDS["header"]:
            self._fail(line, _field_problem("header", fields))
        context_format = record["context_format"]
        if context_format != FORMAT_VERSION:
            raise TranscriptVersionError(
                f"the runs were recorded with RunContext format {context_format!r}; this "
                f"runcontext renders format {FORMAT_VERSION} and could not verify their digests",
                path=self._path,
                line=line,
            )
        self._seed = _digest_field(self, record, "seed", line)
        self._created = _time_field(self, record, line)

    def _ingest_message(self, record: dict[str, Any], line: int) -> None:
        index = record["index"]
        if index != len(self._messages) or isinstance(index, bool):
            self._fail(
                line,
                f"message index {index!r}, expected {len(self._messages)}: a message record is "
                "missing or repeated",
            )
        message = record["message"]
        if not isinstance(message, dict) or "role" not in message:
            self._fail(line, "the message is not an object with a 'role'")
        self._messages.append(message)

    def _ingest_section(self, record: dict[str, Any], line: int) -> None:
        name, text = record["name"], record["text"]
        if not isinstance(name, str) or not isinstance(text, str):
            self._fail(line, "a section's name and text must be strings")
        recorded = _digest_field(self, record, "digest", line)
        actual = digest({"name": name, "text": text})
        if actual != recorded:
            raise TranscriptDigestError(
                f"section {name!r} has digest {actual} but the record says {recorded}: "
                "the file was altered",
                path=self._path,
                line=line,
            )
        # A repeated identical body is harmless (its digest matched); writers never write one.
        self._sections[recorded] = (name, text)

    def _ingest_run(self, record: dict[str, Any], line: int) -> None:
        number = record["run"]
        expected = len(self._envelopes) + 1
        if number != expected or isinstance(number, bool):
            self._fail(
                line, f"run number {number!r}, expected {expected}: a run is missing or repeated"
            )
        messages = record["messages"]
        if isinstance(messages, bool) or not isinstance(messages, int) or messages < 0:
            self._fail(line, f"'messages' must be a count of messages, got {messages!r}")
        if messages > len(self._messages):
            self._fail(
                line,
                f"run {number} says its request carried {messages} messages, but only "
                f"{len(self._messages)} are recorded before it",
            )
        entries = record["sections"]
        if not isinstance(entries, list):
            self._fail(line, "'sections' must be a list")
        sections: list[tuple[Literal["head", "tail"], str, str]] = []
        head: list[tuple[str, str]] = []
        tail: list[tuple[str, str]] = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or set(entry) != {"position", "name", "digest"}:
                self._fail(
                    line, f"sections[{index}] must be an object with position, name and digest"
                )
            position, name, section_digest = entry["position"], entry["name"], entry["digest"]
            if position not in ("head", "tail"):
                self._fail(line, f"sections[{index}]: position must be 'head' or 'tail'")
            stored = self._sections.get(section_digest) if isinstance(section_digest, str) else None
            if stored is None:
                self._fail(
                    line,
                    f"run {number} names section {name!r} with digest {section_digest!r}, but "
                    "no section record before this line has that digest",
                )
            if stored[0] != name:
                self._fail(
                    line,
                    f"sections[{index}] is named {name!r} but the section record with its "
                    f"digest is named {stored[0]!r}",
                )
            sections.append((position, name, section_digest))
            (head if position == "head" else tail).append(stored)
        facts = record["facts"]
        if not isinstance(facts, list) or not all(
            isinstance(fact, list)
            and len(fact) == 2
            and all(isinstance(part, str) for part in fact)
            for fact in facts
        ):
            self._fail(line, "'facts' must be a list of [name, value] string pairs")
        recorded = _digest_field(self, record, "digest", line)
        try:
            context = RunContext(head_sections=head, facts=facts, tail_sections=tail)
        except (RunContextError, ValueError, TypeError) as error:
            self._fail(line, f"run {number}'s context cannot be rebuilt: {error}")
        if context.digest != recorded:
            raise TranscriptDigestError(
                f"run {number}'s context rebuilt from the transcript has digest "
                f"{context.digest}, but its envelope records {recorded}: the file was altered",
                path=self._path,
                line=line,
            )
        self._envelopes.append(
            _Envelope(
                number=number,
                time=_time_field(self, record, line),
                digest=recorded,
                messages=messages,
                sections=tuple(sections),
                facts=tuple((name, value) for name, value in facts),
            )
        )

    def _run(self, envelope: _Envelope) -> Run:
        head = [self._sections[d] for p, _, d in envelope.sections if p == "head"]
        tail = [self._sections[d] for p, _, d in envelope.sections if p == "tail"]
        context = RunContext(head_sections=head, facts=envelope.facts, tail_sections=tail)
        return Run(
            number=envelope.number,
            time=envelope.time,
            digest=envelope.digest,
            messages=envelope.messages,
            context=context,
        )


def _field_problem(kind: str, fields: set[str]) -> str:
    missing = sorted(_FIELDS[kind] - fields)
    unexpected = sorted(fields - _FIELDS[kind])
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing)}")
    if unexpected:
        parts.append(f"unexpected {', '.join(unexpected)}")
    return f"a {kind} record with {'; '.join(parts)}"


def _digest_field(session: Session, record: dict[str, Any], key: str, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.startswith("blake3:") or len(value) != 71:
        session._fail(
            line, f"{key!r} must be a digest like 'blake3:<64 hex digits>', got {value!r}"
        )
    return value


def _time_field(session: Session, record: dict[str, Any], line: int) -> datetime:
    text = record.get("time")
    moment: datetime | None = None
    if isinstance(text, str) and text.endswith("Z"):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None or _format_time(moment) != text:
        session._fail(
            line, f"'time' must be a UTC timestamp like 2025-01-31T09:30:00Z, got {text!r}"
        )
    return moment


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
