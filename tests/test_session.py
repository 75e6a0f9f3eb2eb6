"""Session transcripts: the format, section dedupe, reading back, verification, seed check."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import types
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest

import runcontext
import runcontext.transcript.files
import runcontext.transcript.session
from runcontext import RunContext, canonical_json
from runcontext.transcript import (
    ConversationMismatchError,
    SeedMismatchError,
    Session,
    TornTail,
    TornTranscriptError,
    TornTranscriptWarning,
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
)

from chain import appended, rechain, relinked

START = datetime(2025, 1, 31, 9, 30, tzinfo=UTC)
SEED = {"role": "system", "content": "You are a careful coding agent."}
AGENTS = "".join(f"Rule {i}: keep the build green and explain every change.\n" for i in range(150))


def ticking_clock(step: timedelta = timedelta(minutes=1)) -> Callable[[], datetime]:
    """A deterministic clock: START, START + step, START + 2 step, …"""
    ticks = iter(range(1_000_000))
    return lambda: START + step * next(ticks)


def context(date: str = "2025-01-31", agents: str = AGENTS) -> RunContext:
    return RunContext(
        head_sections=[("AGENTS.md", agents)],
        facts=[("date", date), ("branch", "main")],
        tail_sections=[("notes", "Nothing urgent.")],
    )


def line(record: dict[str, Any]) -> bytes:
    return canonical_json(record) + b"\n"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


T = TypeVar("T")


def without_waiting(call: Callable[[], T]) -> T:
    """Run ``call`` in a thread: a reader that waited for the lock the test holds would never
    return, and the test fails instead of hanging (the lock is released when it ends)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(call())
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the reader is waiting for the writer's lock"
    if errors:
        raise errors[0]
    return results[0]


def patch_os(monkeypatch: pytest.MonkeyPatch, **functions: Callable[..., Any]) -> None:
    """Replace functions of ``os`` as the file store sees them, and nowhere else."""
    patched = types.SimpleNamespace(**{**vars(os), **functions})
    monkeypatch.setattr(runcontext.transcript.files, "os", patched)


def rewrite_line(path: Path, number: int, data: bytes) -> None:
    """Replace a line as a forger would, re-chaining the file so that the checks behind the
    chain are what the test reaches (tests/test_transcript_chain.py covers the chain)."""
    lines = lines_of(path)
    lines[number - 1] = data
    path.write_bytes(b"".join(lines))
    rechain(path)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "session.jsonl"


# --- format -----------------------------------------------------------------------------------


def test_the_file_is_canonical_json_lines_with_the_documented_records(path: Path) -> None:
    user = {"role": "user", "content": "Fix the flaky test."}
    reply = {"role": "assistant", "content": "Done."}
    ctx = context()
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        recorded = session.record_run([SEED, user], ctx, reply)

    agents, notes = ctx.sections
    assert (agents.position, notes.position) == ("head", "tail")
    assert lines_of(path) == relinked(
        [
            line(
                {
                    "type": "header",
                    "format": "runcontext-transcript",
                    "version": 2,
                    "context_format": runcontext.FORMAT_VERSION,
                    "seed": runcontext.digest(SEED),
                    "time": "2025-01-31T09:30:00Z",
                }
            ),
            line({"type": "message", "index": 0, "message": SEED}),
            line({"type": "message", "index": 1, "message": user}),
            line(
                {
                    "type": "section",
                    "digest": agents.digest,
                    "name": "AGENTS.md",
                    "text": agents.text,
                }
            ),
            line(
                {
                    "type": "section",
                    "digest": notes.digest,
                    "name": "notes",
                    "text": "Nothing urgent.",
                }
            ),
            line(
                {
                    "type": "run-context",
                    "run": 1,
                    "digest": ctx.digest,
                    "time": "2025-01-31T09:31:00Z",
                    "messages": 2,
                    "sections": [
                        {"position": "head", "name": "AGENTS.md", "digest": agents.digest},
                        {"position": "tail", "name": "notes", "digest": notes.digest},
                    ],
                    "facts": [["date", "2025-01-31"], ["branch", "main"]],
                }
            ),
            line({"type": "message", "index": 2, "message": reply}),
        ]
    )
    assert recorded.number == 1
    assert recorded.digest == ctx.digest
    assert recorded.time == datetime(2025, 1, 31, 9, 31, tzinfo=UTC)


