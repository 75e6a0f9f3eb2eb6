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

import os
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from threading import RLock
from typing import Any, Literal

from runcontext._checks import check_context, check_message, check_messages
from runcontext._core import (
    DEFAULT_MAX_LINE_BYTES,
    TRANSCRIPT_VERSION,
    Compaction,
    Elision,
    Run,
    RunContext,
    TornTail,
    Transcript,
    canonical_json,
    digest_bytes,
    json_value,
)
from runcontext.errors import CanonicalJSONError
from runcontext.transcript._timestamps import Clock, parse_time, timestamp, utc_now
from runcontext.transcript.errors import (
    ConversationMismatchError,
    SeedMismatchError,
    TornTranscriptError,
    TornTranscriptWarning,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
    UnchainedTranscriptWarning,
    shown_name,
)
from runcontext.transcript.files import LineTooLong
from runcontext.transcript.store import (
    AppendCheckedStore,
    ChunkedStore,
    GuardedAppendStore,
    OpenedStore,
    PathStore,
    TornTailStore,
    TranscriptStore,
    open_store,
)

__all__ = ["TRANSCRIPT_VERSION", "Compaction", "Elision", "Run", "Session", "TornTail"]

_QUALITIES = ("exact", "calibrated", "estimated")


# Every open session, so that a forked child can replace the thread locks it inherited (a
# lock held by another thread of the parent at fork() would never be released in the child).
_SESSIONS: weakref.WeakSet[Session] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for session in list(_SESSIONS):
        session._thread_lock = RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _check_reply(reply: object) -> Mapping[str, Any]:
    check_message(reply, "reply", items=True)
    return reply  # type: ignore[return-value]


