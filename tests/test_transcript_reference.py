"""Properties of the reference transcript reader and writer (tests/reference/transcript.py).

* What the writer writes, the reader reads back: the messages (as JSON reads them, with the
  same digests), every run's context and digest, and the chain of the last line.
* Tamper evidence: every single-byte change of every complete record is refused, at the
  line that holds the byte, except a change of the file's last ``\\n``, which leaves a torn
  last line (reported, never read as a record).

Hypothesis draws the transcripts; the byte test is quadratic in the file's size, so it runs
a thirtieth as many examples as the profile (conftest.py: more in CI).
"""

from __future__ import annotations

import datetime
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.jcs import canonical_json
from reference.jcs import digest as jcs_digest
from reference.runcontext import RunContext
from reference.transcript import (
    MAX_DEPTH,
    TranscriptRefError,
    Writer,
    format_time,
    is_time,
    json_depth,
    loads,
    read,
)

MAX_SAFE = 2**53 - 1

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE, MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
messages = st.one_of(
    st.builds(
        lambda role, content, extra: {**extra, "role": role, "content": content},
        st.sampled_from(["user", "assistant", "system", "tool"]),
        values,
        st.dictionaries(st.sampled_from(["name", "id", "meta"]), values, max_size=2),
    ),
    st.builds(
        lambda kind, extra: {**extra, "type": kind},
        st.sampled_from(["function_call", "function_call_output", "reasoning"]),
        st.dictionaries(st.sampled_from(["call_id", "output", "arguments"]), values, max_size=2),
    ),
)
names = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs")), min_size=1, max_size=6
)
entries = st.lists(st.tuples(names, text), max_size=3, unique_by=lambda pair: pair[0])
contexts = st.none() | st.builds(
    lambda head, facts, tail: RunContext(
        head_sections=head,
        facts=facts,
        tail_sections=[pair for pair in tail if pair[0] not in {name for name, _ in head}],
    ),
    entries,
    entries,
    entries,
)
times = st.datetimes(min_value=datetime.datetime(2000, 1, 1), timezones=st.just(datetime.UTC)).map(
    format_time
)


@st.composite
def transcripts(draw: st.DrawFn, max_runs: int = 3) -> tuple[Writer, list[RunContext]]:
    """A writer after ``Session.create`` and some runs, and each run's context."""
    conversation = draw(st.lists(messages, min_size=1, max_size=3))
    writer = Writer(conversation, draw(times))
    recorded: list[RunContext] = []
    for _ in range(draw(st.integers(0, max_runs))):
        conversation = [*conversation, *draw(st.lists(messages, max_size=2))]
        context = draw(contexts)
        reply = draw(messages)
        writer.record_run(conversation, context, reply, draw(times))
        recorded.append(context if context is not None else RunContext())
        conversation = [*conversation, reply]
    return writer, recorded


def as_read(value: Any) -> str:
    """A value as a reader gets it back, as JSON text that tells ints from floats."""
    return json.dumps(loads(canonical_json(value).decode("utf-8")), sort_keys=True)


@given(transcripts(), st.sampled_from([1, 2]))
def test_what_is_written_is_read(drawn: tuple[Writer, list[RunContext]], version: int) -> None:
    writer, contexts = drawn
    data = writer.to_bytes(version=version)
    transcript = read(data)
    assert transcript.torn is None
    assert transcript.unchained == (version == 1)
    assert [json.dumps(m, sort_keys=True) for m in transcript.messages] == [
        as_read(m) for m in writer.messages
    ]
    assert [jcs_digest(m) for m in transcript.messages] == [jcs_digest(m) for m in writer.messages]
    assert [run.number for run in transcript.runs] == list(range(1, len(contexts) + 1))
    for run, context in zip(transcript.runs, contexts, strict=True):
        assert run.digest == run.context.digest == context.digest
        assert (run.context.head_text, run.context.tail_text) == (
            context.head_text,
            context.tail_text,
        )
        assert run.context.sections == context.sections
        assert is_time(run.time)
    last = json.loads(data.splitlines()[-1])
    assert transcript.chain == (last["chain"] if version == 2 else None)


@given(transcripts())
def test_writing_twice_gives_the_same_bytes(drawn: tuple[Writer, list[RunContext]]) -> None:
    writer, _ = drawn
    assert writer.to_bytes() == writer.to_bytes()
    assert all(json_depth(line.decode()) is not None for line in writer.to_bytes().splitlines())


def _line_of(data: bytes, position: int) -> int:
    return data.count(b"\n", 0, position) + 1


@pytest.mark.slow
@settings(max_examples=max(3, settings.default.max_examples // 30))
@given(transcripts(max_runs=2), st.randoms(use_true_random=False))
def test_every_single_byte_change_is_detected(
    drawn: tuple[Writer, list[RunContext]], rng: random.Random
) -> None:
    writer, _ = drawn
    data = writer.to_bytes()
    original = read(data)
    lines = data.count(b"\n")
    for position in range(len(data)):
        changed = bytearray(data)
        changed[position] = (data[position] + rng.randrange(1, 256)) % 256
        try:
            transcript = read(bytes(changed))
        except TranscriptRefError as error:
            # The line named is the one that holds the byte (a "\n" changed joins it to the
            # next line; a byte changed to "\n" splits it: either way that line fails first).
            assert error.line == _line_of(data, position), (position, error)
            continue
        # Accepted only when the file's last "\n" changed: the last record is then torn.
        assert position == len(data) - 1, (position, changed[position])
        assert transcript.torn is not None and transcript.torn.line == lines
        without_last = read(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])
        assert transcript.messages == without_last.messages
        assert len(transcript.runs) == len(without_last.runs)
        assert len(transcript.messages) + len(transcript.runs) < (
            len(original.messages) + len(original.runs) + 1
        )


def test_depth_limit_is_the_record_with_its_message() -> None:
    """MAX_DEPTH counts the record: a message may nest MAX_DEPTH - 1 deep."""
    deep: Any = "x"
    for _ in range(MAX_DEPTH - 2):
        deep = [deep]
    writer = Writer([{"role": "user", "content": deep}], "2025-01-31T09:30:00Z")
    assert len(read(writer.to_bytes()).messages) == 1
    try:
        Writer([{"role": "user", "content": [deep]}], "2025-01-31T09:30:00Z")
    except ValueError as error:
        assert "messages[0]" in str(error)
    else:
        raise AssertionError("a message nested 512 deep was written")
