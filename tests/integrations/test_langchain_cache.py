"""RunContextMiddleware's cache placement on the wire, through the real ChatOpenAI (Chat
Completions and the Responses API) and ChatAnthropic with the newest model names, and what the
provider simulators (tests/simulators) read and write turn after turn; a new context per run;
the billed tokens in the transcript."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import Clock, builder

require("langchain.agents", "langchain")
require("langchain_openai", "langchain")
require("langchain_anthropic", "langchain")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))

from bench_cache_langchain import TOOL, ToolLoopSimulator  # noqa: E402
from bench_prefix_cache import facts, head_text  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_anthropic import ChatAnthropic  # noqa: E402
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from simulators.rules import IMPLICIT_READINGS, AnthropicCache, OpenAICache, tokens  # noqa: E402

from runcontext import ContextBuilder, Session  # noqa: E402
from runcontext.integrations.langchain import RunContextMiddleware  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

BREAKPOINT = {"mode": "explicit"}


@tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open."


def openai_model(url: str, model: str = "gpt-6-luna", responses: bool = False) -> ChatOpenAI:
    return ChatOpenAI(
        model=model,
        base_url=url + "/v1",
        api_key="sk-fake",
        max_retries=0,
        use_responses_api=responses,
        http_async_client=httpx.AsyncClient(),
    )


def anthropic_model(url: str) -> ChatAnthropic:
    return ChatAnthropic(
        model="claude-sonnet-5-5", base_url=url, api_key="sk-ant-fake", max_tokens=256
    )


def tool_turn(server: FakeServer, model: Any, middleware: list[Any]) -> list[Any]:
    """A turn with a tool call and its continuation, then a second turn."""
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt="Answer briefly.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    server.tool("lookup", ticket="T-1")
    agent.invoke({"messages": [{"role": "user", "content": "Is T-1 open?"}]}, config)
    agent.invoke({"messages": [{"role": "user", "content": "Still?"}]}, config)
    return server.bodies()


def marked(part: Any) -> bool:
    return isinstance(part, dict) and "prompt_cache_breakpoint" in part


def test_openai_chat_breakpoint_on_the_last_user_or_tool_part(server: FakeServer) -> None:
    bodies = tool_turn(server, openai_model(server.url), [RunContextMiddleware(builder(Clock()))])
    assert len(bodies) == 3
    for body in bodies:
        assert body["prompt_cache_options"] == {"mode": "explicit"}
        messages = body["messages"]
        assert [m["role"] for m in messages[:2]] == ["system", "system"]
        assert messages[0]["content"] == "You are a careful agent."  # the head, then the agent's
        assert messages[1]["content"] == "Answer briefly."
        assert messages[-1]["role"] == "system" and "build: " in messages[-1]["content"]
        places = [
            (index, m["role"])
            for index, m in enumerate(messages)
            if isinstance(m["content"], list) and any(marked(p) for p in m["content"])
        ]
        assert len(places) == 1, messages  # one breakpoint, never on the tail
        index, role = places[0]
        assert index < len(messages) - 1 and role in ("user", "tool")
        # ...on the last message that may carry one: only assistant content follows it.
        assert all(m["role"] == "assistant" for m in messages[index + 1 : -1])
        assert messages[index]["content"][-1]["prompt_cache_breakpoint"] == BREAKPOINT
    assert [m["role"] for m in bodies[1]["messages"]][-3:] == ["assistant", "tool", "system"]
    assert marked(bodies[1]["messages"][-2]["content"][-1])  # the tool result
    # The second turn walks back past the assistant's answer to the new user message.
    assert bodies[2]["messages"][-2]["role"] == "user"


def test_openai_responses_breakpoint_on_the_function_call_output(server: FakeServer) -> None:
    model = openai_model(server.url, responses=True)
    bodies = tool_turn(server, model, [RunContextMiddleware(builder(Clock()))])
    assert all(server_path.path == "/v1/responses" for server_path in server.requests)
    continuation = bodies[1]
    assert continuation["prompt_cache_options"] == {"mode": "explicit"}
    items = continuation["input"]
    assert items[0]["role"] == "system" and items[0]["content"] == "You are a careful agent."
    assert items[-1]["role"] == "system" and "build: 1" in items[-1]["content"]
    assert items[-2]["type"] == "function_call_output"
    assert items[-2]["output"][-1]["prompt_cache_breakpoint"] == BREAKPOINT
    assert json.dumps(continuation).count("prompt_cache_breakpoint") == 1


def test_older_openai_models_are_sent_no_cache_fields(server: FakeServer) -> None:
    model = openai_model(server.url, model="gpt-4.1")
    bodies = tool_turn(server, model, [RunContextMiddleware(builder(Clock()))])
    for body in bodies:
        assert "prompt_cache_options" not in body
        assert "prompt_cache_breakpoint" not in json.dumps(body)


def test_a_mode_the_caller_chose_is_kept(server: FakeServer) -> None:
    model = openai_model(server.url)
    model.prompt_cache_options = {"mode": "implicit"}
    bodies = tool_turn(server, model, [RunContextMiddleware(builder(Clock()))])
    assert all(body["prompt_cache_options"] == {"mode": "implicit"} for body in bodies)
    assert all("prompt_cache_breakpoint" in json.dumps(body) for body in bodies)


def test_anthropic_explicit_markers_only_never_on_the_tail(server: FakeServer) -> None:
    middleware = [
        AnthropicPromptCachingMiddleware(ttl="1h"),
        RunContextMiddleware(builder(Clock())),
    ]
    bodies = tool_turn(server, anthropic_model(server.url), middleware)
    for body in bodies:
        assert "cache_control" not in body  # no automatic (top-level) breakpoint
        assert [block["text"] for block in body["system"]] == [
            "You are a careful agent.",
            "Answer briefly.",
        ]
        tail = body["messages"][-1]["content"][-1]
        assert "build: " in tail["text"] and "cache_control" not in tail
        markers = [
            block["cache_control"]
            for block in [
                *body["system"],
                *body["tools"],
                *(b for m in body["messages"] for b in m["content"] if isinstance(b, dict)),
            ]
            if "cache_control" in block
        ]
        assert 1 <= len(markers) <= 4
        assert all(marker["ttl"] == "1h" for marker in markers)  # one TTL: the order holds
        blocks = [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
        assert "cache_control" in blocks[-2]  # the last conversation block, before the tail


def test_a_new_context_for_every_run_of_the_same_messages(server: FakeServer) -> None:
    """A stateless service that sends the same messages again (a retry, a regenerate) starts a
    new run, and gets fresh facts."""
    clock = Clock()
    agent = create_agent(
        openai_model(server.url, model="gpt-4.1"),
        middleware=[RunContextMiddleware(builder(clock))],
    )
    question = HumanMessage(content="What is the status?", id="question-1")
    agent.invoke({"messages": [question]})
    agent.invoke({"messages": [question]})
    assert [body["messages"][-1]["content"].count("build: 1") for body in server.bodies()] == [
        1,
        0,
    ]
    assert clock.builds == 2


class TurnFacts:
    """The benchmark's facts, a new turn's on every build."""

    name = "facts"
    revision = "facts/test"

    def __init__(self) -> None:
        self.turn = 0

    def collect(self, deadline: float) -> Contribution:
        self.turn += 1
        return Contribution(facts=facts(self.turn))


@tool(TOOL)
def run_tests() -> str:
    """Run the test suite."""
    return "3 failed, 41 passed. " * 8


def simulated_turns(model: Any, middleware: list[Any], turns: int = 6) -> None:
    """``turns`` tool loops (a tool call, then an answer) against the simulators."""
    agent = create_agent(
        model,
        tools=[run_tests],
        system_prompt="Answer briefly.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in range(turns):
        question = f"Question {turn}: " + "what changed in the build since the last run? " * 4
        agent.invoke({"messages": [{"role": "user", "content": question}]}, config)


def tail_tokens(body: Any) -> int:
    """The simulator's tokens of the request's last block: the tail's text."""
    last = (body.get("messages") or body.get("input"))[-1]
    content = last["content"]
    block = content[-1] if isinstance(content, list) else {"type": "text", "text": content}
    assert "- clock: " in json.dumps(block), block  # the tail's first fact
    return tokens([last["role"], block])


