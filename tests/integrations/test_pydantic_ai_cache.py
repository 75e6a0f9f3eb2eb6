"""RunContextCapability's cache placement on the wire, through Pydantic AI and the real SDKs:
OpenAI GPT-6 (Chat Completions and Responses) gets one explicit ``prompt_cache_breakpoint`` on
the last conversation block and ``prompt_cache_options`` mode ``explicit``, older models
nothing; Anthropic gets explicit markers only, in TTL order, never on the tail, whichever
cache setting the caller chose; and against the cache simulators, from turn 2 on at least 95%
of what can be read is read, with no cache write at the tail, under both readings of OpenAI's
implicit breakpoint (docs/INTEGRATIONS.md, *Pydantic AI*)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.exceptions import ModelRequestRejectedError  # noqa: E402
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from runcontext.integrations.pydantic_ai import RunContextCapability  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))

from bench_cache_pydantic_ai import CHAT_SETTINGS, Series, gateway_chat, run, series  # noqa: E402
from bench_provider_cache import head_text  # noqa: E402

INSTRUCTIONS = "Answer in one short sentence."
BREAKPOINT = {"mode": "explicit"}


def openai(server: FakeServer, name: str = "gpt-6-luna", responses: bool = False) -> Any:
    provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
    model = OpenAIResponsesModel if responses else OpenAIChatModel
    return model(name, provider=provider)


def anthropic(server: FakeServer) -> AnthropicModel:
    provider = AnthropicProvider(base_url=server.url, api_key="sk-ant-fake")
    return AnthropicModel("claude-sonnet-5-5", provider=provider)


def tool_turn(
    server: FakeServer,
    model: Any,
    instructions: str | None = INSTRUCTIONS,
    tail_role: Any = None,
    **settings: Any,
) -> list[Any]:
    """One agent run that calls ``lookup`` and answers: two requests, as sent."""
    agent: Agent[None, str] = Agent(
        model,
        instructions=instructions,
        capabilities=[RunContextCapability(builder(Clock()), tail_role=tail_role)],
        model_settings=settings or None,
    )

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return "T-1 is open."

    server.tool("lookup", ticket="T-1")
    agent.run_sync("Is T-1 open?")
    return server.bodies()


def marked(items: list[dict[str, Any]], key: str = "content") -> list[tuple[int, Any]]:
    """(index, breakpoint) of every content part that carries a ``prompt_cache_breakpoint``."""
    found = []
    for index, item in enumerate(items):
        body = item.get("output" if item.get("type") == "function_call_output" else key)
        for part in body if isinstance(body, list) else []:
            if "prompt_cache_breakpoint" in part:
                found.append((index, part["prompt_cache_breakpoint"]))
    return found


def test_openai_chat_breakpoint_on_the_last_conversation_block(server: FakeServer) -> None:
    bodies = tool_turn(server, openai(server), thinking=False)
    assert len(bodies) == 2
    for body, role in zip(bodies, ["user", "tool"], strict=True):
        messages = body["messages"]
        assert body["prompt_cache_options"] == {"mode": "explicit"}
        assert [m["role"] for m in messages[:2]] == ["system", "system"]
        assert (messages[0]["content"], messages[1]["content"]) == (HEAD, INSTRUCTIONS)
        tail = messages[-1]
        assert tail["role"] == "system" and "build: 1" in tail["content"]
        # One breakpoint, on the message before the tail: the user's question, then the
        # tool's result (the assistant's tool call between them is walked past).
        assert marked(messages) == [(len(messages) - 2, BREAKPOINT)]
        assert messages[-2]["role"] == role
    assert bodies[1]["messages"][-3]["role"] == "assistant"


def test_a_user_tail_follows_the_breakpoint(server: FakeServer) -> None:
    bodies = tool_turn(server, openai(server), tail_role="user", thinking=False)
    assert len(bodies) == 2
    for body, role in zip(bodies, ["user", "tool"], strict=True):
        messages = body["messages"]
        tail = messages[-1]
        assert tail["role"] == "user" and "build: 1" in json.dumps(tail), tail
        assert marked(messages) == [(len(messages) - 2, BREAKPOINT)]
        assert messages[-2]["role"] == role


def test_tail_role_is_checked() -> None:
    with pytest.raises(ValueError, match="tail_role: expected 'system' or 'user', got 'tool'"):
        RunContextCapability(builder(Clock()), tail_role="tool")  # type: ignore[arg-type]


def test_openai_responses_breakpoint_on_the_last_conversation_item(server: FakeServer) -> None:
    bodies = tool_turn(server, openai(server, responses=True))
    assert len(bodies) == 2
    for body, kind in zip(bodies, ["user", "function_call_output"], strict=True):
        items = body["input"]
        assert body["prompt_cache_options"]["mode"] == "explicit"
        assert body["instructions"] == f"{HEAD}\n\n{INSTRUCTIONS}"
        tail = items[-1]
        assert tail["role"] == "system" and "build: 1" in json.dumps(tail)
        assert marked(items) == [(len(items) - 2, BREAKPOINT)]
        assert items[-2].get("role", items[-2].get("type")) == kind


def test_openai_caller_cache_options_are_kept(server: FakeServer) -> None:
    bodies = tool_turn(
        server, openai(server, responses=True), openai_prompt_cache_options={"ttl": "12h"}
    )
    for body in bodies:
        assert body["prompt_cache_options"]["mode"] == "explicit"
        assert body["prompt_cache_options"]["ttl"] == "12h"


def test_older_openai_models_get_no_cache_fields(server: FakeServer) -> None:
    for body in tool_turn(server, openai(server, "gpt-4.1")):
        assert "prompt_cache_options" not in body
        assert marked(body["messages"]) == []
        assert body["messages"][0]["content"] == HEAD


def test_openai_chat_refuses_tools_while_gpt6_reasons(server: FakeServer) -> None:
    """Pydantic AI refuses, before anything is sent, what OpenAI's Chat Completions API
    answers with HTTP 400: function tools while a GPT-6 model reasons. ``thinking=False`` (or
    ``OpenAIResponsesModel``) is the way (docs/INTEGRATIONS.md)."""
    with pytest.raises(ModelRequestRejectedError, match=r"thinking=False"):
        tool_turn(server, openai(server))
    assert server.requests == []


def anthropic_markers(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, ttl) of every ``cache_control`` marker, in request order."""
    found = []
    for tool in body.get("tools", []):
        if "cache_control" in tool:
            found.append(("tools", tool["cache_control"]["ttl"]))
    for block in body["system"]:
        if "cache_control" in block:
            found.append((block["text"][:24], block["cache_control"]["ttl"]))
    for index, message in enumerate(body["messages"]):
        for block in message["content"]:
            if "cache_control" in block:
                found.append((f"messages[{index}]", block["cache_control"]["ttl"]))
    return found


