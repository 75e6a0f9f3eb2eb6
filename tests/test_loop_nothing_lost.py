"""The loop refuses, before the backend is called, every new message it could not record, and
never loses a reply it paid for: when the run cannot be recorded after the call, the error
carries the reply and the request."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runcontext import MAX_DEPTH, RunContext
from runcontext.loop import Loop
from runcontext.transcript import RunNotRecordedError, Session

SEED = {"role": "system", "content": "You are a careful coding agent."}


class Backend:
    def __init__(self, reply: dict[str, Any] | None = None) -> None:
        self.requests: list[Any] = []
        self.reply = reply or {"role": "assistant", "content": "ok"}

    def __call__(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return self.reply


def _deep(depth: int) -> object:
    value: object = {}
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("bad", "problem", "match"),
    [
        ({"role": "user", "content": math.nan}, ValueError, r"messages\[2\]: .*NaN"),
        ({"role": "user", "at": datetime(2026, 12, 1, tzinfo=UTC)}, TypeError, r"messages\[2\]"),
        ({"role": "user", "content": _deep(MAX_DEPTH - 2)}, ValueError, r"messages\[2\]: .*511"),
    ],
    ids=["nan", "datetime", "too-deep"],
)
def test_a_new_message_that_cannot_be_recorded_is_refused_before_the_call(
    tmp_path: Path, bad: dict[str, Any], problem: type[Exception], match: str
) -> None:
    backend = Backend()
    question = {"role": "user", "content": "hi"}
    with Session.create(tmp_path / "s.jsonl", [SEED]) as session:
        loop = Loop(backend, session=session)
        # Message 2 is new and not the last: only its encoding can refuse it.
        conversation = [SEED, question, bad, {"role": "user", "content": "and?"}]
        with pytest.raises(problem, match=match):
            loop.run(conversation)
        with pytest.raises(problem, match=match):
            asyncio.run(loop.arun(conversation))
        assert session.messages() == [SEED]
    assert backend.requests == []


def test_a_reply_that_cannot_be_recorded_comes_back_in_the_error(tmp_path: Path) -> None:
    reply = {"role": "assistant", "content": "paid for", "score": math.inf}
    backend = Backend(reply)
    with Session.create(tmp_path / "s.jsonl", [SEED]) as session:
        loop = Loop(backend, session=session)
        context = RunContext(facts=[("date", "2026-12-01")])
        with pytest.raises(RunNotRecordedError) as info:
            loop.run([SEED, {"role": "user", "content": "hi"}], context=context)
        assert len(backend.requests) == 1
        outcome = info.value.outcome
        assert outcome.reply is reply
        assert outcome.request is backend.requests[0]
        assert outcome.messages[-1] is reply and outcome.run is None
        assert outcome.context_digest == context.digest
        assert isinstance(info.value.__cause__, ValueError)
        assert "reply" in str(info.value.__cause__)
        assert session.runs() == []  # nothing half-recorded


def test_a_writer_that_appended_in_between_does_not_lose_the_reply(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    question = {"role": "user", "content": "hi"}
    Session.create(path, [SEED, question]).close()
    mine, other = Session.open(path), Session.open(path)

    def backend(request: Any) -> dict[str, Any]:
        # While this request is in flight, another process records a reply of its own.
        other.record_run([SEED, question], None, {"role": "assistant", "content": "theirs"})
        return {"role": "assistant", "content": "mine"}

    with pytest.raises(RunNotRecordedError) as info:
        asyncio.run(Loop(backend, session=mine).arun([SEED, question]))
    assert info.value.outcome.reply == {"role": "assistant", "content": "mine"}
    assert "ConversationMismatchError" in str(info.value)
    mine.close()
    other.close()


def test_a_reply_that_is_not_a_message_comes_back_as_the_response(tmp_path: Path) -> None:
    """The reply converter fails on what the backend returned: the response was paid for."""
    response = {"object": "chat.completion", "choices": []}
    backend = Backend(response)

    def first_choice(completion: Any) -> dict[str, Any]:
        return dict(completion["choices"][0]["message"])

    with Session.create(tmp_path / "s.jsonl", [SEED]) as session:
        loop = Loop(backend, session=session, reply=first_choice)
        for run in (loop.run, lambda m: asyncio.run(loop.arun(m))):
            with pytest.raises(RunNotRecordedError, match=r"\(IndexError: list index") as info:
                run([SEED, {"role": "user", "content": "hi"}])
            outcome = info.value.outcome
            assert outcome.response is response and outcome.reply == {}
            assert outcome.request is backend.requests[-1]
            assert isinstance(info.value.__cause__, IndexError)
        assert len(backend.requests) == 2
        assert session.runs() == []