def assert_cached(simulator: ToolLoopSimulator) -> None:
    exchanges = simulator.exchanges[2:]  # from turn 2 on
    assert exchanges and all(e.usage is not None for e in exchanges), simulator.exchanges
    usages = [e.usage for e in exchanges if e.usage is not None]
    readable = sum(usage.shared for usage in usages)
    assert sum(usage.read for usage in usages) >= 0.95 * readable
    for exchange, usage in zip(exchanges, usages, strict=True):
        # Nothing written at the tail: every entry written ends before it.
        assert usage.read + usage.written <= usage.total - tail_tokens(exchange.json)


def head_builder() -> ContextBuilder:
    return ContextBuilder([TurnFacts()], head_sections=[("instructions", head_text(8 * 1024))])


@pytest.mark.parametrize("reading", IMPLICIT_READINGS)
@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_openai_simulator_reads_the_prefix(reading: str, responses: bool) -> None:
    with ToolLoopSimulator(openai=OpenAICache(implicit=reading)) as simulator:
        model = openai_model(simulator.url, responses=responses)
        simulated_turns(model, [RunContextMiddleware(head_builder())])
        assert_cached(simulator)


def test_anthropic_simulator_reads_the_prefix() -> None:
    with ToolLoopSimulator(anthropic=AnthropicCache()) as simulator:
        middleware = [AnthropicPromptCachingMiddleware(), RunContextMiddleware(head_builder())]
        simulated_turns(anthropic_model(simulator.url), middleware)
        assert_cached(simulator)