class Session:
    """An append-only transcript of one conversation and of the context of each run.

    Use :meth:`create` for a new transcript and :meth:`open` to read or resume one. A session
    holds its store open (a file descriptor): :meth:`close` it, or use it as a context
    manager. The records live in a :class:`~runcontext.transcript.store.TranscriptStore`: a
    path means the JSONL file store.
    """

    def __init__(self) -> None:
        raise TypeError("use Session.create(path, messages) or Session.open(path)")

    # --- creating and opening ---------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | TranscriptStore,
        messages: Sequence[Mapping[str, Any]],
        *,
        durable: bool = False,
        clock: Clock | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        session_id: str | None = None,
        tenant: str | None = None,
    ) -> Session:
        """Start a transcript at ``path`` for the conversation ``messages`` and open it.

        ``messages`` is the conversation so far; it must hold at least the message at index 0,
        whose digest becomes the transcript's seed. They are all recorded. The transcript
        appears complete or not at all; an existing one is never overwritten
        (``FileExistsError``: open it with :meth:`open` instead).

        ``path`` may be a ``postgresql://host/db?session=ID&tenant=T`` URI (the PostgreSQL
        store; ``session_id=`` and ``tenant=`` may stand in for the query parameters). A file
        name may be ``bytes`` or hold bytes that are not UTF-8 (docs/TRANSCRIPT.md, *File
        names*).

        ``max_line_bytes`` is the line cap, as for :meth:`open`: no record longer than it is
        written (``ValueError`` naming the message, before anything is written), so the
        transcript reads with the same cap.
        """
        check_messages(messages, items=True)
        _check_max_line_bytes(max_line_bytes)
        if len(messages) == 0:
            raise ValueError(
                "messages: a transcript needs the conversation's first message (its seed); "
                "create the session once the conversation has one"
            )
        clock = utc_now if clock is None else clock
        store = _store(
            path,
            durable=durable,
            max_line_bytes=max_line_bytes,
            session_id=session_id,
            tenant=tenant,
        )
        # Encode every message first: a bad one is refused naming its index, before anything
        # is written, and the seed digest hashes the bytes already encoded.
        bodies = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]
        state = Transcript(shown_name(store.name), max_line_bytes)  # errors show the name
        lines = [state.write_header(digest_bytes(bodies[0]), timestamp(clock))]
        lines.extend(_write_message(state, body, f"messages[{i}]") for i, body in enumerate(bodies))
        store.create(lines)
        return cls.open(
            store, writable=True, durable=durable, clock=clock, max_line_bytes=max_line_bytes
        )

    @classmethod
    def open(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | TranscriptStore,
        *,
        repair: bool = False,
        writable: bool | None = None,
        durable: bool = False,
        clock: Clock | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        session_id: str | None = None,
        tenant: str | None = None,
    ) -> Session:
        """Read and verify the transcript at ``path``; the session can then append to it.

        ``path`` may be a ``postgresql://`` URI, with ``session_id=`` and ``tenant=`` as for
        :meth:`create`; ``repair`` has nothing to do there (a transaction leaves no torn
        record).

        Every record is checked (canonical JSON, known type and fields, the record chain, the
        seed, section digests, each run's rebuilt context digest); the first bad line raises a
        :class:`TranscriptError` naming it and its ``kind``. A torn last line (a writer killed
        mid-append) is reported with a :class:`TornTranscriptWarning` and :attr:`torn`; the
        complete records before it stay readable, and appending is refused until the file is
        opened with ``repair=True``, which truncates the torn bytes (:attr:`repaired` then says
        what was removed). A record longer than ``max_line_bytes`` (64 MiB by default) is
        refused without being read into memory.

        ``writable=None`` (the default) opens the file for appending if this process may write
        it and read-only otherwise (:attr:`writable` says which); ``writable=True`` insists on
        appending (``PermissionError`` if it cannot), ``writable=False`` only reads.
        ``durable=True`` makes every append ``fsync`` the file before returning.
        """
        if repair and writable is False:
            raise ValueError("repair=True needs a writable session: repairing truncates the file")
        _check_max_line_bytes(max_line_bytes)
        store = _store(
            path,
            durable=durable,
            max_line_bytes=max_line_bytes,
            session_id=session_id,
            tenant=tenant,
        )
        if isinstance(store, OpenedStore):
            store.open(writable=True if repair else writable)
        elif writable and not getattr(store, "writable", True):
            raise PermissionError(f"{shown_name(store.name)}: the store is read-only")
        self = object.__new__(cls)
        self._setup(store, durable=durable, clock=clock, max_line_bytes=max_line_bytes)
        if writable is False:  # another store has no read-only mode of its own: refuse here
            self._writable = False
        try:
            with self._thread_lock:
                self._read_all(repair=repair)
        except BaseException:
            self.close()
            raise
        if self._state.version == 1:
            warnings.warn(
                UnchainedTranscriptWarning(
                    f"{self._shown}: a version 1 transcript: its records are not chained, so an "
                    "edit to one cannot be detected; it is read-only (start a new transcript "
                    "to record more runs)"
                ),
                stacklevel=2,
            )
        if self._torn is not None:
            self._warn_torn(stacklevel=3)
        return self

    @classmethod
    def open_or_create(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | TranscriptStore,
        messages: Sequence[Mapping[str, Any]],
        *,
        durable: bool = False,
        clock: Clock | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        session_id: str | None = None,
        tenant: str | None = None,
    ) -> Session:
        """Open the transcript at ``path`` for appending, or start it with ``messages`` if there
        is none: the same call works on a conversation's first run and on its hundredth.

        An existing transcript must record this conversation: its seed is checked against
        ``messages[0]`` (:class:`SeedMismatchError`, nothing written) so a path that holds
        another conversation is refused at once, not at the first ``record_run``. A new one
        records all of ``messages``, as :meth:`create` does. Two processes racing to create
        the same transcript are safe: the one that loses opens what the other created. The
        other arguments are :meth:`create`'s and :meth:`open`'s.
        """
        check_messages(messages, items=True)
        options: dict[str, Any] = {
            "durable": durable,
            "clock": clock,
            "max_line_bytes": max_line_bytes,
            "session_id": session_id,
            "tenant": tenant,
        }
        # Create first: a failed create leaves the store usable (a failed open closes it), and
        # there is no moment between a look and a create for another writer to step into.
        try:
            return cls.create(path, messages, **options)
        except FileExistsError:
            session = cls.open(path, writable=True, **options)
        try:
            session.check_seed(messages)
        except BaseException:
            session.close()
            raise
        return session

    def _setup(
        self,
        store: TranscriptStore,
        *,
        durable: bool,
        clock: Clock | None,
        max_line_bytes: int,
    ) -> None:
        self._store = store
        # What the store can do beyond the protocol, asked once (a runtime protocol check
        # costs tens of microseconds): None where it cannot.
        self._tears: TornTailStore | None = store if isinstance(store, TornTailStore) else None
        self._checks: AppendCheckedStore | None = (
            store if isinstance(store, AppendCheckedStore) else None
        )
        self._guarded: GuardedAppendStore | None = (
            store if isinstance(store, GuardedAppendStore) else None
        )
        chunks = isinstance(store, ChunkedStore) and store.chunked
        self._chunks: ChunkedStore | None = store if chunks else None  # type: ignore[assignment]
        # What messages name: the file (a file store's name is its path), or another store's
        # name as it is (a URI made a Path would lose its "//").
        self._where = store.name
        self._shown = shown_name(store.name)  # as messages show it (docs/TRANSCRIPT.md)
        self._writable = bool(getattr(store, "writable", True))
        self._durable = durable
        self._clock = utc_now if clock is None else clock
        self._thread_lock = RLock()  # threads of one process share the store
        # The core's errors name the file as shown; _apply_batch gives them the exact name.
        self._state = Transcript(self._shown, max_line_bytes)
        self._cursor: object | None = None  # where the records read so far end
        self._skip = 0  # records after the cursor already applied (a batch cut by an error)
        self._created: datetime | None = None  # parsed from the header when first asked for
        self._torn: TornTail | None = None
        self._repaired: TornTail | None = None
        self._closed = False
        _SESSIONS.add(self)

    def _read_all(self, *, repair: bool) -> None:
        """Read the whole transcript; with ``repair``, under the writers' lock, and truncate a
        torn last line."""
        tears = self._tears
        if not repair or tears is None:
            self._refresh(warn=False)
            self._check_header()
            return
        with self._store.writing():
            self._read_new()
            self._torn = self._torn_at(tears.partial)
            self._check_header()
            if self._torn is not None:
                tears.truncate(self._torn.offset)
                self._repaired, self._torn = self._torn, None

    def close(self) -> None:
        """Close the store (idempotent)."""
        self._closed = True
        self._store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        # A name with a byte that is not UTF-8 or a control: quoted as shown, not as repr
        # shows a lone surrogate (\udce9, where the file's byte is \xe9).
        name = repr(self._where) if self._shown == self._where else f"'{self._shown}'"
        state = self._state
        return f"<Session {name}: {state.message_count} messages, {state.run_count} runs>"

    # --- properties -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The transcript file (for another store, its name as a path)."""
        store = self._store
        if isinstance(store, PathStore):
            return store.path
        return Path(store.name)

    @property
    def store(self) -> TranscriptStore:
        return self._store

    @property
    def seed(self) -> str:
        """The digest of the conversation's message at index 0 when the transcript started."""
        return self._state.seed

    @property
    def chain(self) -> str:
        """The last record's chain: keep it elsewhere to detect a rewrite of the whole tail
        (docs/TRANSCRIPT.md, *What the chain does not do*). Empty for a version 1 file."""
        return self._state.chain

    @property
    def version(self) -> int:
        """The transcript format version of the file (1: unchained, read-only; 2)."""
        return self._state.version

    @property
    def created(self) -> datetime:
        """The header's UTC timestamp."""
        return parse_time(self._state.header_time)

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
        return self._state.message_count

    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read (and verify) the records other writers appended since this session last looked.

        The reading methods call it; appends do it under their lock. It takes no lock: a last
        line that another writer is still appending is left for the next refresh.
        """
        with self._thread_lock:
            self._refresh(warn=True)

    def messages(self) -> list[Any]:
        """The current conversation, in order, as recorded (never a context): after every
        compaction and elision, exactly what the next request continues; a fresh copy."""
        with self._thread_lock:
            self._refresh(warn=True)
            return self._state.decoded_messages()

    def messages_at(self, run: int) -> list[Any]:
        """The conversation exactly as run number ``run`` (1-based) was sent it: the current
        conversation at its record, truncated to ``Run.messages`` (docs/TRANSCRIPT.md,
        *Replay*), even when later compactions or elisions replaced part of it."""
        with self._thread_lock:
            self._refresh(warn=True)
            self._check_run_number(run)
            return self._state.decoded_messages_at(run)

    def reply_to(self, run: int) -> Any:
        """Run number ``run``'s reply: the message at position ``Run.messages`` of the
        conversation it was sent, if one was recorded before the next compaction or elision
        (docs/TRANSCRIPT.md, *Replay*); ``None`` otherwise."""
        with self._thread_lock:
            self._refresh(warn=True)
            self._check_run_number(run)
            body = self._state.reply_of(run)
            return None if body is None else json_value(body)

    def edits(self) -> list[Compaction | Elision]:
        """Every compaction and elision recorded, in order."""
        with self._thread_lock:
            self._refresh(warn=True)
            return self._state.edits()

    def edit_messages(self, index: int) -> list[Any]:
        """The messages that edit ``index`` (0-based, in the order of :meth:`edits`) put into
        the conversation: a compaction's replacement messages, or an elision's stubs in the
        order of its indices; fresh copies."""
        with self._thread_lock:
            self._refresh(warn=True)
            _check_position(index, "index")
            return self._state.edit_messages(index)

    def runs(self) -> list[Run]:
        """Every run, each with its RunContext rebuilt from the transcript."""
        with self._thread_lock:
            self._refresh(warn=True)
            return self._state.runs()

    def context_at(self, run: int) -> RunContext:
        """The RunContext of run number ``run`` (1-based), rebuilt from the transcript."""
        with self._thread_lock:
            self._refresh(warn=True)
            self._check_run_number(run)
            return self._state.run(run).context

    def _check_run_number(self, run: object) -> None:
        if isinstance(run, bool) or not isinstance(run, int):
            raise TypeError(f"run: expected a run number (int), got {type(run).__name__}")
        count = self._state.run_count
        if not 1 <= run <= count:
            span = f"runs 1 to {count}" if count else "no runs yet"
            raise IndexError(f"{self._shown}: no run {run}: the transcript has {span}")

    # --- checking ---------------------------------------------------------------------------

    def check_seed(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a conversation whose index-0 message is not this transcript's seed.

        Raises :class:`SeedMismatchError` showing both digests. A RunContext is never part of
        this check: the next run may say something completely different.
        """
        # Message 0, the last recorded one (the conversation check reads it) and the new ones:
        # the others are not recorded again, so a run costs O(new messages).
        check_messages(messages, items=True, start=max(self._state.message_count - 1, 0))
        given = digest_bytes(message_body(messages[0], "messages[0]")) if len(messages) else None
        # The current conversation's message 0: the seed, until a compaction replaces it.
        state = self._state
        recorded = digest_bytes(state.message(0)) if state.message_count else state.seed
        if given != recorded:
            shown = "it is empty" if given is None else f"its message 0 has digest {given}"
            which = (
                "the transcript's seed (message 0 when it started)"
                if recorded == state.seed
                else "the transcript's message 0 (since a compaction replaced the seed)"
            )
            raise SeedMismatchError(
                f"the conversation does not continue this transcript: {shown}, but {which} is "
                f"{recorded}; pass the conversation it records (session.messages()), record a "
                "compaction of it first (Session.compact, Session.reconcile), or start a new "
                "transcript with Session.create",
                path=self._where,
                recorded=recorded,
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
        file that ends with a torn record, :class:`TranscriptReplacedError` for a path that no
        longer names the file the session opened. :class:`runcontext.Loop` calls it before it
        spends a request on a run it could not record.
        """
        self._check_writable()
        with self._thread_lock:
            self._refresh(warn=False)
            self._check_not_torn()
            if self._checks is not None:
                self._checks.check_appendable()

    def check_recordable(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Raise the error :meth:`record_run` would raise for the messages of ``messages`` the
        transcript does not hold yet, without writing: one that is not a message (no string
        ``role`` or ``type``), one with no JSON form (a NaN, a ``datetime``), one nested too
        deep to be read back, or one whose record would be longer than the line cap.
        :class:`runcontext.Loop` calls it before the backend, so no request is paid for that
        could not be recorded."""
        with self._thread_lock:
            check_messages(messages, items=True, start=self._state.message_count)
            for index in range(self._state.message_count, len(messages)):
                argument = f"messages[{index}]"
                _check_message(
                    self._state, message_body(messages[index], argument), argument, index
                )

    def check_run(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        edits: Literal["refuse", "record"] = "refuse",
    ) -> Compaction | Elision | None:
        """Raise what :meth:`check_appendable`, :meth:`check_conversation` and
        :meth:`check_recordable` would, in that order, reading the store at most once:
        :class:`runcontext.Loop` calls it before the backend.

        With ``edits="record"`` the checks are those of ``record_run(messages,
        edits="record")``: the compaction or elision :meth:`reconcile` would record is worked
        out (and refused as it would be) and the run checked as if it were recorded; nothing
        is written, and the edit is returned (``None`` when there is none) so the caller knows
        what the run will record.

        Only a store whose last line can tear (a file) is read, since a torn tail shows only
        to a read, which is local; any other store (PostgreSQL) is not asked anything, and the
        conversation is checked against the records as last read. :meth:`record_run` checks
        again, under the writers' lock, against what is stored then.
        """
        self._check_writable()
        with self._thread_lock:
            if self._tears is not None:
                self._refresh(warn=False)
            self._check_not_torn()
            if self._checks is not None:
                self._checks.check_appendable()
            if edits == "refuse":
                self.check_seed(messages)
                self._check_continues(messages)
                self.check_recordable(messages)
                return None
            if edits != "record":
                raise ValueError(f"edits: expected 'refuse' or 'record', got {edits!r}")
            check_messages(messages, items=True)
            given = [message_body(m, f"messages[{i}]") for i, m in enumerate(messages)]
            planned: list[Compaction | Elision] = []
            self._state.begin()  # the edit is worked out on the state, then taken back
            try:
                self._edit_lines(messages, given, None, timestamp(self._clock), planned)
                self.check_seed(messages)
                self._check_continues(messages)
                self.check_recordable(messages)
            finally:
                self._state.rollback()
            return planned[-1] if planned else None

    def _check_continues(self, messages: Sequence[Mapping[str, Any]]) -> None:
        recorded = self._state.message_count
        if len(messages) < recorded:
            raise ConversationMismatchError(
                f"the conversation has {len(messages)} messages but the transcript already "
                f"records {recorded}; a transcript is append-only: pass the whole "
                "conversation, record the compaction that shortened it first "
                "(Session.compact, Session.reconcile), or start a new transcript with "
                "Session.create",
                path=self._where,
                line=None,
            )
        if recorded < 2:
            return  # nothing recorded, or only message 0, which the seed check covers
        last = recorded - 1
        expected = digest_bytes(self._state.message(last))
        given = digest_bytes(message_body(messages[last], f"messages[{last}]"))
        if given != expected:
            raise ConversationMismatchError(
                f"the conversation does not continue this transcript: its message {last} has "
                f"digest {given}, but the transcript's message {last} (the last recorded) has "
                f"digest {expected}; pass the conversation it records (session.messages() plus "
                "the new messages) or start a new transcript with Session.create",
                path=self._where,
                line=self._state.last_message_line,
                index=last,
                recorded=expected,
                given=given,
            )

    # --- appending --------------------------------------------------------------------------

    def append_messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Append ``messages`` to the recorded conversation, each as one ``message`` record."""
        check_messages(messages, items=True)
        bodies = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]

        def build() -> list[bytes]:
            return [
                _write_message(self._state, body, f"messages[{i}]") for i, body in enumerate(bodies)
            ]

        self._append(build)

    # --- compactions and elisions ----------------------------------------------------------

    def compact(
        self,
        start: int,
        end: int,
        messages: Sequence[Mapping[str, Any]],
        *,
        mode: Literal["summary", "trim"] = "summary",
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        quality: Literal["exact", "calibrated", "estimated"] | None = None,
    ) -> Compaction:
        """Record that positions [``start``, ``end``) of the current conversation were replaced
        by ``messages``, exactly as they are sent from now on (docs/TRANSCRIPT.md,
        ``compaction``). ``mode`` is ``"summary"`` (the caller's summariser produced
        ``messages``; at least one) or ``"trim"`` (the range was dropped; ``messages`` may be
        empty or a marker). ``tokens_before`` and ``tokens_after`` (given together) are the
        conversation's counts, of ``quality`` (``"estimated"`` when not given).

        Refused before anything is written (``ValueError``): a range outside the
        conversation, a message a reader would refuse, and a range or replacement that would
        separate a tool call from its result. Returns the record.
        """
        _check_position(start, "start")
        _check_position(end, "end")
        if mode not in ("summary", "trim"):
            raise ValueError(f"mode: expected 'summary' or 'trim', got {mode!r}")
        check_messages(messages, items=True)
        bodies = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]
        tokens = _compaction_tokens(tokens_before, tokens_after, quality)
        when = timestamp(self._clock)
        recorded: list[Compaction] = []

        def build() -> list[bytes]:
            line, record = self._state.write_compaction(start, end, bodies, mode, when, tokens)
            recorded.append(record)
            return [line]

        self._append(build)
        return recorded[-1]

    def elide(self, stubs: Mapping[int, Mapping[str, Any]]) -> Elision:
        """Record that the messages at the positions of ``stubs`` (``{index: stub}``) of the
        current conversation were replaced by their stubs (docs/TRANSCRIPT.md, ``elision``).

        A stub keeps the tool-call identifiers of the message it replaces (a cleared tool
        result stays the result of its call). Refused before anything is written
        (``ValueError`` naming ``stubs[i]``): no stubs, a position outside the conversation, a
        stub a reader would refuse or that drops its message's tool-call identifiers.
        """
        if not isinstance(stubs, Mapping):
            raise TypeError(
                f"stubs: expected a mapping of index to stub, got {type(stubs).__name__}"
            )
        items: list[tuple[int, bytes]] = []
        for index in sorted(stubs):
            _check_position(index, f"stubs[{index!r}]")
            check_message(stubs[index], f"stubs[{index}]", items=True)
            items.append((index, message_body(stubs[index], f"stubs[{index}]")))
        when = timestamp(self._clock)
        recorded: list[Elision] = []

        def build() -> list[bytes]:
            line, record = self._state.write_elision(items, when)
            recorded.append(record)
            return [line]

        self._append(build)
        return recorded[-1]

    def trim(
        self,
        keep: int,
        *,
        sticky: int = 1,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        quality: Literal["exact", "calibrated", "estimated"] | None = None,
    ) -> Compaction | None:
        """Hard-trim the current conversation, pair-aligned: keep its first ``sticky``
        messages (the system prompt) and at least its last ``keep``, drop what lies between,
        and never separate a tool call from its result (the dropped range grows at its start
        and shrinks at its end until no pair straddles an edge). Records a ``"trim"``
        compaction with no messages in the range's place and returns it; ``None`` (nothing
        written) when nothing can be dropped. The new conversation is :meth:`messages`.
        """
        _check_position(keep, "keep")
        _check_position(sticky, "sticky")
        with self._thread_lock:
            self._refresh(warn=True)
            found = self._state.trim_range(sticky, keep)
            if found is None:
                return None
            return self.compact(
                found[0],
                found[1],
                [],
                mode="trim",
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                quality=quality,
            )

    def reconcile(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        quality: Literal["exact", "calibrated", "estimated"] | None = None,
    ) -> Compaction | Elision | None:
        """Work out, from the recorded conversation and ``messages`` (the conversation about
        to be sent), which compaction or elision turns one into the other, and record it, for
        frameworks that shrink or edit a conversation without saying so
        (docs/TRANSCRIPT.md, *Reconciling a conversation*). Returns the record, or ``None``
        when ``messages`` only continues the recorded conversation (nothing written).

        An edit that keeps the last recorded message at its position is an elision of every
        position that differs; any other is a compaction of the range between the longest
        common prefix and the longest common suffix that ends at the last recorded message
        (``"summary"`` when something replaces the range, ``"trim"`` when nothing does).
        Ambiguous cases are refused (:class:`ConversationMismatchError`) rather than guessed:
        the last recorded message missing (it was itself replaced: record the compaction with
        :meth:`compact`), found twice after the common prefix, or messages inserted without
        any removed.
        """
        check_messages(messages, items=True)
        given = [message_body(message, f"messages[{i}]") for i, message in enumerate(messages)]
        tokens = _compaction_tokens(tokens_before, tokens_after, quality)
        when = timestamp(self._clock)
        recorded: list[Compaction | Elision] = []
        # Worked out inside the append, on the records as stored then: another writer's
        # compaction or append since this session last read would move every position.
        self._append(lambda: self._edit_lines(messages, given, tokens, when, recorded))
        return recorded[-1] if recorded else None

    def _edit_lines(
        self,
        messages: Sequence[Mapping[str, Any]],
        given: list[bytes],
        tokens: tuple[int, int, str] | None,
        when: str,
        recorded: list[Compaction | Elision],
    ) -> list[bytes]:
        """The line of the compaction or elision that turns the current conversation into the
        recorded part of ``messages`` (``given``: their bodies), written into the state, which
        the caller's append commits or rolls back; no line when ``messages`` continues it. The
        rule is :meth:`reconcile`'s."""
        state = self._state
        count = state.message_count
        current = [state.message(i) for i in range(count)]
        if count == 0 or given[:count] == current:
            return []
        if len(given) >= count and given[count - 1] == current[count - 1]:
            changed = [(i, given[i]) for i in range(count) if given[i] != current[i]]
            line, elision = state.write_elision(changed, when)
            recorded.append(elision)
            return [line]
        prefix = 0
        while prefix < min(count, len(given)) and given[prefix] == current[prefix]:
            prefix += 1
        last = current[-1]
        found = [j for j in range(prefix, len(given)) if given[j] == last]
        if len(found) != 1:
            raise self._unreconciled(
                "the last recorded message (message "
                f"{count - 1}) is {'not in it' if not found else 'in it more than once'}"
                f" after the {prefix} messages both share, so where the new messages start "
                "cannot be told",
                count - 1,
            )
        kept_end = found[0] + 1  # given[:kept_end] is the edited recorded conversation
        suffix = 0
        while (
            suffix < min(count, kept_end) - prefix
            and given[kept_end - 1 - suffix] == current[count - 1 - suffix]
        ):
            suffix += 1
        start, end = prefix, count - suffix
        if end <= start:
            raise self._unreconciled(
                f"messages were inserted at position {prefix} without any recorded one "
                "being replaced, which no compaction records",
                prefix,
            )
        bodies = given[prefix : kept_end - suffix]
        mode = "summary" if bodies else "trim"
        line, compaction = state.write_compaction(start, end, bodies, mode, when, tokens)
        recorded.append(compaction)
        return [line]

    def _unreconciled(self, why: str, index: int) -> ConversationMismatchError:
        return ConversationMismatchError(
            f"the conversation is not the recorded one continued, nor one compaction or "
            f"elision of it: {why}; record the edit with Session.compact(start, end, "
            "messages) or Session.elide({index: stub}), or start a new transcript",
            path=self._where,
            line=None,
            index=index,
        )

    def record_run(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext | None = None,
        reply: Mapping[str, Any] | None = None,
        *,
        tokens: Mapping[str, Any] | None = None,
        edits: Literal["refuse", "record"] = "refuse",
        edit_counts: tuple[int, int, Literal["exact", "calibrated", "estimated"]] | None = None,
    ) -> Run:
        """Record one run, under one lock: the conversation as sent, its context, the reply.

        ``messages`` is the whole conversation the request carried: it must continue the
        recorded one (:meth:`check_conversation`, checked again under the lock), and the
        messages the transcript does not hold yet are appended. Then come a ``section`` record
        for each section body not already recorded, the ``run-context`` envelope, and
        ``reply`` (if given) as the next message. ``context=None`` is the empty context.
        ``tokens`` is the envelope's optional ``tokens`` member (docs/TRANSCRIPT.md), as
        :meth:`runcontext.budget.RequestCount.record` makes it; it is checked before anything
        is written.

        ``edits="record"`` first records the compaction or elision that turns the recorded
        conversation into ``messages`` (:meth:`reconcile`), in the same append as the run, so
        both are written or neither, for a framework that shrinks the conversation without
        saying so; ``edit_counts`` is that compaction's ``(tokens_before, tokens_after,
        quality)``. By default (``"refuse"``) such a conversation is refused as not continuing
        the transcript.
        """
        if edits not in ("refuse", "record"):
            raise ValueError(f"edits: expected 'refuse' or 'record', got {edits!r}")
        given: list[bytes] = []
        edit_tokens: tuple[int, int, str] | None = None
        if edits == "record":
            check_messages(messages, items=True)
            given = [message_body(m, f"messages[{i}]") for i, m in enumerate(messages)]
            edit_tokens = _compaction_tokens(*(edit_counts or (None, None, None)))
        else:
            self.check_seed(messages)
        tokens_body = None if tokens is None else _tokens_body(tokens)
        context = check_context(context) or RunContext()
        reply_body = None if reply is None else message_body(_check_reply(reply), "reply")
        when = timestamp(self._clock)

        recorded_run: list[Run] = []

        def build() -> list[bytes]:
            # The edit first, on the records as stored now, in the same append as the run: both
            # are written, or neither.
            lines = self._edit_lines(messages, given, edit_tokens, when, []) if given else []
            # Another writer (or the edit) may have changed message 0 since the check above:
            # again, under the lock, against what was just read.
            state = self._state
            if state.message_count and state.message(0) != message_body(messages[0], "messages[0]"):
                self.check_seed(messages)
            self._check_continues(messages)
            recorded = self._state.message_count
            lines += [
                _write_message(
                    self._state,
                    message_body(messages[index], f"messages[{index}]"),
                    f"messages[{index}]",
                )
                for index in range(recorded, len(messages))
            ]
            written, run = self._state.write_run(context, when, len(messages), tokens_body)
            lines.extend(written)
            recorded_run.append(run)
            if reply_body is not None:
                lines.append(_write_message(self._state, reply_body, "reply"))
            return lines

        self._append(build)
        return recorded_run[-1]

    def _check_writable(self) -> None:
        if self._closed:
            raise ValueError(f"{self._shown}: the session is closed")
        if not self._writable:
            raise ValueError(
                f"{self._shown}: the session is read-only (opened with "
                "writable=False, or the file is not writable by this process); open it with "
                "writable=True to append"
            )
        if self._state.version == 1:
            raise TranscriptVersionError(
                "a version 1 transcript is read-only: its records are not chained; start a "
                "new transcript (Session.create) to record more runs",
                path=self._where,
                line=None,
                kind="version",
            )

    def _check_not_torn(self) -> None:
        if self._torn is not None:
            raise TornTranscriptError(
                f"the file ends with a torn record ({self._torn.length} bytes without a "
                "newline, from a writer that was killed mid-append); appending after it "
                "would corrupt the next record: reopen with Session.open(path, "
                "repair=True) to truncate it",
                path=self._where,
                line=self._torn.line,
            )

    def _append(self, build: Callable[[], list[bytes]]) -> None:
        """Catch up with other writers, encode, store, and only once the store has committed
        take the new records in: if storing fails, at its commit too, the state is as before
        (records a failed write left behind, or a commit that succeeded though its answer was
        lost, are read back and verified like anyone else's)."""
        self._check_writable()
        with self._thread_lock:
            if self._guarded is not None and self._append_if_current(self._guarded, build):
                return
            began = False
            try:
                with self._store.writing():
                    # Another writer may have appended since we last looked: read its records
                    # first so message indices, run numbers, section dedupe and the chain stay
                    # right.
                    self._read_new()
                    if self._tears is not None:
                        self._torn = self._torn_at(self._tears.partial)
                    self._check_not_torn()
                    self._state.begin()
                    began = True
                    lines = build()  # all encoded before the first write
                    if not lines:  # nothing to record after all (reconcile: no edit)
                        self._state.rollback()
                        return
                    cursor = self._store.append(lines)
            except BaseException:
                if began:
                    self._state.rollback()
                raise
            self._state.commit()
            self._cursor = cursor  # where the records now end

    def _append_if_current(
        self, store: GuardedAppendStore, build: Callable[[], list[bytes]]
    ) -> bool:
        """The lone writer's append: encode on the records as last read and store them in one
        step if nobody appended since. False, with nothing stored and the state as before, when
        somebody did, or the store cannot tell, or the records do not encode on this state:
        the locked append then catches up, encodes again, and raises what is still wrong."""
        if self._torn is not None:
            return False
        self._state.begin()
        try:
            lines = build()
        except Exception:
            self._state.rollback()
            return False
        if not lines:
            self._state.rollback()
            return True  # nothing to record
        try:
            cursor = store.append_if_current(self._cursor, lines)
        except BaseException:
            self._state.rollback()
            raise
        if cursor is None:
            self._state.rollback()
            return False
        self._state.commit()
        self._cursor = cursor
        return True

    # --- reading the store ------------------------------------------------------------------

    def _refresh(self, *, warn: bool) -> None:
        """Read new complete records without a lock (the caller holds the thread lock).

        A partial last line is either an append in progress or a torn record. Which one is
        decided without waiting: if a writer holds the lock, it is still writing, and the line
        is left for later; otherwise it is read again under a shared lock (the writer may have
        finished in between), and what is still partial is torn.
        """
        if self._closed:
            raise ValueError(f"{self._shown}: the session is closed")
        self._read_new()
        store = self._tears
        partial = 0 if store is None else store.partial
        if partial and store is not None:
            if store.writer_active():
                partial = 0  # a writer holds the lock: an append in progress, not a torn line
            else:
                with store.shared():
                    self._read_new()
                    partial = store.partial
        previous = self._torn
        self._torn = self._torn_at(partial)
        if warn and self._torn is not None and self._torn != previous:
            self._warn_torn(stacklevel=5)  # the caller of messages(), runs(), refresh(), …

    def _read_new(self) -> None:
        """Read and apply every complete record stored after the cursor, batch by batch.

        If a record is refused, the records before it in its batch stay applied and are
        skipped when the same batch is read again, so a later refresh reports the same line
        again instead of replaying the ones already taken in."""
        # A store that can hands over its lines in chunks, which the core splits: no object
        # per line. Every other store returns lines (the protocol's read).
        chunked = self._chunks is not None
        read = self._store.read if self._chunks is None else self._chunks.read_chunks
        while True:
            try:
                batch, cursor = read(self._cursor)
            except LineTooLong as error:
                self._apply_batch(error.lines, chunked=chunked)
                self._cursor = error.cursor
                self._skip = 0
                raise TranscriptFormatError(
                    f"the record is longer than the {error.cap}-byte line cap (it was not "
                    "read into memory); if the transcript is genuine, open it with a larger "
                    "max_line_bytes",
                    path=self._where,
                    line=self._state.lines + 1,
                    kind="too-long",
                ) from None
            self._apply_batch(batch, chunked=chunked)
            done = not batch or cursor == self._cursor
            self._cursor, self._skip = cursor, 0
            if done:
                return

    def _apply_batch(self, batch: list[bytes], *, chunked: bool) -> None:
        """Verify the lines of ``batch`` after the first ``self._skip`` in the core, in one
        call, and take them in; on a refusal, ``self._skip`` is where it stopped. ``batch``
        holds lines, or with ``chunked`` the file store's chunks of them."""
        state = self._state
        before = state.lines
        read = state.read_chunks if chunked else state.read_lines
        try:
            read(batch, self._skip)
        except BaseException as error:
            self._skip += state.lines - before  # those are applied: skip them when read again
            if isinstance(error, TranscriptError):  # the core was given the name as shown
                error.file = self._where
            raise

    def _torn_at(self, partial: int) -> TornTail | None:
        if not partial:
            return None
        # A store that can tear counts its cursor in bytes: where the complete records end.
        offset = self._cursor if isinstance(self._cursor, int) else 0
        return TornTail(line=self._state.lines + 1, offset=offset, length=partial)

    def _warn_torn(self, *, stacklevel: int) -> None:
        torn = self._torn
        assert torn is not None
        warnings.warn(
            TornTranscriptWarning(
                f"{self._shown}:{torn.line}: the last record is torn ({torn.length} "
                "bytes without a newline, probably a writer killed mid-append); the "
                f"{self._state.lines} complete records before it are readable; open with "
                "repair=True to truncate it before appending"
            ),
            stacklevel=stacklevel,
        )

    def _check_header(self) -> None:
        if self._state.lines == 0:
            raise TranscriptFormatError(
                "no header record: the file is empty or holds only a torn first line; "
                "it is not a transcript (create one with Session.create)",
                path=self._where,
                line=1,
                kind="blank-line",
            )