@pytest.mark.parametrize(
    "settings",
    [
        {"anthropic_cache": True},
        {"anthropic_cache_messages": True},
        {"cache": True},
    ],
    ids=["anthropic_cache", "anthropic_cache_messages", "cache"],
)
def test_anthropic_explicit_markers_never_on_the_tail(
    server: FakeServer, settings: dict[str, Any]
) -> None:
    bodies = tool_turn(server, anthropic(server), **settings)
    assert len(bodies) == 2
    for body in bodies:
        assert "cache_control" not in body  # no automatic caching: it would mark the tail
        tail = body["messages"][-1]
        assert tail["role"] == "system" and "build: 1" in tail["content"][0]["text"]
        assert "cache_control" not in json.dumps(tail)
        last = f"messages[{len(body['messages']) - 2}]"
        assert anthropic_markers(body)[-1] == (last, "5m")
        assert len(anthropic_markers(body)) <= 4


def test_anthropic_cache_instructions_covers_the_head(server: FakeServer) -> None:
    """The head is the first instruction, and static: ``anthropic_cache_instructions`` marks
    the last static instruction, so the cached prefix runs through the head (and the agent's
    instructions after it), never only Pydantic AI's own paragraph before them."""
    for instructions, marked_text in ((None, HEAD), (INSTRUCTIONS, INSTRUCTIONS)):
        server.requests.clear()
        body = tool_turn(
            server,
            anthropic(server),
            instructions,
            anthropic_cache_instructions=True,
            anthropic_cache_messages=True,
        )[0]
        texts = [block["text"] for block in body["system"]]
        head = texts.index(HEAD)
        assert texts[head + 1 :] == ([] if instructions is None else [INSTRUCTIONS])
        assert anthropic_markers(body) == [(marked_text[:24], "5m"), ("messages[0]", "5m")]


def test_anthropic_ttl_order(server: FakeServer) -> None:
    """A 1-hour conversation marker after a 5-minute instructions marker would be refused by
    the API: the conversation's takes 5 minutes. In the right order both are kept."""
    body = tool_turn(
        server, anthropic(server), anthropic_cache="1h", anthropic_cache_instructions=True
    )[0]
    assert [ttl for _, ttl in anthropic_markers(body)] == ["5m", "5m"]
    server.requests.clear()
    body = tool_turn(
        server, anthropic(server), anthropic_cache="5m", anthropic_cache_instructions="1h"
    )[0]
    assert [ttl for _, ttl in anthropic_markers(body)] == ["1h", "5m"]


HEAD_TEXT = head_text(8 * 1024)


@pytest.mark.parametrize("label", [one.label for one in series() if one.runcontext])
def test_reads_what_can_be_read_and_never_writes_the_tail(label: str) -> None:
    (one,) = [one for one in series() if one.label == label]
    usages = run(one, 3, HEAD_TEXT)
    later = [usage for turn, usage in usages if turn >= 2]
    assert len(later) == 4
    for usage in later:
        assert usage.shared > 0
        assert usage.read >= 0.95 * usage.shared, (label, usage)
        assert usage.written_in_last_message == 0, (label, usage)


@pytest.mark.parametrize("reading", ["newest", "last_user_tool"])
def test_behind_a_hoisting_gateway_a_user_tail_keeps_the_cache(reading: str) -> None:
    # The simulator's gateway route moves system messages to the front, as several
    # OpenAI-compatible gateways do: the default system-prompt tail then sits after the head
    # and changes the prefix every turn; tail_role="user" keeps it last.
    def through_gateway(tail_role: Any) -> tuple[int, int]:
        one = Series("gateway", gateway_chat, CHAT_SETTINGS, True, reading, tail_role)
        later = [usage for turn, usage in run(one, 4, HEAD_TEXT) if turn >= 2]
        return sum(u.read for u in later), sum(u.shared for u in later)

    read, readable = through_gateway("user")
    assert read >= 0.95 * readable
    default_read, _ = through_gateway(None)
    assert default_read < 0.6 * read


def test_the_framework_idiom_writes_at_the_tail() -> None:
    """The baseline the benchmark compares with: facts in dynamic instructions, OpenAI's
    implicit breakpoint at the newest message, write at every request's end."""
    (one,) = [one for one in series() if one.label == "Chat idiom [newest]"]
    usages = run(one, 3, HEAD_TEXT)
    assert all(usage.written_in_last_message for _, usage in usages)