@pytest.mark.parametrize("reading", IMPLICIT_READINGS)
def test_behind_a_hoisting_gateway_a_user_tail_keeps_the_cache(reading: str) -> None:
    # The simulator's gateway route moves system messages to the front, as several
    # OpenAI-compatible gateways do: the default SystemMessage tail then sits after the head and
    # changes the prefix every turn; tail_role="user" keeps it last.
    def through_gateway(tail_role: Any) -> tuple[int, int, list[Any]]:
        with ToolLoopSimulator(openai=OpenAICache(implicit=reading)) as gateway:
            middleware = RunContextMiddleware(head_builder(), tail_role=tail_role)
            simulated_turns(openai_model(gateway.url + "/gateway"), [middleware], turns=4)
            later = gateway.usages[2:]  # from turn 2 on
            bodies = [exchange.json for exchange in gateway.exchanges]
        return sum(u.read for u in later), sum(u.shared for u in later), bodies

    read, readable, bodies = through_gateway("user")
    assert len(bodies) == 8
    for body in bodies:
        tail = body["messages"][-1]
        assert tail["role"] == "user" and "- clock: " in json.dumps(tail), tail
    assert read >= 0.95 * readable
    default_read, _, bodies = through_gateway(None)
    assert all(body["messages"][-1]["role"] == "system" for body in bodies)
    assert default_read < 0.6 * read


def test_a_system_tail_is_refused_for_a_model_that_cannot_take_one(server: FakeServer) -> None:
    with pytest.raises(ValueError, match="tail_role: expected 'system' or 'user', got 'tool'"):
        RunContextMiddleware(head_builder(), tail_role="tool")  # type: ignore[arg-type]
    agent = create_agent(
        anthropic_model(server.url),
        middleware=[RunContextMiddleware(head_builder(), tail_role="system")],
    )
    with pytest.raises(ValueError, match="only OpenAI models take a system message after"):
        agent.invoke({"messages": [{"role": "user", "content": "Hello"}]})
    assert server.bodies() == []  # refused before anything was sent


def test_the_bill_is_in_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    with ToolLoopSimulator() as simulator:
        middleware = RunContextMiddleware(head_builder(), session=str(path), counter=len)
        simulated_turns(openai_model(simulator.url), [middleware], turns=3)
        middleware.close()
        usages = simulator.usages
    with Session.open(path) as session:
        runs = session.runs()
        billed = [run.tokens["billed"] for run in runs if run.tokens is not None]
    assert len(billed) == len(runs) == 6
    assert [b["input"] for b in billed] == [usage.total for usage in usages]
    assert [b["cache_read"] for b in billed] == [usage.read for usage in usages]
    assert [b["cache_write"] for b in billed] == [usage.written for usage in usages]
    assert billed[-1]["cache_read"] > 0
