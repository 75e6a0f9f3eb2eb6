"""RunContextMiddleware against the real LangChain v1 agent, ChatOpenAI and ChatAnthropic."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import Clock, builder

require("langchain.agents", "langchain")
require("langchain_openai", "langchain")
require("langchain_anthropic", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_anthropic import ChatAnthropic  # noqa: E402
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from runcontext import RunContext, Session  # noqa: E402
from runcontext.integrations.langchain import (  # noqa: E402
    MiddlewareOrderWarning,
    RunContextMiddleware,
)


@tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open"


# The frameworks pick the API and the request shape by model name: gpt-4.1 keeps Chat
# Completions with tools (gpt-6-* reason, and the frameworks then move tools to the Responses
# API or refuse them), claude-haiku-4-5 the 4.x system blocks (docs/INTEGRATIONS.md).
def openai_model(server: FakeServer) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4.1", base_url=server.url + "/v1", api_key="sk-fake")


def anthropic_model(server: FakeServer) -> ChatAnthropic:
    return ChatAnthropic(
        model="claude-haiku-4-5", base_url=server.url, api_key="sk-ant-fake", max_tokens=256
    )


def texts(value: Any) -> str:
    return json.dumps(value)


def two_turns(server: FakeServer, model: Any, middleware: list[Any]) -> tuple[Any, Any]:
    """Turn 1: a tool call and its continuation (two model calls); turn 2: one call."""
    agent = create_agent(model, tools=[lookup], middleware=middleware, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    server.tool("lookup", ticket="T-1")
    server.text("T-1 is open.")
    agent.invoke({"messages": [{"role": "user", "content": "Is T-1 open?"}]}, config)
    server.text("Yes.")
    state = agent.invoke({"messages": [{"role": "user", "content": "Still?"}]}, config)
    return agent, state


def test_openai_tail_last_on_the_wire_and_never_in_state(server: FakeServer) -> None:
    clock = Clock()
    agent, state = two_turns(server, openai_model(server), [RunContextMiddleware(builder(clock))])
    bodies = server.bodies()
    assert len(bodies) == 3
    for body, build in zip(bodies, ["1", "1", "2"], strict=True):
        messages = body["messages"]
        assert messages[0] == {"role": "system", "content": "You are a careful agent."}
        last = messages[-1]
        assert last["role"] == "system", messages
        assert "build: " + build in last["content"]
        assert "this block is authoritative" in last["content"]
    # One context per turn: the tool loop's two calls send the same tail, byte for byte.
    assert bodies[0]["messages"][-1] == bodies[1]["messages"][-1]
    assert clock.builds == 2
    # The continuation is the previous request's conversation plus the tool exchange.
    assert bodies[1]["messages"][1] == bodies[0]["messages"][1]
    assert bodies[1]["messages"][-2]["role"] == "tool"
    # Nothing of the context is in the agent's state or its checkpoint.
    stored = texts([m.model_dump() for m in state["messages"]])
    assert "build:" not in stored and "careful agent" not in stored
    snapshot = agent.get_state({"configurable": {"thread_id": "t1"}})
    assert "build:" not in texts([m.model_dump() for m in snapshot.values["messages"]])


def test_async_agent(server: FakeServer) -> None:
    clock = Clock()
    agent = create_agent(
        openai_model(server), tools=[lookup], middleware=[RunContextMiddleware(builder(clock))]
    )
    server.tool("lookup", ticket="T-1")
    server.text("open")
    state = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "T-1?"}]}))
    bodies = server.bodies()
    assert len(bodies) == 2 and clock.builds == 1
    assert all("build: 1" in body["messages"][-1]["content"] for body in bodies)
    assert "build:" not in texts([m.model_dump() for m in state["messages"]])


def test_anthropic_tail_is_a_user_block_and_breakpoint_on_conversation(server: FakeServer) -> None:
    clock = Clock()
    middleware = [AnthropicPromptCachingMiddleware(), RunContextMiddleware(builder(clock))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MiddlewareOrderWarning)
        two_turns(server, anthropic_model(server), middleware)
    bodies = server.bodies()
    assert len(bodies) == 3
    for body in bodies:
        assert "cache_control" not in body  # no automatic breakpoint: it would hit the tail
        # The agent has no system_prompt, so nothing marked the system message: the head
        # carries the second breakpoint.
        assert body["system"] == [
            {
                "type": "text",
                "text": "You are a careful agent.",
                "cache_control": {"type": "ephemeral", "ttl": "5m"},
            }
        ]
        last = body["messages"][-1]
        assert last["role"] == "user"
        tail_block = last["content"][-1]
        assert "build: " in tail_block["text"] and "cache_control" not in tail_block
        markers = texts(body).count('"cache_control"')
        assert 1 <= markers <= 4
        # The conversation breakpoint sits on the block just before the tail.
        blocks = [
            b
            for m in body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
        ]
        assert blocks[-2].get("cache_control") is not None, blocks[-2:]


def test_wrong_order_warns(server: FakeServer) -> None:
    middleware = [
        RunContextMiddleware(RunContext(facts=[("date", "today")])),
        AnthropicPromptCachingMiddleware(),
    ]
    agent = create_agent(anthropic_model(server), tools=[lookup], middleware=middleware)
    with pytest.warns(MiddlewareOrderWarning, match="list the caching middleware first"):
        agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
    # What the warning is about: the automatic breakpoint, which lands on the tail.
    assert server.bodies()[0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}


def test_session_records_every_model_call(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    transcript = Session.create(
        tmp_path / "agent.jsonl", [{"role": "user", "content": "Is T-1 open?"}]
    )
    two_turns(
        server, openai_model(server), [RunContextMiddleware(builder(clock), session=transcript)]
    )
    runs = Session.open(tmp_path / "agent.jsonl").runs()
    assert [run.messages for run in runs] == [1, 3, 5]
    assert [dict(run.context.facts)["build"] for run in runs] == ["1", "1", "2"]
    recorded = Session.open(tmp_path / "agent.jsonl").messages()
    assert recorded[1]["tool_calls"][0]["function"]["name"] == "lookup"
    assert "build:" not in texts(recorded)


def test_anthropic_with_a_system_prompt_and_the_budget(server: FakeServer) -> None:
    """The agent's own (marked) system prompt follows the head; four breakpoints at most."""
    middleware = [AnthropicPromptCachingMiddleware(), RunContextMiddleware(builder(Clock()))]
    agent = create_agent(
        anthropic_model(server),
        tools=[lookup],
        system_prompt="Answer briefly.",
        middleware=middleware,
    )
    server.tool("lookup", ticket="T-1")
    agent.invoke({"messages": [{"role": "user", "content": "T-1?"}]})
    for body in server.bodies():
        system = body["system"]
        assert [block["text"] for block in system] == [
            "You are a careful agent.",
            "Answer briefly.",
        ]
        assert "cache_control" not in system[0] and "cache_control" in system[1]
        assert "cache_control" in body["tools"][-1]
        assert texts(body).count('"cache_control"') == 3


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_streamed_agent(server: FakeServer, provider: str) -> None:
    """stream_mode="messages" streams every model call; the context is the same."""
    clock = Clock()
    model = openai_model(server) if provider == "openai" else anthropic_model(server)
    agent = create_agent(model, tools=[lookup], middleware=[RunContextMiddleware(builder(clock))])
    server.tool("lookup", ticket="T-1")
    server.text("T-1 is open.")
    chunks = list(
        agent.stream(
            {"messages": [{"role": "user", "content": "Is T-1 open?"}]}, stream_mode="messages"
        )
    )
    assert chunks
    bodies = server.bodies()
    assert [body.get("stream") for body in bodies] == [True, True]
    assert clock.builds == 1
    assert all("build: 1" in texts(body["messages"][-1]) for body in bodies)


def test_no_order_warning_for_other_models(server: FakeServer) -> None:
    """The caching middleware skips non-Anthropic models (with its own warning, silenced
    here), so runcontext's place relative to it does not matter there."""
    middleware = [
        RunContextMiddleware(RunContext(facts=[("date", "today")])),
        AnthropicPromptCachingMiddleware(unsupported_model_behavior="ignore"),
    ]
    agent = create_agent(openai_model(server), middleware=middleware)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MiddlewareOrderWarning)
        agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert "date: today" in server.bodies()[0]["messages"][-1]["content"]
