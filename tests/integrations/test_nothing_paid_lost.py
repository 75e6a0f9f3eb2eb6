"""Nothing is paid for that cannot be recorded, in Loop and in every integration: a transcript
that cannot take the run refuses it before the model is called (0 requests, a clear error), and
a run the model answered but the transcript did not take raises ``RunNotRecordedError``
carrying the reply. One row per integration (and per call path: sync and async): a new
integration is a new row. Pydantic AI runs its capability asynchronously in every run."""

from __future__ import annotations

import asyncio
import errno
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runcontext import Loop, RunContext, Session
from runcontext.transcript import (
    RunNotRecordedError,
    SeedMismatchError,
    TornTranscriptError,
    TornTranscriptWarning,
)
from runcontext.transcript.files import FileStore

from fakeserver import FakeServer, Recorded
from frameworks import require

QUESTION = "Is T-1 open?"
CONTEXT = RunContext(facts=[("date", "2026-12-01")])
OTHER_SEED = {"role": "user", "content": "a different conversation"}


@dataclass(frozen=True)
class Row:
    """One integration: the first message of its transcript, and one agent turn (a single
    model call, answered "done" by the fake server) recorded to ``session``."""

    seed: Callable[[], dict[str, Any]]
    turn: Callable[[FakeServer, Session], object]


def loop_row(asynchronous: bool = False) -> Row:
    from openai import AsyncOpenAI, OpenAI

    from runcontext.adapters.replies import openai_chat_reply

    question = {"role": "user", "content": QUESTION}

    def turn(server: FakeServer, session: Session) -> object:
        url = server.url + "/v1"
        if asynchronous:
            aclient = AsyncOpenAI(base_url=url, api_key="sk-fake", max_retries=0)
            aloop = Loop(
                lambda body: aclient.chat.completions.create(model="gpt-4.1", messages=body),
                session=session,
                reply=openai_chat_reply,
            )
            return asyncio.run(aloop.arun([question], context=CONTEXT))
        client = OpenAI(base_url=url, api_key="sk-fake", max_retries=0)
        loop = Loop(
            lambda body: client.chat.completions.create(model="gpt-4.1", messages=body),
            session=session,
            reply=openai_chat_reply,
        )
        return loop.run([question], context=CONTEXT)

    return Row(lambda: question, turn)


def langchain_row(asynchronous: bool = False) -> Row:
    require("langchain.agents", "langchain")
    require("langchain_openai", "langchain")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from runcontext.integrations.langchain import RunContextMiddleware

    question = {"role": "user", "content": QUESTION}

    def turn(server: FakeServer, session: Session) -> object:
        model = ChatOpenAI(
            model="gpt-4.1", base_url=server.url + "/v1", api_key="sk-fake", max_retries=0
        )
        middleware = RunContextMiddleware(CONTEXT, session=session)
        agent = create_agent(model, middleware=[middleware])
        if asynchronous:
            return asyncio.run(agent.ainvoke({"messages": [question]}))
        return agent.invoke({"messages": [question]})

    return Row(lambda: question, turn)


def pydantic_ai_row() -> Row:
    require("pydantic_ai", "pydantic-ai")
    from datetime import UTC, datetime

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from runcontext.integrations.pydantic_ai import RunContextCapability, to_transcript_messages

    when = datetime(2026, 12, 1, tzinfo=UTC)
    history = [
        ModelRequest(parts=[UserPromptPart(QUESTION, timestamp=when)]),
        ModelResponse(parts=[TextPart("Let me look.")], timestamp=when),
    ]

    def turn(server: FakeServer, session: Session) -> object:
        provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
        capability = RunContextCapability(CONTEXT, session=session)
        agent: Agent[None, str] = Agent(
            OpenAIChatModel("gpt-4.1", provider=provider), capabilities=[capability]
        )
        return agent.run_sync("And now?", message_history=history)

    return Row(lambda: to_transcript_messages(history[:1])[0], turn)


def openai_agents_row() -> Row:
    require("agents", "openai-agents")
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, SQLiteSession
    from openai import AsyncOpenAI

    from runcontext.integrations.openai_agents import RunContextFilter, RunContextSession

    def turn(server: FakeServer, session: Session) -> object:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)
        model = OpenAIResponsesModel(model="gpt-4.1", openai_client=client)
        helper = Agent(name="helper", instructions="Answer briefly.", model=model)
        sdk_session = RunContextSession(SQLiteSession("s1"), session)
        config = RunConfig(call_model_input_filter=RunContextFilter(CONTEXT, session=sdk_session))
        return Runner.run_sync(helper, QUESTION, session=sdk_session, run_config=config)

    return Row(lambda: {"role": "user", "content": QUESTION}, turn)


ROWS: dict[str, Callable[[], Row]] = {
    "loop": loop_row,
    "loop-async": lambda: loop_row(asynchronous=True),
    "langchain": langchain_row,
    "langchain-async": lambda: langchain_row(asynchronous=True),
    "pydantic-ai": pydantic_ai_row,
    "openai-agents": openai_agents_row,
}


class FullDisk(FileStore):
    """A transcript file whose appends fail once ``full`` is set (a disk that fills up)."""

    full = False

    def append(self, lines: Sequence[bytes]) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().append(lines)


def created(path: Path, seed: dict[str, Any]) -> Path:
    Session.create(path, [seed]).close()
    return path


def refused(
    row: Row, server: FakeServer, session: Session, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        row.turn(server, session)
    assert server.requests == []  # nothing was paid for


@pytest.fixture(params=list(ROWS))
def row(request: pytest.FixtureRequest) -> Row:
    return ROWS[request.param]()


def test_a_read_only_transcript_is_refused_before_the_call(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    path = created(tmp_path / "t.jsonl", row.seed())
    with Session.open(path, writable=False) as session:
        refused(row, server, session, ValueError, r"the session is read-only .*writable=True")
        assert session.runs() == []


def test_a_torn_transcript_is_refused_before_the_call(
    row: Row, server: FakeServer, tmp_path: Path
) -> None:
    path = created(tmp_path / "t.jsonl", row.seed())
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
    store = FullDisk(created(tmp_path / "t.jsonl", row.seed()))

    def fill_the_disk(request: Recorded) -> None:
        store.full = True  # while the request is in flight

    server.on_request = fill_the_disk
    with Session.open(store) as session:
        with pytest.raises(RunNotRecordedError, match=r"No space left on device") as info:
            row.turn(server, session)
        assert len(server.requests) == 1
        outcome = info.value.outcome
        assert "done" in json.dumps(outcome.reply)  # the fake server's answer
        assert outcome.messages[-1] == outcome.reply
        assert outcome.response is not None and outcome.run is None
        assert isinstance(info.value.__cause__, OSError)