def message_body(message: Mapping[str, Any], argument: str) -> bytes:
    """The canonical JSON of one message; an error names ``argument`` (``messages[3]``)."""
    try:
        return canonical_json(message if type(message) is dict else dict(message))
    except CanonicalJSONError as error:
        # TypeError for a value JSON cannot hold, ValueError otherwise; the cause keeps the
        # original class and its path.
        problem = TypeError if isinstance(error, TypeError) else ValueError
        raise problem(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from error


def _tokens_body(tokens: Mapping[str, Any]) -> bytes:
    """The canonical JSON of a ``tokens`` member; the core checks its form on write."""
    if not isinstance(tokens, Mapping):
        raise TypeError(
            f"tokens: expected a mapping (RequestCount.record()), got {type(tokens).__name__}"
        )
    try:
        return canonical_json(tokens)
    except CanonicalJSONError as error:
        raise ValueError(f"tokens: {error}") from None


def _store(
    target: str | bytes | os.PathLike[str] | os.PathLike[bytes] | TranscriptStore,
    *,
    durable: bool,
    max_line_bytes: int,
    session_id: str | None = None,
    tenant: str | None = None,
) -> TranscriptStore:
    if isinstance(target, str | bytes | os.PathLike):
        # A path, or a postgresql:// URI (runcontext.transcript.store.open_store).
        return open_store(
            target,
            session_id=session_id,
            tenant=tenant,
            durable=durable,
            max_line_bytes=max_line_bytes,
        )
    if session_id is not None or tenant is not None:
        raise ValueError("session_id and tenant are for a PostgreSQL URI, not a store object")
    if isinstance(target, TranscriptStore):
        return target
    raise TypeError(f"path: expected a file path or a TranscriptStore, got {type(target).__name__}")


def _check_max_line_bytes(max_line_bytes: object) -> None:
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int):
        raise TypeError(f"max_line_bytes: expected an int, got {type(max_line_bytes).__name__}")
    if max_line_bytes < 1:
        raise ValueError(
            f"max_line_bytes: expected at least 1, got {max_line_bytes} (there is no "
            "'unlimited': every record is longer than 0 bytes; give a large cap instead)"
        )


