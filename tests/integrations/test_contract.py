"""The integration contract (``contract.py``) for every row in ``rows/``: the head first and
the tail last on the wire, never in the framework's history; one context per agent turn and a
new one every run; the transcript equal to what was sent; nothing sent over budget; and nothing
paid for that cannot be recorded (a transcript that cannot take the run refuses it before the
model is called, and a late failure raises ``RunNotRecordedError`` carrying the reply)."""

from __future__ import annotations

import errno
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from runcontext import Session
from runcontext.budget import Budget, BudgetExceededError
from runcontext.transcript import (
    RunNotRecordedError,
    SeedMismatchError,
    TornTranscriptError,
    TornTranscriptWarning,
)
from runcontext.transcript.files import FileStore

from contract import HEAD, INSTRUCTIONS, LOOKUP_RESULT, Clock, Row, Setup, builder
from fakeserver import FakeServer, Recorded
from rows import all_rows

ROWS = all_rows()
QUESTION = "Is T-1 open?"
OTHER_SEED = {"role": "user", "content": "a different conversation"}


@pytest.fixture(params=sorted(ROWS))
def row(request: pytest.FixtureRequest) -> Row:
    return ROWS[request.param]()


def build_of(tail: str | None) -> str:
    """The ``build`` fact a tail carries: which build of the context the request was sent."""
    assert tail is not None, "the request carries no tail"
    facts = [line for line in tail.splitlines() if line.startswith("- build: ")]
    assert len(facts) == 1, tail
    return facts[0].removeprefix("- build: ")


def test_head_first_tail_last_one_context_per_turn_and_never_in_history(
    row: Row, server: FakeServer
) -> None:
    agent = row.agent(Setup(server, builder(Clock())))
    server.tool("lookup", call_id="call_1", ticket="T-1")
    outcome = agent.ask(QUESTION)
    assert len(server.requests) == 2  # the tool call, then the answer
    wires = [row.wire(request) for request in server.requests]
    for wire in wires:
        assert wire.head == HEAD
        assert wire.tail_last
    assert [build_of(wire.tail) for wire in wires] == ["1", "1"]  # one context for the turn
    assert LOOKUP_RESULT in json.dumps(wires[1].conversation)  # the tool loop went round
    history = json.dumps(outcome.history, default=str)
    assert QUESTION in history
    assert "- build: " not in history and "Current context" not in history


def test_a_new_context_every_run(row: Row, server: FakeServer) -> None:
    agent = row.agent(Setup(server, builder(Clock())))
    for conversation in ("a", "b", "c"):  # a stateless service asked the same question
        agent.ask("What is the status?", conversation=conversation)
    agent.ask("And now?", conversation="a")  # one conversation, run after run
    agent.ask("And now?", conversation="a")
    builds = [build_of(row.wire(request).tail) for request in server.requests]
    assert builds == ["1", "2", "3", "4", "5"]


def test_the_transcript_is_what_was_sent(row: Row, server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    agent = row.agent(Setup(server, builder(Clock()), session=str(path)))  # created on first use
    agent.ask(QUESTION)
    server.tool("lookup", call_id="call_2", ticket="T-2")
    agent.ask("And T-2?")
    later = row.agent(Setup(server, builder(Clock()), session=str(path)))  # opened, not created
    assert later is not agent
    with Session.open(path) as session:
        runs = session.runs()
        assert len(runs) == len(server.requests) == 3
        messages = session.messages()
        assert messages[0] == row.seed
        assert INSTRUCTIONS in json.dumps(messages)  # the framework's own instructions
        for run, request in zip(runs, server.requests, strict=True):
            wire = row.wire(request)
            context = session.context_at(run.number)
            assert (context.head_text, context.tail_text) == (wire.head, wire.tail)
            assert messages[: run.messages] == wire.conversation


def test_nothing_is_sent_over_budget(row: Row, server: FakeServer) -> None:
    budget = Budget(context_window=40)  # the head alone is longer, counted a token a character
    agent = row.agent(Setup(server, builder(Clock()), budget=budget, counter=len))
    with pytest.raises(BudgetExceededError, match="window"):
        agent.ask(QUESTION)
    assert server.requests == []


class FullDisk(FileStore):
    """A transcript file whose appends fail once ``full`` is set (a disk that fills up)."""

    full = False

    def append(self, lines: Sequence[bytes]) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().append(lines)


def created(path: Path, seed: Any) -> Path:
    Session.create(path, [seed]).close()
    return path


def refused(
    row: Row, server: FakeServer, session: Session, error: type[Exception], match: str
) -> None:
    agent = row.agent(Setup(server, builder(Clock()), session=session))
    with pytest.raises(error, match=match):
        agent.ask(QUESTION)
    assert server.requests == []  # nothing was paid for


def test_a_read_only_transcript_is_refused_before_the_call(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    path = created(tmp_path / "t.jsonl", row.seed)
    with Session.open(path, writable=False) as session:
        refused(row, server, session, ValueError, r"the session is read-only .*writable=True")
        assert session.runs() == []


def test_a_torn_transcript_is_refused_before_the_call(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    path = created(tmp_path / "t.jsonl", row.seed)
    with path.open("ab") as file:
        file.write(b'{"type":"message","mess')  # a writer killed mid-append
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornTranscriptWarning)
        session = Session.open(path)
    with session:
        refused(row, server, session, TornTranscriptError, r"torn record .*repair=True")


def test_a_transcript_of_another_conversation_is_refused_before_the_call(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    path = created(tmp_path / "t.jsonl", OTHER_SEED)
    with Session.open(path) as session:
        refused(row, server, session, SeedMismatchError, r"does not continue this transcript")
        assert session.runs() == []


def test_a_write_that_fails_after_the_call_carries_the_reply(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    store = FullDisk(created(tmp_path / "t.jsonl", row.seed))
    fill_the_disk: Callable[[Recorded], None] = lambda request: setattr(store, "full", True)  # noqa: E731
    server.on_request = fill_the_disk  # while the request is in flight
    with Session.open(store) as session:
        agent = row.agent(Setup(server, builder(Clock()), session=session))
        with pytest.raises(RunNotRecordedError, match=r"No space left on device") as info:
            agent.ask(QUESTION)
        assert len(server.requests) == 1
        outcome = info.value.outcome
        assert "done" in json.dumps(outcome.reply)  # the fake server's answer
        assert outcome.messages[-1] == outcome.reply
        assert outcome.response is not None and outcome.run is None
        assert isinstance(info.value.__cause__, OSError)