def test_the_same_session_writes_the_same_bytes(tmp_path: Path) -> None:
    def write(target: Path) -> bytes:
        with Session.create(target, [SEED], clock=ticking_clock()) as session:
            for day in range(1, 4):
                session.record_run(
                    session.messages(),
                    context(f"2025-02-0{day}"),
                    {"role": "assistant", "content": str(day)},
                )
        return target.read_bytes()

    assert write(tmp_path / "a.jsonl") == write(tmp_path / "b.jsonl")


def test_timestamps_are_utc_with_z_whatever_the_clock_zone(path: Path) -> None:
    paris = timezone(timedelta(hours=1))
    moment = datetime(2025, 1, 31, 10, 30, 0, 250_000, tzinfo=paris)
    with Session.create(path, [SEED], clock=lambda: moment) as session:
        session.record_run([SEED], None)
    header = json.loads(lines_of(path)[0])
    envelope = json.loads(lines_of(path)[-1])
    assert header["time"] == envelope["time"] == "2025-01-31T09:30:00.250000Z"


def test_a_naive_clock_is_refused_and_nothing_is_written(path: Path) -> None:
    with pytest.raises(ValueError, match="naive datetime"):
        Session.create(path, [SEED], clock=lambda: datetime(2025, 1, 31))
    assert not path.exists()
    assert list(path.parent.iterdir()) == []  # no temporary file left behind


def test_create_needs_a_seed_and_never_overwrites(path: Path) -> None:
    with pytest.raises(ValueError, match="first message"):
        Session.create(path, [])
    Session.create(path, [SEED]).close()
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        Session.create(path, [{"role": "user", "content": "another conversation"}])
    assert path.read_bytes() == before


def test_create_names_a_bad_first_message_and_writes_nothing(path: Path) -> None:
    with pytest.raises(
        TypeError,
        match=r"^messages\[0\]: the message cannot be stored in a transcript: \$\.content",
    ):
        Session.create(path, [{"role": "system", "content": b"bytes"}])
    assert list(path.parent.iterdir()) == []


