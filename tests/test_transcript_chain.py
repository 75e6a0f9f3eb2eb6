"""Tamper evidence (docs/TRANSCRIPT.md, The chain): every change to a complete record is
reported when the transcript is opened, at the first line that fails."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runcontext
from runcontext import RunContext, Session
from runcontext.transcript import (
    TornTranscriptWarning,
    TranscriptDigestError,
    TranscriptError,
    TranscriptVersionError,
)
from runcontext.transcript.errors import UnchainedTranscriptWarning

from chain import relinked

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _clock() -> object:
    ticks = iter(range(10_000))
    return lambda: START + timedelta(seconds=next(ticks))


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@st.composite
def transcripts(draw: st.DrawFn) -> list[tuple[str, str, str | None]]:
    """Runs as (user text, fact value, reply text or None)."""
    return draw(st.lists(st.tuples(texts, texts, st.none() | texts), min_size=1, max_size=3))


def _write(path: Path, runs: list[tuple[str, str, str | None]], seed: str = "seed") -> None:
    conversation: list[dict[str, str]] = [{"role": "system", "content": seed}]
    with Session.create(path, conversation, clock=_clock()) as session:  # type: ignore[arg-type]
        for user, fact, reply in runs:
            conversation.append({"role": "user", "content": user})
            context = RunContext(
                head_sections=[("AGENTS.md", "Be careful.")], facts=[("f", fact or "-")]
            )
            answer = None if reply is None else {"role": "assistant", "content": reply}
            session.record_run(conversation, context, answer)
            if answer is not None:
                conversation.append(answer)


def _refused_or_torn(path: Path) -> bool:
    """Whether opening reports the change: an error, or a torn last line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            Session.open(path, writable=False).close()
        except TranscriptError:
            return True
    return any(issubclass(w.category, TornTranscriptWarning) for w in caught)


@settings(max_examples=15)
@given(runs=transcripts())
def test_every_single_byte_change_of_every_record_is_reported(
    tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[str, str, str | None]]
) -> None:
    path = tmp_path_factory.mktemp("chain") / "t.jsonl"
    _write(path, runs)
    original = path.read_bytes()
    for at in range(len(original)):
        for flip in (0x01, 0x20):
            changed = bytearray(original)
            changed[at] ^= flip
            path.write_bytes(bytes(changed))
            assert _refused_or_torn(path), f"byte {at} ^ {flip:#x} went unnoticed"
    path.write_bytes(original)
    Session.open(path).close()


@pytest.fixture
def written(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    _write(path, [("one", "a", "ok"), ("two", "b", "fine"), ("three", "c", None)])
    return path


def _open_error(path: Path) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        Session.open(path)
    return info.value


def test_a_removed_line_fails_the_chain_at_its_successor(written: Path) -> None:
    lines = written.read_bytes().splitlines(keepends=True)
    del lines[4]
    written.write_bytes(b"".join(lines))
    error = _open_error(written)
    assert isinstance(error, TranscriptDigestError)
    assert (error.kind, error.line) == ("chain", 5)


def test_swapped_lines_fail_the_chain(written: Path) -> None:
    lines = written.read_bytes().splitlines(keepends=True)
    lines[5], lines[6] = lines[6], lines[5]
    written.write_bytes(b"".join(lines))
    assert (_open_error(written).kind, _open_error(written).line) == ("chain", 6)


def test_a_line_from_another_transcript_fails_the_chain(written: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    _write(other, [("one", "a", "ok")], seed="another seed")
    lines = written.read_bytes().splitlines(keepends=True)
    lines[3] = other.read_bytes().splitlines(keepends=True)[3]
    written.write_bytes(b"".join(lines))
    assert _open_error(written).kind in {"chain", "run"}


def test_an_edited_last_line_is_caught_at_itself(written: Path) -> None:
    lines = written.read_bytes().splitlines(keepends=True)
    assert b'["f","c"]' in lines[-1]  # the last run's envelope
    lines[-1] = lines[-1].replace(b'["f","c"]', b'["f","d"]')  # still canonical, same shape
    written.write_bytes(b"".join(lines))
    error = _open_error(written)
    assert (error.kind, error.line) == ("chain", len(lines))
    assert "this line was edited" in str(error)


def test_the_header_seed_is_checked_against_message_0(written: Path) -> None:
    lines = written.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["seed"] = runcontext.digest({"role": "system", "content": "another"})
    written.write_bytes(b"".join(relinked([json.dumps(header).encode(), *lines[1:]])))
    error = _open_error(written)  # re-chained by a forger: the seed rule still catches it
    assert isinstance(error, TranscriptDigestError)
    assert (error.kind, error.line) == ("seed", 2)


def test_the_chain_is_the_anchor_a_caller_can_keep(written: Path) -> None:
    with Session.open(written) as session:
        last = json.loads(written.read_bytes().splitlines()[-1])["chain"]
        assert session.chain == last
        session.append_messages([{"role": "user", "content": "more"}])
        assert session.chain == json.loads(written.read_bytes().splitlines()[-1])["chain"]


_V1_SEED = runcontext.digest({"role": "system", "content": "seed"})
_V1 = [
    {
        "context_format": 1,
        "format": "runcontext-transcript",
        "seed": _V1_SEED,
        "time": "2025-01-31T09:30:00Z",
        "type": "header",
        "version": 1,
    },
    {"index": 0, "message": {"role": "system", "content": "seed"}, "type": "message"},
    {"index": 1, "message": {"role": "user", "content": "hi"}, "type": "message"},
]


def test_a_version_1_transcript_is_read_with_a_warning_and_never_appended(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_bytes(b"".join(runcontext.canonical_json(r) + b"\n" for r in _V1))
    with pytest.warns(UnchainedTranscriptWarning, match="not chained"):
        session = Session.open(path)
    with session:
        assert session.version == 1 and session.chain == ""
        assert session.messages() == [_V1[1]["message"], _V1[2]["message"]]
        size = path.stat().st_size
        with pytest.raises(TranscriptVersionError, match="version 1 transcript is read-only"):
            session.append_messages([{"role": "user", "content": "more"}])
        assert path.stat().st_size == size
