"""Session.compact, Session.elide, Session.trim and Session.reconcile (docs/TRANSCRIPT.md,
*The conversation: positions, compactions and elisions*): what they record, what they refuse
before anything is written, and how the conversation check and replay follow them."""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path
from typing import Any

import pytest

from runcontext.transcript import (
    Compaction,
    ConversationMismatchError,
    Elision,
    SeedMismatchError,
    Session,
)

MOMENT = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)
SYSTEM = {"role": "system", "content": "You are careful."}
USER = {"role": "user", "content": "List the files."}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls"}}],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py " * 50}
DONE = {"role": "assistant", "content": "Two files."}
NEXT = {"role": "user", "content": "Now test them."}
SUMMARY = {"role": "user", "content": "Summary: we listed two files."}


def _session(tmp_path: Path) -> Session:
    """Runs 1 and 2: [SYSTEM, USER] -> CALL, then [.., CALL, RESULT] -> DONE."""
    session = Session.create(tmp_path / "t.jsonl", [SYSTEM, USER], clock=lambda: MOMENT)
    session.record_run([SYSTEM, USER], None, CALL)
    session.record_run([SYSTEM, USER, CALL, RESULT], None, DONE)
    return session


def test_a_compaction_is_recorded_replayed_and_continued(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        compaction = session.compact(
            1, 5, [SUMMARY], tokens_before=900, tokens_after=40, quality="exact"
        )
        assert compaction == Compaction(
            2, 9, 1, 5, 1, "summary", 900, 40, "exact", "2026-12-01T09:00:00Z"
        )
        assert (compaction.replaced, compaction.time) == (4, MOMENT)
        assert pickle.loads(pickle.dumps(compaction)) == compaction
        assert session.messages() == [SYSTEM, SUMMARY]
        session.record_run([SYSTEM, SUMMARY, NEXT], None, DONE)
    with Session.open(tmp_path / "t.jsonl") as reopened:
        assert reopened.messages() == [SYSTEM, SUMMARY, NEXT, DONE]
        assert reopened.messages_at(1) == [SYSTEM, USER]
        assert reopened.messages_at(2) == [SYSTEM, USER, CALL, RESULT]
        assert reopened.messages_at(3) == [SYSTEM, SUMMARY, NEXT]
        assert reopened.edits() == [compaction]
        assert reopened.edit_messages(0) == [SUMMARY]
        with pytest.raises(IndexError, match=r"no run 4: the transcript has runs 1 to 3"):
            reopened.messages_at(4)


def test_a_compaction_that_splits_a_tool_call_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    with _session(tmp_path) as session:
        before = (tmp_path / "t.jsonl").read_bytes()
        with pytest.raises(
            ValueError,
            match=r"^the compaction of messages \[1, 3\) would separate tool call \"c1\" "
            r"\(message 2, in the range\) from message 3 \(outside it\)",
        ):
            session.compact(1, 3, [SUMMARY])
        with pytest.raises(ValueError, match=r"the range \[2, 9\) is not a range of the "):
            session.compact(2, 9, [SUMMARY])
        with pytest.raises(ValueError, match=r"a summary compaction needs the messages"):
            session.compact(1, 5, [])
        with pytest.raises(ValueError, match=r"would replace all 5 messages with none"):
            session.compact(0, 5, [], mode="trim")
        with pytest.raises(ValueError, match=r"tokens_before and tokens_after: give both"):
            session.compact(1, 5, [SUMMARY], tokens_before=3)
        assert (tmp_path / "t.jsonl").read_bytes() == before
        assert session.messages() == [SYSTEM, USER, CALL, RESULT, DONE]


def test_an_elision_keeps_the_call_ids_and_replays(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        with pytest.raises(
            ValueError,
            match=r"^stubs\[3\]: the stub holds the tool calls and results none, but message 3 "
            r"holds result \"c1\"",
        ):
            session.elide({3: {"role": "user", "content": "[cleared]"}})
        stub = {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}
        elision = session.elide({3: stub})
        assert (elision.after_run, elision.indices) == (2, (3,))
        assert isinstance(elision, Elision)
        assert session.messages() == [SYSTEM, USER, CALL, stub, DONE]
        assert session.messages_at(2) == [SYSTEM, USER, CALL, RESULT]
        # The conversation check follows the current conversation: the stub is recorded.
        session.record_run([SYSTEM, USER, CALL, stub, DONE, NEXT], None, DONE)
        with pytest.raises(ValueError, match=r"stubs\[9\]: the conversation has no message 9"):
            session.elide({9: stub})


def test_the_seed_check_follows_a_compaction_of_message_0(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        session.compact(0, 4, [SUMMARY])
        assert session.messages() == [SUMMARY, DONE]
        # The compacted conversation continues the transcript; the original no longer does,
        # and a different one never did.
        session.check_conversation([SUMMARY, DONE, NEXT])
        with pytest.raises(
            SeedMismatchError, match=r"but the transcript's message 0 \(since a compaction"
        ):
            session.check_conversation([SYSTEM, USER, CALL, RESULT, DONE, NEXT])
        with pytest.raises(SeedMismatchError):
            session.check_conversation([{"role": "user", "content": "another"}, DONE])


def test_a_shorter_conversation_is_refused_until_its_compaction_is_recorded(
    tmp_path: Path,
) -> None:
    with _session(tmp_path) as session:
        shorter = [SYSTEM, SUMMARY, DONE, NEXT]
        with pytest.raises(
            ConversationMismatchError,
            match=r"record the compaction that shortened it first \(Session.compact, "
            r"Session.reconcile\)",
        ):
            session.record_run(shorter, None, DONE)
        run = session.record_run(shorter, None, DONE, edits="record")
        assert run.number == 3
        [compaction] = session.edits()
        assert (compaction.start, compaction.end, compaction.mode) == (1, 4, "summary")
        assert session.messages_at(3) == shorter


def test_reconcile_finds_the_compaction_or_elision_a_framework_made(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        assert session.reconcile([SYSTEM, USER, CALL, RESULT, DONE, NEXT]) is None
        stub = {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}
        # An edit that keeps the last recorded message in place: an elision.
        elision = session.reconcile([SYSTEM, USER, CALL, stub, DONE, NEXT])
        assert isinstance(elision, Elision) and elision.indices == (3,)
        # A summary of the middle that keeps the last message: a compaction.
        compaction = session.reconcile([SYSTEM, SUMMARY, DONE, NEXT])
        assert isinstance(compaction, Compaction)
        assert (compaction.start, compaction.end, compaction.messages) == (1, 4, 1)
        assert session.messages() == [SYSTEM, SUMMARY, DONE]
        # A trim that drops the middle: mode trim.
        trim = session.reconcile([SYSTEM, DONE])
        assert isinstance(trim, Compaction) and (trim.start, trim.end, trim.mode) == (1, 2, "trim")


def test_reconcile_refuses_what_it_cannot_tell(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        before = (tmp_path / "t.jsonl").read_bytes()
        with pytest.raises(
            ConversationMismatchError,
            match=r"the last recorded message \(message 4\) is not in it after the 1 messages "
            r"both share",
        ):
            session.reconcile([SYSTEM, SUMMARY])
        with pytest.raises(ConversationMismatchError, match=r"is in it more than once"):
            session.reconcile([SYSTEM, DONE, NEXT, DONE])
        with pytest.raises(
            ConversationMismatchError, match=r"messages were inserted at position 2"
        ):
            session.reconcile([SYSTEM, USER, SUMMARY, CALL, RESULT, DONE])
        assert (tmp_path / "t.jsonl").read_bytes() == before


def test_trim_keeps_the_last_messages_without_splitting_a_pair(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        session.record_run([SYSTEM, USER, CALL, RESULT, DONE, NEXT], None, DONE)
        # 7 messages; keeping the last 4 would start at RESULT, whose call is message 2.
        trim = session.trim(4)
        assert trim is not None and (trim.start, trim.end, trim.mode) == (1, 2, "trim")
        assert session.messages() == [SYSTEM, CALL, RESULT, DONE, NEXT, DONE]
        assert session.trim(5) is None


def test_edits_argument_is_checked(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        messages: list[Any] = [SYSTEM, USER, CALL, RESULT, DONE]
        with pytest.raises(ValueError, match=r"edits: expected 'refuse' or 'record', got 'x'"):
            session.record_run(messages, None, DONE, edits="x")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"start: expected a position \(int\), got bool"):
            session.compact(True, 2, [SUMMARY])


def test_a_compaction_of_message_0_by_another_writer_is_seen_under_the_lock(
    tmp_path: Path,
) -> None:
    with _session(tmp_path) as stale, Session.open(tmp_path / "t.jsonl") as other:
        other.compact(0, 2, [SUMMARY, {"role": "user", "content": "Go on."}])
        # The stale session last read message 0 as SYSTEM; its conversation's last message
        # is still at its place, so only message 0 tells it from the compacted one.
        with pytest.raises(SeedMismatchError, match=r"since a compaction replaced the seed"):
            stale.record_run([SYSTEM, USER, CALL, RESULT, DONE, NEXT], None, DONE)
        assert stale.runs()[-1].number == 2


def test_an_edit_and_its_run_are_written_together_or_not_at_all(tmp_path: Path) -> None:
    stub = {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}
    with _session(tmp_path) as session:
        before = session.chain
        # The run is refused (a reply that is no message): its edit is not written either.
        with pytest.raises(TypeError, match="reply"):
            session.record_run(
                [SYSTEM, USER, CALL, stub, DONE, NEXT], reply={"content": "x"}, edits="record"
            )
        assert session.chain == before and session.edits() == []
        # A dry run says what the run will record, and writes nothing.
        planned = session.check_run([SYSTEM, USER, CALL, stub, DONE, NEXT], edits="record")
        assert isinstance(planned, Elision) and planned.indices == (3,)
        assert session.chain == before
        run = session.record_run([SYSTEM, USER, CALL, stub, DONE, NEXT], edits="record")
        assert [type(edit) for edit in session.edits()] == [Elision]
        assert session.messages_at(run.number) == [SYSTEM, USER, CALL, stub, DONE, NEXT]


def test_an_edit_is_worked_out_on_what_another_writer_stored(tmp_path: Path) -> None:
    stub = {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}
    with _session(tmp_path) as session, Session.open(tmp_path / "t.jsonl") as other:
        other.record_run([SYSTEM, USER, CALL, RESULT, DONE, NEXT], None, DONE)  # unseen here
        conversation = [SYSTEM, USER, CALL, stub, DONE, NEXT, DONE]
        edit = session.reconcile(conversation)  # against the 7 stored, not the 5 last read
        assert isinstance(edit, Elision) and edit.indices == (3,)
        assert session.messages() == conversation