def test_durable_appends_fsync_once_per_append(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    patch_os(monkeypatch, fsync=fsync)
    with Session.create(path, [SEED], durable=True) as session:
        assert len(synced) == 2  # the file, then its directory (the link)
        session.record_run([SEED, {"role": "user", "content": "q"}], context(), SEED)
        assert len(synced) == 3  # five records (message, 2 sections, envelope, reply), one fsync
        session.append_messages(
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        )
        assert len(synced) == 4
    with Session.create(path.with_name("fast.jsonl"), [SEED]) as session:
        session.append_messages([{"role": "user", "content": "a"}])
    assert len(synced) == 4  # durable=False never syncs


# --- section dedupe ---------------------------------------------------------------------------


def test_forty_runs_with_an_unchanged_agents_md_store_its_text_once(path: Path) -> None:
    assert 8_000 <= len(AGENTS.encode()) <= 8_500
    conversation = [SEED, {"role": "user", "content": "Keep going."}]
    session = Session.create(path, conversation, clock=ticking_clock())
    session.record_run(conversation, context("day 0"))
    for run in range(2, 41):
        size = path.stat().st_size
        ctx = context(f"day {run}")  # the facts change each run; AGENTS.md does not
        session.record_run(conversation, ctx)
        envelope = lines_of(path)[-1]
        # The file grew by exactly the envelope, which is small and names AGENTS.md by digest.
        assert path.stat().st_size - size == len(envelope) < 600
        assert json.loads(envelope)["run"] == run
    data = path.read_bytes()
    assert data.count(json.dumps(AGENTS.rstrip()).encode()) == 1
    assert [json.loads(raw)["type"] for raw in lines_of(path)].count("section") == 2
    assert len(data) < len(AGENTS) + 40 * 600
    session.close()


def test_a_changed_section_is_stored_again_and_an_old_one_is_reused(path: Path) -> None:
    edited = AGENTS + "Rule 150: never force-push.\n"
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        for agents in (AGENTS, edited, AGENTS, edited):
            session.record_run([SEED], context(agents=agents))
    sections = [json.loads(raw) for raw in lines_of(path) if b'"type":"section"' in raw]
    assert [s["name"] for s in sections] == ["AGENTS.md", "notes", "AGENTS.md"]
    assert [s["text"] for s in sections if s["name"] == "AGENTS.md"] == [
        AGENTS.rstrip(),
        edited.rstrip(),
    ]


# --- reading back -----------------------------------------------------------------------------


def test_reading_back_gives_the_conversation_and_every_context(path: Path) -> None:
    conversation: list[dict[str, Any]] = [SEED]
    contexts = [
        context("Monday"),
        RunContext(facts=[("date", "Tuesday")]),
        None,
        context("Thursday"),
    ]
    with Session.create(path, conversation, clock=ticking_clock()) as session:
        for day, ctx in enumerate(contexts):
            conversation.append({"role": "user", "content": f"question {day}", "n": day})
            reply = {"role": "assistant", "content": [{"type": "text", "text": f"answer {day}"}]}
            session.record_run(conversation, ctx, reply)
            conversation.append(reply)

    with Session.open(path) as reopened:
        assert reopened.messages() == conversation
        assert reopened.seed == runcontext.digest(SEED)
        assert reopened.created == START
        runs = reopened.runs()
        assert [r.number for r in runs] == [1, 2, 3, 4]
        assert [r.messages for r in runs] == [2, 4, 6, 8]
        expected = [RunContext() if ctx is None else ctx for ctx in contexts]
        assert [r.context for r in runs] == expected
        assert [r.digest for r in runs] == [ctx.digest for ctx in expected]
        assert [r.context.tail_text for r in runs] == [ctx.tail_text for ctx in expected]
        assert [r.time for r in runs] == [START + timedelta(minutes=m) for m in (1, 2, 3, 4)]
        assert reopened.context_at(4).head_text == AGENTS.rstrip()
        assert reopened.context_at(2).facts == (("date", "Tuesday"),)
        with pytest.raises(IndexError, match="no run 5: the transcript has runs 1 to 4"):
            reopened.context_at(5)
        # messages() is a copy: mutating it does not change what the session holds.
        reopened.messages()[0]["content"] = "changed"
        assert reopened.messages()[0] == SEED


def test_messages_are_stored_exactly_and_a_non_json_message_writes_nothing(path: Path) -> None:
    unicode = {"role": "user", "content": 'café \u2028 😀 "quoted"', "meta": {"b": [1, 2.5, None]}}
    with Session.create(path, [SEED, unicode]) as session:
        size = path.stat().st_size
        with pytest.raises(TypeError, match=r"messages\[2\]: the message cannot be stored"):
            session.record_run([SEED, unicode, {"role": "user", "content": b"bytes"}], None)
        assert path.stat().st_size == size
        assert session.messages() == [SEED, unicode]


def test_a_resumed_session_continues_numbering(path: Path) -> None:
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        session.record_run([SEED], context("a"), {"role": "assistant", "content": "1"})
    with Session.open(path, clock=ticking_clock()) as resumed:
        conversation = resumed.messages()
        assert resumed.record_run(conversation, context("a")).number == 2
    sections = [raw for raw in lines_of(path) if b'"type":"section"' in raw]
    assert len(sections) == 2  # the resumed session knew both sections were already stored


def test_two_sessions_on_one_file_see_each_others_records(path: Path) -> None:
    first = Session.create(path, [SEED], clock=ticking_clock())
    second = Session.open(path, clock=ticking_clock())
    first.record_run([SEED], context("a"))
    second.append_messages([{"role": "user", "content": "from the second"}])
    run = second.record_run(second.messages(), context("b"))
    assert run.number == 2  # not 1: the second session read the first's run under the lock
    first.append_messages([{"role": "user", "content": "from the first"}])
    assert [m["content"] for m in first.messages()[1:]] == ["from the second", "from the first"]
    assert sum(b'"type":"section"' in raw for raw in lines_of(path)) == 2
    first.close()
    second.close()


@pytest.mark.parametrize("value", [1e16, 2.0**60, 123456789012345680.0, -1e20])
def test_large_whole_floats_read_back_as_the_same_doubles(path: Path, value: float) -> None:
    # Canonical JSON writes these doubles as integer literals (1e16 as 10000000000000000),
    # beyond what an int may hold exactly; they must read back as the same doubles.
    message = {"role": "user", "content": "x", "n": value, "nested": [value, {"v": -value}]}
    reply = {"role": "assistant", "content": "ok", "n": value}
    with Session.create(path, [SEED, message]) as session:
        session.append_messages([message])
        session.record_run([SEED, message, message], None, reply)
    literal = canonical_json(value)
    assert b"e" not in literal and b"." not in literal
    assert literal in lines_of(path)[2]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn line: nothing to repair
        reopened = Session.open(path)
    with reopened:
        assert reopened.torn is None
        read = reopened.messages()
        assert read == [SEED, message, message, reply]
        assert type(read[1]["n"]) is float and type(read[1]["nested"][1]["v"]) is float
        assert [runcontext.digest(m) for m in read] == [
            runcontext.digest(m) for m in (SEED, message, message, reply)
        ]
        # The read conversation continues the transcript: its digests match the recorded ones.
        assert reopened.record_run([*read, message], None).number == 2


def test_a_small_integer_stays_an_int_and_an_unsafe_one_is_refused(path: Path) -> None:
    with Session.create(path, [SEED, {"role": "user", "content": "x", "n": 9007199254740991}]):
        pass
    with Session.open(path) as session:
        assert type(session.messages()[1]["n"]) is int
    rewrite_line(path, 3, lines_of(path)[2].replace(b"9007199254740991", b"9007199254740993"))
    error = _error(path)
    assert error.line == 3
    assert str(error).startswith(f"{path}:3: not a canonical JSON record: ")
    assert error.kind == "not-canonical"


def test_a_read_only_session_refuses_appends(path: Path) -> None:
    Session.create(path, [SEED]).close()
    with Session.open(path, writable=False) as session:
        assert session.messages() == [SEED]
        with pytest.raises(ValueError, match="writable=False"):
            session.append_messages([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="repair=True needs a writable session"):
        Session.open(path, writable=False, repair=True)


@pytest.mark.parametrize(
    "refusal",
    [
        PermissionError(errno.EACCES, "Permission denied"),
        OSError(errno.EROFS, "Read-only file system"),  # a read-only mount: not a PermissionError
    ],
    ids=["EACCES", "EROFS"],
)
def test_a_file_this_process_cannot_write_opens_read_only(
    path: Path, monkeypatch: pytest.MonkeyPatch, refusal: OSError
) -> None:
    Session.create(path, [SEED]).close()
    real_open = os.open

    def open_without_write_permission(file: Any, flags: int, *args: Any) -> int:
        if flags & (os.O_RDWR | os.O_WRONLY):
            raise type(refusal)(refusal.errno, refusal.strerror, os.fspath(file))
        return real_open(file, flags, *args)

    patch_os(monkeypatch, open=open_without_write_permission)
    with Session.open(path) as session:  # reading needs no write permission
        assert not session.writable
        assert session.messages() == [SEED]
        with pytest.raises(ValueError, match=r"the session is read-only .*writable=True to append"):
            session.append_messages([{"role": "user", "content": "hi"}])
    with pytest.raises(PermissionError, match=r"cannot be opened for appending .*writable=False"):
        Session.open(path, writable=True)
    with pytest.raises(PermissionError):
        Session.open(path, repair=True)


def test_readers_take_no_lock_and_leave_an_append_in_progress_alone(path: Path) -> None:
    Session.create(path, [SEED]).close()
    record = appended(
        path, {"type": "message", "index": 1, "message": {"role": "user", "content": "late"}}
    )
    with path.open("ab", buffering=0) as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)  # a writer in the middle of an append, or stopped
        writer.write(record[:20])

        def read() -> tuple[Session, list[Any]]:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # an append in progress is not a torn line
                session = Session.open(path, writable=False)
                return session, session.messages()

        session, messages = without_waiting(read)
        assert messages == [SEED]
        assert session.torn is None
        writer.write(record[20:])  # the append completes while the lock is still held
        assert without_waiting(session.messages)[-1] == {"role": "user", "content": "late"}
        fcntl.flock(writer, fcntl.LOCK_UN)
        # Without a writer holding the lock, a partial last line is a torn record.
        writer.write(record[:20])
    with pytest.warns(TornTranscriptWarning, match=":4: the last record is torn"):
        assert len(session.messages()) == 2
    assert session.torn == TornTail(line=4, offset=len(path.read_bytes()) - 20, length=20)
    session.close()


def test_an_interrupted_append_leaves_the_session_matching_the_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.create(path, [SEED])
    real_append = runcontext.transcript.files.FileStore.append
    interrupted: list[int] = []

    def append_then_interrupt(self: Any, lines: Any) -> None:
        real_append(self, lines)
        if not interrupted:
            interrupted.append(len(lines))
            raise KeyboardInterrupt  # the records are in the file, not yet in the session

    monkeypatch.setattr(runcontext.transcript.files.FileStore, "append", append_then_interrupt)
    first, second = {"role": "user", "content": "1"}, {"role": "user", "content": "2"}
    with pytest.raises(KeyboardInterrupt):
        session.append_messages([first])
    assert interrupted == [1]
    assert session.message_count == 1  # rolled back: the session holds what it has read
    assert session.messages() == [SEED, first]  # and reads the record from the file, verified
    session.append_messages([second])
    session.close()
    with Session.open(path) as reopened:
        assert reopened.messages() == [SEED, first, second]


def test_a_write_that_fails_midway_keeps_whole_records_only(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.create(path, [SEED], clock=ticking_clock())
    user, reply = {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}
    ctx = RunContext(facts=[("date", "Monday")])  # no sections: message, envelope, reply
    real_write = os.write
    calls: list[int] = []

    def write_until_the_disk_is_full(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 2:  # the envelope: half of it is accepted, then the disk is full
            return real_write(fd, bytes(data[: len(data) // 2]))
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    patch_os(monkeypatch, write=write_until_the_disk_is_full)
    with pytest.raises(OSError, match="No space left") as info:
        session.record_run([SEED, user], ctx, reply)
    assert info.value.__notes__ == [
        f"runcontext: 1 of the 3 records of this append were written to {path} before it failed"
    ]
    monkeypatch.undo()
    assert path.read_bytes().endswith(b"\n")  # the half envelope was truncated away
    assert [json.loads(raw)["type"] for raw in lines_of(path)] == ["header", "message", "message"]
    assert session.torn is None
    # What a crash at that point would leave; recording the run again completes it.
    assert session.record_run([SEED, user], ctx, reply).number == 1
    session.close()
    with Session.open(path) as reopened:
        assert reopened.messages() == [SEED, user, reply]
        assert [run.context for run in reopened.runs()] == [ctx]


def test_a_context_is_built_once_for_consecutive_runs_that_repeat_it(path: Path) -> None:
    monday, tuesday = context("Monday"), context("Tuesday")
    with Session.create(path, [SEED]) as session:
        for ctx in (monday, monday, tuesday, monday):
            session.record_run([SEED], ctx)
        assert session.runs()[1].context is monday  # its own runs: the context it was given
    with Session.open(path) as reopened:
        runs = reopened.runs()
        assert [run.context for run in runs] == [monday, monday, tuesday, monday]
        assert runs[0].context is runs[1].context is reopened.context_at(2)
        assert runs[2].context is not runs[1].context
        assert runs[3].context == runs[0].context


# --- verification -----------------------------------------------------------------------------


def _tampered(path: Path) -> None:
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        session.record_run([SEED], context("Monday"))


def test_a_tampered_fact_fails_the_context_digest(path: Path) -> None:
    _tampered(path)
    envelope = json.loads(lines_of(path)[4])
    assert envelope["type"] == "run-context"
    envelope["facts"][0][1] = "Sunday"
    rewrite_line(path, 5, line(envelope))
    with pytest.raises(
        TranscriptDigestError, match=r"session\.jsonl:5: run 1's context rebuilt"
    ) as info:
        Session.open(path)
    assert info.value.line == 5
    assert RunContext(facts=[("date", "Monday")]).digest not in str(info.value)
    assert envelope["digest"] in str(info.value)


def test_a_tampered_section_text_fails_its_digest(path: Path) -> None:
    _tampered(path)
    section = json.loads(lines_of(path)[2])
    assert section["type"] == "section"
    section["text"] = section["text"].replace("green", "red")
    rewrite_line(path, 3, line(section))
    with pytest.raises(
        TranscriptDigestError,
        match=r':3: section "AGENTS.md": its text does not have the recorded digest',
    ):
        Session.open(path)


def test_a_tampered_digest_in_the_envelope_fails(path: Path) -> None:
    _tampered(path)
    envelope = json.loads(lines_of(path)[4])
    envelope["digest"] = runcontext.RunContext(facts=[("x", "y")]).digest
    rewrite_line(path, 5, line(envelope))
    with pytest.raises(
        TranscriptDigestError, match=r":5: run 1's context rebuilt from the transcript has digest"
    ) as info:
        Session.open(path)
    assert envelope["digest"] in str(info.value)


def test_an_envelope_naming_an_entry_a_context_would_drop_is_refused(path: Path) -> None:
    # An empty section leaves the context digest unchanged (RunContext drops it), so the digest
    # alone would not notice an envelope that names one.
    _tampered(path)
    empty = {"type": "section", "digest": runcontext.digest({"name": "x", "text": ""})}
    envelope = json.loads(lines_of(path)[4])
    envelope["sections"].append({"position": "tail", "name": "x", "digest": empty["digest"]})
    lines = lines_of(path)
    lines[4:5] = [line({**empty, "name": "x", "text": ""}), line(envelope)]
    path.write_bytes(b"".join(lines))
    rechain(path)
    error = _error(path)
    assert error.line == 6
    assert "run 1's sections and facts are not those of a RunContext built from them" in str(error)


# --- seed check -------------------------------------------------------------------------------


def test_the_seed_check_refuses_another_conversation_showing_both_digests(path: Path) -> None:
    Session.create(path, [SEED, {"role": "user", "content": "hi"}]).close()
    other = {"role": "system", "content": "You are a poet."}
    with Session.open(path) as session:
        session.check_seed([SEED])  # the same seed passes, whatever follows it
        session.check_seed([SEED, {"role": "user", "content": "something else"}])
        size = path.stat().st_size
        with pytest.raises(SeedMismatchError) as info:
            session.record_run([other, {"role": "user", "content": "hi"}], context())
        assert path.stat().st_size == size
    error = info.value
    assert error.recorded == runcontext.digest(SEED)
    assert error.given == runcontext.digest(other)
    assert error.recorded in str(error) and error.given in str(error)
    assert isinstance(error, ValueError)


def test_the_seed_check_ignores_the_context(path: Path) -> None:
    with Session.create(path, [SEED]) as session:
        session.record_run([SEED], context("a"))
        session.record_run([SEED], RunContext(head_sections=[("other", "Completely different.")]))
        assert len(session.runs()) == 2


def test_a_shorter_conversation_is_refused(path: Path) -> None:
    with Session.create(path, [SEED, {"role": "user", "content": "hi"}]) as session:
        with pytest.raises(
            ConversationMismatchError, match="has 1 messages but the transcript already records 2"
        ):
            session.record_run([SEED], None)
        with pytest.raises(SeedMismatchError, match="it is empty"):
            session.check_seed([])


def test_a_conversation_whose_last_recorded_message_differs_is_refused(path: Path) -> None:
    seed = {"role": "user", "content": "seed"}
    first = Session.create(path, [seed], clock=ticking_clock())
    second = Session.open(path, clock=ticking_clock())
    to_first = {"role": "assistant", "content": "reply to the first"}
    first.record_run([seed], RunContext(facts=[("who", "first")]), to_first)
    size = path.stat().st_size
    other = {"role": "assistant", "content": "the second's own history"}
    with pytest.raises(ConversationMismatchError) as info:  # the second never saw that reply
        second.record_run([seed, other], RunContext(facts=[("who", "second")]), other)
    assert path.stat().st_size == size  # nothing written
    error = info.value
    assert (error.index, error.recorded, error.given) == (
        1,
        runcontext.digest(to_first),
        runcontext.digest(other),
    )
    assert error.line == 4  # header, message 0, run 1's envelope, then the reply
    assert str(error).startswith(
        f"{path}:4: the conversation does not continue this transcript: its message 1 has "
        f"digest {error.given}, but the transcript's message 1 (the last recorded) has digest "
        f"{error.recorded}"
    )
    with pytest.raises(ConversationMismatchError, match="its message 1 has digest"):
        second.check_conversation([seed, other, {"role": "user", "content": "more"}])
    second.check_conversation([seed, to_first, {"role": "user", "content": "more"}])
    assert second.record_run([seed, to_first], None).number == 2
    first.close()
    second.close()


# --- bad input --------------------------------------------------------------------------------


@pytest.fixture
def valid(path: Path) -> Path:
    with Session.create(path, [SEED], clock=ticking_clock()) as session:
        session.record_run([SEED], context("Monday"), {"role": "assistant", "content": "ok"})
    # header, message 0, section AGENTS.md, section notes, run-context, message 1
    assert [json.loads(raw)["type"] for raw in lines_of(path)] == [
        "header",
        "message",
        "section",
        "section",
        "run-context",
        "message",
    ]
    return path


def _error(path: Path) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        Session.open(path)
    return info.value


def test_a_line_that_is_not_json_is_named(valid: Path) -> None:
    rewrite_line(valid, 4, b'{"type": "section", oops\n')
    error = _error(valid)
    assert isinstance(error, TranscriptFormatError)
    assert error.line == 4
    assert str(error).startswith(f"{valid}:4: not JSON: ")


def test_an_unknown_record_type_is_named(valid: Path) -> None:
    rewrite_line(valid, 2, line({"type": "note", "text": "hello"}))
    error = _error(valid)
    assert isinstance(error, TranscriptFormatError)
    assert f'{valid}:2: unknown record type "note"' in str(error)


def test_a_record_without_a_string_type_is_named(valid: Path) -> None:
    rewrite_line(valid, 3, line({"type": ["section"]}))
    assert "a record's 'type' must be a string, got array" in str(_error(valid))
    rewrite_line(valid, 3, b"[1,2]\n")
    assert f"{valid}:3: expected a JSON object, got array" in str(_error(valid))


def test_a_run_naming_a_missing_section_is_named(valid: Path) -> None:
    lines = lines_of(valid)
    del lines[2]  # the AGENTS.md section record; the envelope is now line 4
    valid.write_bytes(b"".join(lines))
    rechain(valid)
    error = _error(valid)
    assert isinstance(error, TranscriptFormatError)
    assert error.line == 4
    assert 'run 1 names section "AGENTS.md"' in str(error)
    assert "which no section record before it holds under that name" in str(error)


def test_a_future_format_version_is_refused(valid: Path) -> None:
    header = json.loads(lines_of(valid)[0])
    header["version"] = 3
    header["something_new"] = True
    rewrite_line(valid, 1, line(header))
    error = _error(valid)
    assert isinstance(error, TranscriptVersionError)
    assert (error.line, error.kind) == (1, "version")
    assert "format version 3 is newer than this runcontext reads (1 and 2)" in str(error)


def test_a_non_canonical_line_is_refused(valid: Path) -> None:
    message = json.loads(lines_of(valid)[1])
    rewrite_line(valid, 2, json.dumps(message).encode() + b"\n")  # spaces, unsorted keys
    error = _error(valid)
    assert error.line == 2
    assert "not in canonical JSON form" in str(error)


def test_a_duplicate_member_is_refused_not_silently_dropped(valid: Path) -> None:
    rewrite_line(
        valid, 2, b'{"index":0,"message":{"role":"system"},"type":"message","type":"message"}\n'
    )
    error = _error(valid)
    assert error.line == 2
    assert str(error).startswith(f"{valid}:2: not a canonical JSON record: ")
    assert error.kind == "not-canonical"
    assert 'duplicate object key "type"' in str(error)


@pytest.mark.parametrize(
    ("number", "edit", "expected"),
    [
        (2, lambda r: r.update(index=5), "line 2 must be the message with index 0"),
        (2, lambda r: r.pop("index"), "a message record with missing index"),
        (3, lambda r: r.update(extra=1), "a section record with unexpected extra"),
        (5, lambda r: r.update(run=3), "run number 3, expected 1"),
        (
            5,
            lambda r: r.update(messages=9),
            "carried 9 messages, but the conversation holds only 1",
        ),
        (5, lambda r: r.update(time="2025-01-31 09:31"), "'time' must be a UTC timestamp"),
        (5, lambda r: r.update(facts={"date": "Monday"}), "'facts' must be an array"),
        (5, lambda r: r["sections"][0].update(name="README"), 'run 1 names section "README"'),
        (
            1,
            lambda r: r.update(type="message"),
            "line 1 must be the header record, not a message record",
        ),
        (6, lambda r: r.update(type="header"), "a header record after line 1"),
    ],
)
def test_malformed_records_are_named(
    valid: Path, number: int, edit: Callable[[dict[str, Any]], object], expected: str
) -> None:
    record = json.loads(lines_of(valid)[number - 1])
    edit(record)
    rewrite_line(valid, number, line(record))
    error = _error(valid)
    assert error.line == number
    assert expected in str(error)


def test_an_empty_file_is_not_a_transcript(path: Path) -> None:
    path.write_bytes(b"")
    with pytest.raises(TranscriptFormatError, match=":1: no header record"):
        Session.open(path)


def test_a_blank_line_is_refused(valid: Path) -> None:
    lines = lines_of(valid)
    lines.insert(3, b"\n")
    valid.write_bytes(b"".join(lines))
    rechain(valid)
    error = _error(valid)
    assert error.line == 4
    assert "empty line" in str(error)


# --- torn last line ---------------------------------------------------------------------------


def test_a_torn_last_line_is_reported_kept_out_and_repaired_only_when_asked(valid: Path) -> None:
    complete = valid.read_bytes()
    torn = b'{"index":2,"message":{"content":"half a rec'
    valid.write_bytes(complete + torn)

    with pytest.warns(
        TornTranscriptWarning, match=rf":7: the last record is torn \({len(torn)} bytes"
    ):
        session = Session.open(valid)
    with session:
        assert session.torn == TornTail(line=7, offset=len(complete), length=len(torn))
        assert len(session.messages()) == 2  # every complete record before it
        assert len(session.runs()) == 1
        with pytest.raises(TornTranscriptError, match=r":7: the file ends with a torn record"):
            session.append_messages([{"role": "user", "content": "next"}])
    assert valid.read_bytes() == complete + torn  # reported, not repaired

    with Session.open(valid, repair=True) as repaired:
        assert repaired.repaired == TornTail(line=7, offset=len(complete), length=len(torn))
        assert repaired.torn is None
        repaired.append_messages([{"role": "user", "content": "next"}])
    assert valid.read_bytes().startswith(complete)
    with Session.open(valid) as reopened:
        assert reopened.messages()[-1] == {"role": "user", "content": "next"}


def test_a_file_holding_only_a_torn_header_is_not_a_transcript(path: Path) -> None:
    path.write_bytes(b'{"context_format":1,"format":"runcontext-tr')
    with pytest.raises(TranscriptFormatError, match="no header record"):
        Session.open(path, repair=True)


class _Counting(list[Any]):
    """A conversation that counts how many of its messages are looked at."""

    looked = 0

    def __getitem__(self, index: Any) -> Any:
        _Counting.looked += 1
        return super().__getitem__(index)

    def __iter__(self) -> Any:
        _Counting.looked += len(self)
        return super().__iter__()


def test_record_run_looks_at_the_new_messages_not_the_conversation(path: Path) -> None:
    conversation = _Counting([SEED, *({"role": "user", "content": str(i)} for i in range(2000))])
    with Session.create(path, list(conversation)) as session:
        conversation.append({"role": "user", "content": "new"})
        _Counting.looked = 0
        session.record_run(conversation, context(), {"role": "assistant", "content": "ok"})
        # Message 0 (the seed), the last recorded one, the new one: a handful, not 2,002.
        assert _Counting.looked < 20
        assert session.message_count == 2003
