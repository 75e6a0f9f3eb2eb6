"""The file store hands its chunks of lines to the core whole (FileStore.read_chunks, the
binding's Transcript.read_chunks): a transcript read that way must read exactly as one read
line by line, wherever the chunk and batch boundaries fall. The independent check is the
same bytes read through the in-memory store, which splits the lines itself and hands the
core one line at a time (Transcript.read_lines)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext, Session
from runcontext._core import Transcript
from runcontext.transcript import TornTranscriptWarning, TranscriptError, files
from runcontext.transcript.memory import BytesStore
from runcontext.transcript.session import TornTail

SEED = {"role": "system", "content": "seed"}
TOKENS = {"head": 1, "conversation": 2, "tail": 3, "tools": 0, "quality": "exact"}


def _transcript(path: Path, runs: int = 6) -> bytes:
    """A transcript whose lines differ in length (so boundaries fall everywhere in them),
    with sections, facts, a run with tokens and one whose context repeats the one before."""
    conversation: list[dict[str, Any]] = [SEED]
    with Session.create(path, conversation) as session:
        for number in range(runs):
            conversation.append({"role": "user", "content": "u" * (number * 37 % 101)})
            context = RunContext(
                head_sections=[("AGENTS.md", f"rules {number // 2}")],
                facts=[("date", f"d{number // 3}")],
            )
            reply = {"role": "assistant", "content": "a" * (number * 53 % 89)}
            session.record_run(conversation, context, reply, tokens=TOKENS if number == 2 else None)
            conversation.append(reply)
    return path.read_bytes()


def _read(session: Session) -> tuple[object, ...]:
    """Everything a session read, as plain values."""
    runs = session.runs()
    return (
        session.messages(),
        runs,
        [(run.context.digest, run.sections, run.context.facts) for run in runs],
        session.chain,
        session.created,
        session.message_count,
        session.torn,
    )


def _from_memory(data: bytes, **options: Any) -> tuple[object, ...]:
    store = BytesStore(data, name="<bytes>", max_line_bytes=options.get("max_line_bytes", 1 << 26))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornTranscriptWarning)
        with Session.open(store, writable=False, **options) as session:
            return _read(session)


def _from_file(path: Path, **options: Any) -> tuple[object, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornTranscriptWarning)
        with Session.open(path, writable=False, **options) as session:
            return _read(session)


def _refusal(open_it: Any) -> tuple[str, int | None]:
    with pytest.raises(TranscriptError) as info:
        open_it()
    return info.value.kind, info.value.line


def test_every_chunk_boundary_reads_as_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path)
    expected = _from_memory(data)
    longest = max(len(line) for line in data.split(b"\n"))
    # Every chunk size up to two lines long puts a boundary at every offset of some line:
    # just before, on and just after a newline, and lines spanning several chunks.
    for chunk in range(1, 2 * longest + 3):
        monkeypatch.setattr(files, "_CHUNK", chunk)
        assert _from_file(path) == expected, f"_CHUNK={chunk}"


def test_a_chunk_ending_exactly_at_a_newline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path)
    first, second = (len(line) for line in data.split(b"\n")[:2])
    for chunk in (first + 1, first + 1 + second + 1):  # the newline is a chunk's last byte
        monkeypatch.setattr(files, "_CHUNK", chunk)
        assert data[chunk - 1 : chunk] == b"\n"
        assert _from_file(path) == _from_memory(data)


@pytest.mark.parametrize("batch", [1, 200, 1000, 5000])
def test_batches_of_chunks_read_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path, runs=12)
    monkeypatch.setattr(files, "_BATCH", batch)
    for chunk in (1, 7, 256, 1 << 20):
        monkeypatch.setattr(files, "_CHUNK", chunk)
        assert _from_file(path) == _from_memory(data), f"_CHUNK={chunk}"


def test_read_splits_the_chunks_into_the_lines_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The protocol's read: lines, whatever they hold (a store knows nothing of records).
    path = tmp_path / "t.jsonl"
    data = b"a\n\nbc\r\n\n\ndef\n" + b"x" * 40 + b"\nghi"
    path.write_bytes(data)
    store = files.FileStore(path)
    store.open(writable=False)
    try:
        for chunk in range(1, len(data) + 2):
            monkeypatch.setattr(files, "_CHUNK", chunk)
            lines, cursor = store.read(None)
            assert lines == data.split(b"\n")[:-1], f"_CHUNK={chunk}"
            assert (cursor, store.partial) == (data.rindex(b"\n") + 1, 3)
            chunks, cursor = store.read_chunks(3)  # after "a" and the empty line
            assert [line for c in chunks for line in c.split(b"\n")] == lines[2:]
    finally:
        store.close()


def test_read_names_the_lines_before_one_over_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    data = b"a\nbb\n\nccc\n" + b"x" * 100  # no newline: read until the cap is passed
    path.write_bytes(data)
    store = files.FileStore(path, max_line_bytes=50)
    store.open(writable=False)
    try:
        for chunk in (1, 2, 3, 7, 40, 1 << 20):
            monkeypatch.setattr(files, "_CHUNK", chunk)
            with pytest.raises(files.LineTooLong) as info:
                store.read(None)
            assert (info.value.lines, info.value.cursor) == ([b"a", b"bb", b"", b"ccc"], 10)
            with pytest.raises(files.LineTooLong) as info:
                store.read_chunks(None)
            assert b"\n".join(info.value.lines) == b"a\nbb\n\nccc"
    finally:
        store.close()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data.replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param(lambda data: data.replace(b"\n", b"\n\n", 3), id="blank-line"),
        pytest.param(lambda data: data + b"\n", id="blank-last-line"),
        pytest.param(lambda data: data.replace(b'"u', b'"v', 1), id="edited"),
    ],
)
def test_a_refused_line_is_named_as_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    path = tmp_path / "t.jsonl"
    data = damage(_transcript(path))
    path.write_bytes(data)
    expected = _refusal(lambda: _from_memory(data))
    for chunk in (1, 5, 64, 333, 1 << 20):
        monkeypatch.setattr(files, "_CHUNK", chunk)
        assert _refusal(lambda: _from_file(path)) == expected, f"_CHUNK={chunk}"


def test_the_line_cap_hit_in_the_middle_of_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path)
    with Session.open(path) as session:
        session.append_messages([{"role": "user", "content": "x" * 3000}])
        session.append_messages([{"role": "user", "content": "after"}])
    data = path.read_bytes()
    long_line = len(data.split(b"\n")) - 2  # the 3000-byte message, before the last line
    for chunk in (1, 100, 999, 2500, 4000, 1 << 20):  # cut inside the long line, or not
        monkeypatch.setattr(files, "_CHUNK", chunk)
        assert _refusal(lambda: _from_file(path, max_line_bytes=2048)) == ("too-long", long_line)
    assert _refusal(lambda: _from_memory(data, max_line_bytes=2048)) == ("too-long", long_line)


def test_a_refused_line_in_a_chunk_is_reported_again_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The records before the refused one in its chunk stay applied: the next refresh names
    # the same line again instead of reading them a second time.
    path = tmp_path / "t.jsonl"
    _transcript(path)
    monkeypatch.setattr(files, "_CHUNK", 1 << 20)
    with Session.open(path) as session, Session.open(path) as other:
        count = session.message_count
        other.append_messages([{"role": "user", "content": f"m{i}"} for i in range(3)])
        with path.open("ab") as file:
            file.write(b'{"oops":1}\n')
        bad = len(path.read_bytes().splitlines())
        for _ in range(2):
            with pytest.raises(TranscriptError) as info:
                session.refresh()
            assert info.value.line == bad
        assert session.message_count == count + 3


def test_a_torn_tail_after_many_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path, runs=10) + b'{"chain":"blake3:0'  # a writer killed mid-append
    path.write_bytes(data)
    expected = _from_memory(data)
    for chunk in (1, 3, 16, 100, 1 << 20):
        monkeypatch.setattr(files, "_CHUNK", chunk)
        with pytest.warns(TornTranscriptWarning, match="the last record is torn"):
            Session.open(path, writable=False).close()
        assert _from_file(path) == expected
    complete = data.rindex(b"\n") + 1
    assert expected[-1] == TornTail(
        line=data.count(b"\n") + 1, offset=complete, length=len(data) - complete
    )


def test_refresh_reads_what_another_writer_appended_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    _transcript(path)
    monkeypatch.setattr(files, "_CHUNK", 13)
    with Session.open(path) as reader, Session.open(path) as writer:
        conversation = writer.messages()
        for number in range(5):
            conversation.append({"role": "user", "content": "w" * number * 31})
            writer.record_run(conversation, RunContext(facts=[("n", str(number))]))
            reader.refresh()
            assert _read(reader) == _read(writer) == _from_memory(path.read_bytes())


def test_the_binding_splits_chunks_as_bytes_split(tmp_path: Path) -> None:
    # Transcript.read_chunks against Transcript.read_lines of the split lines, the header
    # included, with lines skipped across chunk boundaries.
    path = tmp_path / "t.jsonl"
    lines = _transcript(path).split(b"\n")[:-1]
    joined = b"\n".join(lines)
    for cut in range(0, len(joined), 17):
        start = joined.rfind(b"\n", 0, cut) + 1
        end = joined.find(b"\n", cut)
        if end < 0 or start >= end:
            continue
        # The lines before the line at `cut`, that line alone, the lines after it.
        chunks = [*([joined[: start - 1]] if start else []), joined[start:end], joined[end + 1 :]]
        for skip in (0, 1, 4):
            by_chunk = _binding_read(chunks, skip, "read_chunks")
            by_line = _binding_read(lines, skip, "read_lines")
            assert by_chunk == by_line


def _binding_read(batch: list[bytes], skip: int, method: str) -> tuple[object, ...]:
    state = Transcript("t.jsonl")
    if skip:  # the skipped lines were applied by an earlier call, as the session does
        state.read_lines(_lines(batch)[:skip], 0)
    getattr(state, method)(batch, skip)
    messages = [state.message(i) for i in range(state.message_count)]
    return messages, state.runs(), state.lines, state.chain, state.header_time


def _lines(chunks: list[bytes]) -> list[bytes]:
    return [line for chunk in chunks for line in chunk.split(b"\n")]


def test_a_file_store_subclass_that_reads_its_own_way_is_read_through_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    data = _transcript(path)
    batches: list[int] = []

    class Logged(files.FileStore):
        def read(self, cursor: object) -> tuple[list[bytes], object]:
            lines, cursor = super().read(cursor)
            batches.append(len(lines))
            return lines, cursor

    with Session.open(Logged(path), writable=False) as session:
        assert _read(session) == _from_memory(data)
    assert sum(batches) == data.count(b"\n")  # every line came through the override
