"""The Agents SDK's requests under OpenAI's prompt cache: the breakpoint and the cache mode on
the wire through the real SDK (Responses and Chat Completions models), and what the cache
simulator (``tests/simulators``) reads and writes over a growing tool-using conversation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require

require("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
)
from openai import AsyncOpenAI  # noqa: E402
from simulators.rules import IMPLICIT_READINGS, OpenAICache  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import ContextBuilder, RunContext  # noqa: E402
from runcontext.integrations.openai_agents import RunContextFilter  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

HEAD = "Prefer small diffs and say how you checked them. " * 120  # over the 1,024-token minimum
BREAKPOINT = {"mode": "explicit"}


def model(url: str, name: str, chat: bool) -> Any:
    client = AsyncOpenAI(base_url=url + "/v1", api_key="sk-fake", max_retries=0)
    if chat:
        return OpenAIChatCompletionsModel(model=name, openai_client=client)
    return OpenAIResponsesModel(model=name, openai_client=client)


class Turns:
    """Facts that change every turn: the provider reads the turn the test is in."""

    name = "turns"
    revision = "turns/test"

    def __init__(self) -> None:
        self.turn = 0

    def collect(self, deadline: float) -> Contribution:
        return Contribution(facts=[("turn", str(self.turn)), ("clock", f"09:{self.turn:02d}")])


def conversation(
    url: str, name: str, chat: bool, turns: int, tail_role: str = "developer"
) -> list[dict[str, Any]]:
    """``turns`` turns of a tool-using conversation, two requests each (the question; the tool
    result), sent through the SDK with the whole conversation as each run's input."""
    clock = Turns()
    builder = ContextBuilder([clock], head_sections=[("instructions", HEAD)])
    flt = RunContextFilter(builder, tail_role=tail_role)
    config = RunConfig(call_model_input_filter=flt, model_settings=flt.model_settings(name))
    agent = Agent(name="coder", instructions="Answer briefly.", model=model(url, name, chat))
    history: list[dict[str, Any]] = []

    async def main() -> None:
        for turn in range(1, turns + 1):
            clock.turn = turn
            history.append({"role": "user", "content": f"Question {turn}: what failed? " * 8})
            await Runner.run(agent, list(history), run_config=config)
            history.append(
                {
                    "type": "function_call",
                    "call_id": f"call_{turn}",
                    "name": "run_tests",
                    "arguments": "{}",
                }
            )
            history.append(
                {
                    "type": "function_call_output",
                    "call_id": f"call_{turn}",
                    "output": f"{turn % 3} failed, {40 + turn} passed. " * 6,
                }
            )
            await Runner.run(agent, list(history), run_config=config)
            history.append({"role": "assistant", "content": f"Answer {turn}. " * 20})

    asyncio.run(main())
    return history


def marked(value: Any) -> list[Any]:
    """Every JSON object in ``value`` that carries a ``prompt_cache_breakpoint``."""
    found: list[Any] = []
    if isinstance(value, dict):
        if "prompt_cache_breakpoint" in value:
            found.append(value)
        for item in value.values():
            found += marked(item)
    elif isinstance(value, list):
        for item in value:
            found += marked(item)
    return found


@pytest.mark.parametrize("chat", [False, True], ids=["responses", "chat"])
def test_one_breakpoint_on_the_last_conversation_block(server: FakeServer, chat: bool) -> None:
    conversation(server.url, "gpt-6-luna", chat, turns=2)
    bodies = server.bodies()
    assert len(bodies) == 4
    for index, body in enumerate(bodies):
        assert body["prompt_cache_options"] == {"mode": "explicit"}
        sent = body["messages"] if chat else body["input"]
        *rest, tail = sent
        assert tail["role"] == "developer" and isinstance(tail["content"], str)  # unmarked
        (part,) = marked(body)
        assert part["prompt_cache_breakpoint"] == BREAKPOINT
        last = rest[-1]
        # The question (a user message) or the tool result (a tool message, or a
        # function_call_output item), as the last block before the tail.
        if index % 2 == 0:
            assert last["role"] == "user"
            assert last["content"] == [
                {
                    "type": "text" if chat else "input_text",
                    "text": f"Question {index // 2 + 1}: what failed? " * 8,
                    "prompt_cache_breakpoint": BREAKPOINT,
                }
            ]
        else:
            key = "content" if chat else "output"
            assert last.get("role") == "tool" if chat else last["type"] == "function_call_output"
            assert last[key][0]["prompt_cache_breakpoint"] == BREAKPOINT
    # The head alone is the instructions; the agent's own come first in the conversation.
    instructions = {"role": "system", "content": "Answer briefly."}
    if chat:
        head = {"role": "system", "content": HEAD.strip()}
        assert bodies[0]["messages"][:2] == [head, instructions]
    else:
        assert bodies[0]["instructions"] == HEAD.strip()
        assert bodies[0]["input"][0] == instructions


