"""RunContextCapability against the real Pydantic AI agent, OpenAI and Anthropic models."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessagesTypeAdapter  # noqa: E402
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from runcontext import RunContext, Session  # noqa: E402
from runcontext.integrations.pydantic_ai import (  # noqa: E402
    RunContextCapability,
    to_transcript_messages,
)


# The frameworks pick the API and the request shape by model name: gpt-4.1 keeps Chat
# Completions with tools (gpt-6-* reason, and the frameworks then move tools to the Responses
# API or refuse them), claude-haiku-4-5 the 4.x system blocks (docs/INTEGRATIONS.md).
def openai_model(server: FakeServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        "gpt-4.1", provider=OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
    )


def anthropic_model(server: FakeServer) -> AnthropicModel:
    return AnthropicModel(
        "claude-haiku-4-5",
        provider=AnthropicProvider(base_url=server.url, api_key="sk-ant-fake"),
    )


def make_agent(model: Any, capability: RunContextCapability, **settings: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        model, capabilities=[capability], model_settings=settings or None
    )

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return f"{ticket} is open"

    return agent


def two_turns(server: FakeServer, agent: Agent[None, str]) -> list[Any]:
    server.tool("lookup", ticket="T-1")
    server.text("T-1 is open.")
    first = agent.run_sync("Is T-1 open?")
    server.text("Yes.")
    second = agent.run_sync("Still?", message_history=first.all_messages())
    return second.all_messages()


def test_openai_tail_last_and_never_in_history(server: FakeServer) -> None:
    clock = Clock()
    agent = make_agent(openai_model(server), RunContextCapability(builder(clock)))
    history = two_turns(server, agent)
    bodies = server.bodies()
    assert len(bodies) == 3 and clock.builds == 2
    for body, build in zip(bodies, ["1", "1", "2"], strict=True):
        messages = body["messages"]
        assert messages[0]["role"] in ("system", "developer")
        assert messages[0]["content"] == HEAD
        assert f"build: {build}" in json.dumps(messages[-1]), messages[-1]
    assert bodies[0]["messages"][-1] == bodies[1]["messages"][-1]
    stored = ModelMessagesTypeAdapter.dump_json(history).decode()
    assert "build:" not in stored


def test_anthropic_breakpoint_not_on_the_tail(server: FakeServer) -> None:
    clock = Clock()
    agent = make_agent(
        anthropic_model(server),
        RunContextCapability(builder(clock)),
        anthropic_cache_messages=True,
        anthropic_cache_instructions=True,
    )
    history = two_turns(server, agent)
    bodies = server.bodies()
    assert len(bodies) == 3
    for body in bodies:
        assert HEAD in [block["text"] for block in body["system"]]
        assert body["system"] == bodies[0]["system"]
        last = body["messages"][-1]
        assert last["role"] == "user"
        assert "build: " in last["content"][-1]["text"]
        assert "cache_control" not in last["content"][-1]
        assert json.dumps(body).count('"cache_control"') <= 4
    assert "build:" not in ModelMessagesTypeAdapter.dump_json(history).decode()


def test_fixed_context_async(server: FakeServer) -> None:
    context = RunContext(head_sections=[("identity", HEAD)], facts=[("date", "2026-12-01")])
    agent = make_agent(openai_model(server), RunContextCapability(context))
    server.text("ok")
    result = asyncio.run(agent.run("Hi"))
    assert result.output == "ok"
    body = server.bodies()[0]
    assert body["messages"][0]["content"] == HEAD
    assert "date: 2026-12-01" in json.dumps(body["messages"][-1])


def test_streamed_run(server: FakeServer) -> None:
    clock = Clock()
    agent = make_agent(openai_model(server), RunContextCapability(builder(clock)))

    async def main() -> str:
        async with agent.run_stream("Is T-1 open?") as result:
            return await result.get_output()

    server.tool("lookup", ticket="T-1")
    server.text("open")
    assert asyncio.run(main()) == "open"
    bodies = server.bodies()
    assert [body.get("stream") for body in bodies] == [True, True]
    assert all("build: 1" in json.dumps(body["messages"][-1]) for body in bodies)


def test_session_records_every_request(server: FakeServer, tmp_path: Path) -> None:
    clock = Clock()
    capability = RunContextCapability(builder(clock))
    agent = make_agent(openai_model(server), capability)
    server.text("Hi.")
    first = agent.run_sync("Hello")
    seed = to_transcript_messages(first.all_messages())[:1]
    transcript = Session.create(tmp_path / "t.jsonl", seed)
    capability = RunContextCapability(builder(clock), session=transcript)
    recording = make_agent(openai_model(server), capability)
    server.tool("lookup", ticket="T-1")
    server.text("open")
    recording.run_sync("Is T-1 open?", message_history=first.all_messages())
    runs = Session.open(tmp_path / "t.jsonl").runs()
    assert [run.messages for run in runs] == [3, 5]
    assert len({run.digest for run in runs}) == 1
    assert "build:" not in json.dumps(Session.open(tmp_path / "t.jsonl").messages())


def test_anthropic_cache_settings_on_the_wire(server: FakeServer) -> None:
    """Both Anthropic cache settings send one explicit marker on the last conversation block
    and none on the tail: ``anthropic_cache`` (whose top-level automatic ``cache_control``
    would land on the tail) is made ``anthropic_cache_messages`` by the capability
    (docs/INTEGRATIONS.md)."""
    for setting in ("anthropic_cache", "anthropic_cache_messages"):
        server.requests.clear()
        agent = make_agent(
            anthropic_model(server), RunContextCapability(builder(Clock())), **{setting: True}
        )
        two_turns(server, agent)
        for body in server.bodies():
            assert "cache_control" not in body, setting
            blocks = [block for message in body["messages"] for block in message["content"]]
            assert "build: " in blocks[-1]["text"]
            assert "cache_control" not in blocks[-1]
            assert blocks[-2]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
            assert json.dumps(body).count('"cache_control"') == 1
