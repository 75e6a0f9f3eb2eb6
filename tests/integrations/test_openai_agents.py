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
from runcontext.budget import Budget, BudgetExceededError  # noqa: E402
from runcontext.integrations import prompt_cache_key  # noqa: E402
from runcontext.integrations.openai_agents import (  # noqa: E402
    RunContextFilter,
    RunContextSession,
    ServerManagedConversationError,
)
from runcontext.transcript import SeedMismatchError  # noqa: E402


@function_tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open"


def client(server: FakeServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)


def agent(server: FakeServer, chat: bool = False) -> Agent[Any]:
    model: Any = (
        OpenAIChatCompletionsModel(model="gpt-6-luna", openai_client=client(server))
        if chat
        else OpenAIResponsesModel(model="gpt-6-luna", openai_client=client(server))
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
    instructions = {"role": "system", "content": "Answer briefly."}
    for body, build in zip(bodies, ["1", "1", "2"], strict=True):
        if chat:
            # The SDK turns `instructions` (the head) into the first system message, then
            # converts the input items: the agent's instructions come next.
            assert body["messages"][:2] == [{"role": "system", "content": HEAD}, instructions]
            last = body["messages"][-1]
        else:
            assert body["instructions"] == HEAD
            assert body["input"][0] == instructions
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


INSTRUCTIONS = {"role": "system", "content": "Answer briefly."}


def test_session_records_a_text_only_conversation(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    transcript = Session.create(tmp_path / "t.jsonl", [INSTRUCTIONS])
    session = RunContextSession(SQLiteSession("s1", str(tmp_path / "sdk.db")), transcript)
    run_config = RunConfig(
        call_model_input_filter=RunContextFilter(builder(clock), session=session)
    )
    helper = Agent(
        name="helper",
        instructions="Answer briefly.",
        model=OpenAIResponsesModel(model="gpt-6-luna", openai_client=client(server)),
        model_settings=ModelSettings(extra_args={"prompt_cache_key": prompt_cache_key(transcript)}),
    )
    server.text("Hi.")
    Runner.run_sync(helper, "Hello", session=session, run_config=run_config)
    server.text("Fine.")
    Runner.run_sync(helper, "How are you?", session=session, run_config=run_config)
    reopened = Session.open(tmp_path / "t.jsonl")
    runs = reopened.runs()
    assert [run.messages for run in runs] == [2, 4]
    assert [dict(run.context.facts)["build"] for run in runs] == ["1", "2"]
    # The documented way to pass a stable prompt_cache_key reaches the wire.
    assert {body["prompt_cache_key"] for body in server.bodies()} == {prompt_cache_key(transcript)}
    messages = reopened.messages()
    assert messages[0] == INSTRUCTIONS  # what the agent was told, first
    assert len(messages) == 5 and messages[-1]["role"] == "assistant"
    assert "build:" not in json.dumps(messages)


def test_session_records_a_tool_calling_turn(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    transcript = Session.create(tmp_path / "t.jsonl", [INSTRUCTIONS])
    session = RunContextSession(SQLiteSession("s1", str(tmp_path / "sdk.db")), transcript)
    run_config = RunConfig(
        call_model_input_filter=RunContextFilter(builder(clock), session=session)
    )
    two_turns(server, run_config, session)
    runs = Session.open(tmp_path / "t.jsonl").runs()
    assert [dict(run.context.facts)["build"] for run in runs] == ["1", "1", "2"]


def test_a_new_context_every_run(server: FakeServer) -> None:
    # A stateless service asking the same question: every run gets the facts of its own time,
    # also when each run passes a fresh context object (whose id() Python reuses).
    from runcontext.integrations import openai_agents

    assert openai_agents._RUN_VARIABLE is not None  # the tested SDK marks each run
    clock = Clock()
    run_config = RunConfig(call_model_input_filter=RunContextFilter(builder(clock)))
    helper = agent(server)
    for _ in range(3):
        Runner.run_sync(helper, "What is the status?", run_config=run_config)
    for _ in range(3):
        Runner.run_sync(helper, "What is the status?", run_config=run_config, context=object())
    tails = [body["input"][-1]["content"] for body in server.bodies()]
    assert [tail.split("build: ")[1][0] for tail in tails] == ["1", "2", "3", "4", "5", "6"]


def test_a_new_context_every_async_run(server: FakeServer) -> None:
    clock = Clock()
    run_config = RunConfig(call_model_input_filter=RunContextFilter(builder(clock)))

    async def main() -> None:
        helper = agent(server)
        for _ in range(3):  # one after the other in one task
            await Runner.run(helper, "What is the status?", run_config=run_config)
        server.tool("lookup", ticket="T-1")
        server.text("open")
        await Runner.run(helper, "Is T-1 open?", run_config=run_config)

    asyncio.run(main())
    tails = [body["input"][-1]["content"] for body in server.bodies()]
    assert [tail.split("build: ")[1][0] for tail in tails] == ["1", "2", "3", "4", "4"]


def test_a_transcript_path_is_created_then_opened(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    for run in range(3):  # three processes running the same script
        sdk_session = SQLiteSession("c1", str(tmp_path / "sdk.db"))
        session = RunContextSession(sdk_session, str(path))
        flt = RunContextFilter(builder(Clock()), session=session)
        assert session.transcript is None  # opened by the first request
        config = RunConfig(call_model_input_filter=flt)
        Runner.run_sync(agent(server), f"Question {run}?", session=session, run_config=config)
        assert session.transcript is not None and flt.session is session.transcript
        session.transcript.close()
    with Session.open(path) as transcript:
        messages = transcript.messages()
        assert messages[0] == INSTRUCTIONS
        assert [m.get("content") for m in messages if m.get("role") == "user"] == [
            "Question 0?",
            "Question 1?",
            "Question 2?",
        ]
        assert messages[-1]["type"] == "message"  # the last reply, saved by the session
        assert len(transcript.runs()) == 3


def test_a_session_alone_creates_its_transcript(tmp_path: Path) -> None:
    # Without a filter the transcript records what the SDK saves, from its first item.
    session = RunContextSession(SQLiteSession("c1"), tmp_path / "t.jsonl")
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
    asyncio.run(session.add_items(items[:1]))
    asyncio.run(session.add_items(items[1:]))
    assert session.transcript is not None
    assert session.transcript.messages() == items


def test_a_transcript_of_another_agent_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [{"role": "system", "content": "You are another agent."}]).close()
    config = RunConfig(call_model_input_filter=RunContextFilter(RunContext(), session=str(path)))
    with pytest.raises(SeedMismatchError, match="does not continue this transcript"):
        Runner.run_sync(agent(server), "Hi", run_config=config)
    assert server.requests == []


def test_the_run_is_recorded_with_its_count(server: FakeServer, tmp_path: Path) -> None:
    flt = RunContextFilter(
        builder(Clock()), session=str(tmp_path / "t.jsonl"), counter=len, budget=Budget(100_000)
    )
    Runner.run_sync(agent(server), "Hi", run_config=RunConfig(call_model_input_filter=flt))
    assert flt.session is not None
    (run,) = flt.session.runs()
    tokens = run.tokens
    assert tokens is not None and tokens["quality"] == "estimated"
    assert tokens["head"] >= len(HEAD) and tokens["conversation"] >= len("Answer briefly.Hi")
    assert tokens["tail"] > 0 and tokens["tools"] > 0  # the tool declarations count too
    assert "billed" not in tokens  # the filter never sees the response


def test_a_request_over_budget_is_not_sent(server: FakeServer) -> None:
    flt = RunContextFilter(builder(Clock()), counter=len, budget=Budget(context_window=10))
    with pytest.raises(BudgetExceededError, match=r"over its limit of 10 \(a 10-token window"):
        Runner.run_sync(agent(server), "Hi", run_config=RunConfig(call_model_input_filter=flt))
    assert server.requests == []


def test_the_chat_transcript_is_the_items_the_sdk_converted(
    server: FakeServer, tmp_path: Path
) -> None:
    from agents.models.chatcmpl_converter import Converter

    path = tmp_path / "t.jsonl"
    session = RunContextSession(SQLiteSession("s1"), str(path))
    flt = RunContextFilter(builder(Clock()), session=session)
    two_turns(server, RunConfig(call_model_input_filter=flt), session, chat=True)
    with Session.open(path) as transcript:
        messages = transcript.messages()
        runs = transcript.runs()
    # The SDK's placeholder id of a Chat Completions reply is on no wire: not recorded either.
    assert "__fake_id__" not in json.dumps(messages) and "provider_data" not in json.dumps(messages)
    for run, request in zip(runs, server.requests, strict=True):
        sent = request.json["messages"]
        assert sent[0] == {"role": "system", "content": HEAD}
        # Between the head and the tail: the SDK's conversion of the recorded items.
        # (The converter wants an id on an assistant output message, any id; it sends none.)
        items = [
            {**m, "id": "msg"} if m.get("type") == "message" and "id" not in m else m
            for m in messages[: run.messages]
        ]
        assert unmarked(sent[1:-1]) == Converter.items_to_messages(items)


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages without the breakpoint: the marked message's one text part becomes the
    string it was."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any("prompt_cache_breakpoint" in p for p in content):
            (part,) = content
            message = {**message, "content": part["text"]}
        out.append(message)
    return out


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


def test_without_the_sdks_run_variable_the_trace_keys_the_run(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An SDK that no longer has the run's context variable: each run's own trace keys it.
    from runcontext.integrations import openai_agents

    monkeypatch.setattr(openai_agents, "_RUN_VARIABLE", None)
    clock = Clock()
    run_config = RunConfig(call_model_input_filter=RunContextFilter(builder(clock)))
    helper = agent(server)
    server.tool("lookup", ticket="T-1")
    server.text("open")
    Runner.run_sync(helper, "Is T-1 open?", run_config=run_config)
    Runner.run_sync(helper, "Is T-1 open?", run_config=run_config)
    tails = [body["input"][-1]["content"] for body in server.bodies()]
    assert [tail.split("build: ")[1][0] for tail in tails] == ["1", "1", "2"]
