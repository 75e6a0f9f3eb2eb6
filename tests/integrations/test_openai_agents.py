"""RunContextFilter and RunContextSession against the real OpenAI Agents SDK."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from openai import AsyncOpenAI  # noqa: E402

from runcontext import RunContext, Session  # noqa: E402
from runcontext.integrations import prompt_cache_key  # noqa: E402
from runcontext.integrations.openai_agents import (  # noqa: E402
    RunContextFilter,
    RunContextSession,
    ServerManagedConversationError,
)


@function_tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open"


def client(server: FakeServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)


def agent(server: FakeServer, chat: bool = False) -> Agent[Any]:
    model: Any = (
        OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=client(server))
        if chat
        else OpenAIResponsesModel(model="gpt-4.1", openai_client=client(server))
    )
    return Agent(name="helper", instructions="Answer briefly.", model=model, tools=[lookup])


def two_turns(server: FakeServer, run_config: RunConfig, session: Any, chat: bool = False) -> None:
    server.tool("lookup", ticket="T-1")
    server.text("T-1 is open.")
    helper = agent(server, chat)
    Runner.run_sync(helper, "Is T-1 open?", session=session, run_config=run_config)
    server.text("Yes.")
    Runner.run_sync(helper, "Still?", session=session, run_config=run_config)


@pytest.mark.parametrize("chat", [False, True], ids=["responses", "chat"])
def test_tail_last_on_the_wire_and_never_in_the_session(
    server: FakeServer, tmp_path: Path, chat: bool
) -> None:
    clock = Clock()
    sdk_session = SQLiteSession("s1", str(tmp_path / "sdk.db"))
    two_turns(
        server,
        RunConfig(call_model_input_filter=RunContextFilter(builder(clock))),
        sdk_session,
        chat,
    )
    bodies = server.bodies()
    assert len(bodies) == 3 and clock.builds == 2
    for body, build in zip(bodies, ["1", "1", "2"], strict=True):
        if chat:
            first, last = body["messages"][0], body["messages"][-1]
            assert first == {"role": "system", "content": f"{HEAD}\n\nAnswer briefly."}
        else:
            assert body["instructions"] == f"{HEAD}\n\nAnswer briefly."
            last = body["input"][-1]
        assert last["role"] == "developer"
        assert f"build: {build}" in last["content"]
    key = "messages" if chat else "input"
    assert bodies[0][key][-1] == bodies[1][key][-1]  # one context for the turn's two calls
    stored = asyncio.run(sdk_session.get_items())
    assert "build:" not in json.dumps(stored) and HEAD not in json.dumps(stored)
    assert [item.get("type", "message") for item in stored][:3] == [
        "message",
        "function_call",
        "function_call_output",
    ]


def test_previous_response_id_is_refused(server: FakeServer) -> None:
    server.tool("lookup", ticket="T-1")
    run_config = RunConfig(call_model_input_filter=RunContextFilter(RunContext(facts=[("a", "b")])))
    with pytest.raises(ServerManagedConversationError, match="stored on the server"):
        Runner.run_sync(
            agent(server), "T-1?", run_config=run_config, auto_previous_response_id=True
        )
    # The first call went out (nothing shows the mode before a tool output comes back alone).
    assert len(server.requests) == 1


def test_conversations_session_is_refused(tmp_path: Path) -> None:
    from agents import OpenAIConversationsSession

    transcript = Session.create(tmp_path / "t.jsonl", [{"role": "user", "content": "hi"}])
    with pytest.raises(ServerManagedConversationError, match="client-side session"):
        RunContextSession(OpenAIConversationsSession(conversation_id="conv_1"), transcript)


def test_session_records_a_text_only_conversation(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    transcript = Session.create(tmp_path / "t.jsonl", [{"role": "user", "content": "Hello"}])
    session = RunContextSession(SQLiteSession("s1", str(tmp_path / "sdk.db")), transcript)
    run_config = RunConfig(
        call_model_input_filter=RunContextFilter(builder(clock), session=session)
    )
    helper = Agent(
        name="helper",
        instructions="Answer briefly.",
        model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client(server)),
        model_settings=ModelSettings(extra_args={"prompt_cache_key": prompt_cache_key(transcript)}),
    )
    server.text("Hi.")
    Runner.run_sync(helper, "Hello", session=session, run_config=run_config)
    server.text("Fine.")
    Runner.run_sync(helper, "How are you?", session=session, run_config=run_config)
    reopened = Session.open(tmp_path / "t.jsonl")
    runs = reopened.runs()
    assert [run.messages for run in runs] == [1, 3]
    assert [dict(run.context.facts)["build"] for run in runs] == ["1", "2"]
    # The documented way to pass a stable prompt_cache_key reaches the wire.
    assert {body["prompt_cache_key"] for body in server.bodies()} == {prompt_cache_key(transcript)}
    messages = reopened.messages()
    assert len(messages) == 4 and messages[-1]["role"] == "assistant"
    assert "build:" not in json.dumps(messages)


def test_session_records_a_tool_calling_turn(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    transcript = Session.create(tmp_path / "t.jsonl", [{"role": "user", "content": "Is T-1 open?"}])
    session = RunContextSession(SQLiteSession("s1", str(tmp_path / "sdk.db")), transcript)
    run_config = RunConfig(
        call_model_input_filter=RunContextFilter(builder(clock), session=session)
    )
    two_turns(server, run_config, session)
    runs = Session.open(tmp_path / "t.jsonl").runs()
    assert [dict(run.context.facts)["build"] for run in runs] == ["1", "1", "2"]


def test_streamed_run(server: FakeServer) -> None:
    clock = Clock()
    run_config = RunConfig(call_model_input_filter=RunContextFilter(builder(clock)))

    async def main() -> str:
        result = Runner.run_streamed(agent(server), "Is T-1 open?", run_config=run_config)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    server.tool("lookup", ticket="T-1")
    server.text("open")
    assert asyncio.run(main()) == "open"
    bodies = server.bodies()
    assert [body["stream"] for body in bodies] == [True, True]
    assert all("build: 1" in body["input"][-1]["content"] for body in bodies)


def test_a_transcript_that_cannot_append_leaves_the_sdk_session_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [{"role": "user", "content": "Hello"}]).close()
    inner = SQLiteSession("s1", str(tmp_path / "sdk.db"))
    with Session.open(path, writable=False) as transcript:
        session = RunContextSession(inner, transcript)
        with pytest.raises(ValueError, match="the session is read-only"):
            items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
            asyncio.run(session.add_items(items))
    # Refused before the SDK's session was written: the two still agree.
    assert asyncio.run(inner.get_items()) == []