def _check_message(state: Transcript, body: bytes, argument: str, index: int) -> None:
    try:
        state.check_message(body, index)
    except ValueError as error:
        raise ValueError(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from None


def _write_message(state: Transcript, body: bytes, argument: str) -> bytes:
    try:
        line: bytes = state.write_message(body)
    except ValueError as error:
        raise ValueError(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from None
    return line


def _check_position(value: object, argument: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument}: expected a position (int), got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{argument}: expected a position of at least 0, got {value}")


def _compaction_tokens(
    before: int | None, after: int | None, quality: str | None
) -> tuple[int, int, str] | None:
    """A compaction's ``tokens`` member: both counts or neither."""
    if before is None and after is None:
        if quality is not None:
            raise ValueError("quality: give it with tokens_before and tokens_after")
        return None
    if before is None or after is None:
        raise ValueError("tokens_before and tokens_after: give both or neither")
    for value, argument in ((before, "tokens_before"), (after, "tokens_after")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{argument}: expected an int, got {type(value).__name__}")
        if not 0 <= value <= 2**53 - 1:
            raise ValueError(
                f"{argument}: expected a whole number from 0 to 2**53 - 1, got {value}"
            )
    quality = "estimated" if quality is None else quality
    if quality not in _QUALITIES:
        raise ValueError(f"quality: expected 'exact', 'calibrated' or 'estimated', got {quality!r}")
    return before, after, quality