@pytest.mark.parametrize("chat", [False, True], ids=["responses", "chat"])
def test_older_models_get_neither_field(server: FakeServer, chat: bool) -> None:
    conversation(server.url, "gpt-4.1", chat, turns=1)
    for body in server.bodies():
        assert "prompt_cache_options" not in body
        assert "prompt_cache_breakpoint" not in json.dumps(body)


@pytest.fixture(params=IMPLICIT_READINGS)
def simulator(request: pytest.FixtureRequest) -> Iterator[SimulatorServer]:
    with SimulatorServer(openai=OpenAICache(implicit=request.param)) as running:
        yield running


@pytest.mark.parametrize("chat", [False, True], ids=["responses", "chat"])
def test_the_cache_reads_the_readable_prefix_and_writes_no_tail(
    simulator: SimulatorServer, chat: bool
) -> None:
    conversation(simulator.url, "gpt-6-luna", chat, turns=6)
    usages = simulator.usages
    assert len(usages) == 12
    later = usages[2:]  # from turn 2 on
    read = sum(usage.read for usage in later)
    readable = sum(usage.shared for usage in later)
    assert read / readable >= 0.95, (read, readable)
    assert all(usage.written_in_last_message == 0 for usage in usages)  # never at the tail


@pytest.mark.parametrize("reading", IMPLICIT_READINGS)
def test_behind_a_hoisting_gateway_a_user_tail_keeps_the_cache(reading: str) -> None:
    # The simulator's gateway route moves system and developer messages to the front, as
    # several OpenAI-compatible gateways do: a developer tail then sits after the head and
    # changes the prefix every turn; a user tail stays last.
    def through_gateway(tail_role: str) -> tuple[int, int, list[Any]]:
        with SimulatorServer(openai=OpenAICache(implicit=reading)) as gateway:
            conversation(gateway.url + "/gateway", "gpt-6-luna", True, 4, tail_role=tail_role)
            later = gateway.usages[2:]  # from turn 2 on
            bodies = [exchange.json for exchange in gateway.exchanges]
        return sum(u.read for u in later), sum(u.shared for u in later), bodies

    read, readable, bodies = through_gateway("user")
    assert len(bodies) == 8
    for turn, body in enumerate(bodies, start=2):
        tail = body["messages"][-1]
        assert tail["role"] == "user" and f"09:{turn // 2:02d}" in tail["content"], tail
    assert read >= 0.95 * readable
    developer_read, _, _ = through_gateway("developer")
    assert developer_read < 0.6 * read


def test_tail_role_is_checked_when_the_filter_is_built() -> None:
    with pytest.raises(ValueError, match="tail_role: expected 'developer' or 'system' or 'user'"):
        RunContextFilter(RunContext(), tail_role="assistant")


def test_the_head_is_the_context_head(server: FakeServer) -> None:
    # A fixed context: the same head and tail on every request.
    context = RunContext(head_sections=[("instructions", HEAD)], facts=[("a", "b")])
    flt = RunContextFilter(context, cache="off")
    agent = Agent(name="coder", model=model(server.url, "gpt-6-luna", chat=False))
    Runner.run_sync(agent, "Hi", run_config=RunConfig(call_model_input_filter=flt))
    (body,) = server.bodies()
    assert body["instructions"] == context.head_text
    assert body["input"][:-1] == [{"role": "user", "content": "Hi"}]  # no instructions item
    assert "prompt_cache_breakpoint" not in json.dumps(body)
