"""Compactions and elisions: the core (through ``Session``) and the reference agree.

Hypothesis draws a session — runs, compactions (summaries and trims, from any position,
including 0) and elisions — and drives the reference writer (tests/reference/transcript.py)
and a ``Session`` with the same operations. They must write the same bytes, refuse the same
operations (a range that splits a tool call from its result, a stub that drops its message's
tool-call identifiers), and read back the same current conversation, the same conversation
for every run (docs/TRANSCRIPT.md, *Replay*) and the same edits.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runcontext.transcript import Compaction, Session

from reference.transcript import Writer, read

TIME = "2025-01-31T09:30:00Z"
MOMENT = datetime.datetime(2025, 1, 31, 9, 30, tzinfo=datetime.UTC)

ids = st.sampled_from(["c1", "c2", "c3"])
messages = st.one_of(
    st.builds(
        lambda role, n: {"role": role, "content": f"m{n}"},
        st.sampled_from(["user", "assistant", "system"]),
        st.integers(0, 99),
    ),
    st.builds(lambda i: {"role": "tool", "tool_call_id": i, "content": "out"}, ids),
    st.builds(
        lambda i: {"role": "assistant", "content": None, "tool_calls": [{"id": i}]},
        ids,
    ),
    st.builds(lambda i: {"type": "function_call", "call_id": i, "name": "ls"}, ids),
    st.builds(lambda i: {"type": "function_call_output", "call_id": i, "output": "x"}, ids),
)

# An operation: ("run", new messages, reply), ("compact", a, b, messages, mode), or
# ("elide", positions, stub), positions drawn as fractions of the current length.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("run"), st.lists(messages, max_size=2), messages),
        st.tuples(
            st.just("compact"),
            st.floats(0, 1),
            st.floats(0, 1),
            st.lists(messages, max_size=2),
            st.sampled_from(["summary", "trim"]),
        ),
        st.tuples(st.just("elide"), st.lists(st.floats(0, 1), min_size=1, max_size=3), messages),
    ),
    max_size=8,
)


def _apply(writer: Writer, session: Session, operation: tuple[Any, ...]) -> None:
    """One operation on both; both refuse it or neither does."""
    length = len(writer.messages)
    refused: list[str] = []
    if operation[0] == "run":
        _, new, reply = operation
        conversation = [*writer.messages, *new]
        writer.record_run(conversation, None, reply, TIME)
        session.record_run(conversation, None, reply)
        return
    if operation[0] == "compact":
        _, a, b, replacement, mode = operation
        start = min(int(a * length), max(length - 1, 0))
        end = max(start + 1, int(b * (length + 1)))
        if mode == "summary" and not replacement:
            mode = "trim"
        for act in (
            lambda: writer.compact(start, end, list(replacement), TIME, mode=mode),
            lambda: session.compact(start, end, replacement, mode=mode),
        ):
            try:
                act()
            except ValueError as error:
                refused.append(str(error))
    else:
        _, fractions, stub = operation
        positions = sorted({min(int(f * length), length - 1) for f in fractions})
        stubs = {p: stub for p in positions}
        for act in (lambda: writer.elide(dict(stubs), TIME), lambda: session.elide(stubs)):
            try:
                act()
            except ValueError as error:
                refused.append(str(error))
    assert len(refused) in (0, 2), refused


@given(st.lists(messages, min_size=1, max_size=3), operations)
def test_the_session_writes_and_reads_what_the_reference_does(
    tmp_path_factory: Any, seed: list[dict[str, Any]], ops: list[tuple[Any, ...]]
) -> None:
    path: Path = tmp_path_factory.mktemp("edits") / "t.jsonl"
    writer = Writer(list(seed), TIME)
    session = Session.create(path, seed, clock=lambda: MOMENT)
    with session:
        for operation in ops:
            _apply(writer, session, operation)
        data = path.read_bytes()
        assert data == writer.to_bytes()
    reference = read(data)
    with Session.open(path) as reopened:
        assert reopened.messages() == reference.messages == writer.messages
        for run in reference.runs:
            assert reopened.messages_at(run.number) == list(run.sent)
        edits = reopened.edits()
        assert [type(e) is Compaction for e in edits] == [
            e.kind == "compaction" for e in reference.edits
        ]
        for i, (got, want) in enumerate(zip(edits, reference.edits, strict=True)):
            assert got.after_run == want.after_run
            added = reopened.edit_messages(i)
            if isinstance(got, Compaction):
                assert (got.start, got.end, got.mode) == (want.start, want.end, want.mode)
                assert added == list(want.messages)
            else:
                assert got.indices == tuple(index for index, _ in want.items)
                assert added == [stub for _, stub in want.items]
