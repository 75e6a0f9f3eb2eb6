"""RunContextMiddleware on Gemini, through the real ``ChatGoogleGenerativeAI`` (the
``google-genai`` SDK underneath): the head first in ``systemInstruction``, the tail the last
``user`` content and nowhere in the agent's state; against the Gemini cache simulator
(tests/simulators), from turn 2 on at least 95% of the readable prefix read
(``cachedContentTokenCount``) and nothing written at the tail; the billed tokens in the
transcript (docs/INTEGRATIONS.md, *LangChain*)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("langchain.agents", "langchain")
require("langchain_google_genai", "langchain")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))

from bench_cache_langchain import GEMINI_MODEL, TOOL, ToolLoopSimulator  # noqa: E402
from bench_prefix_cache import facts, head_text  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_google_genai import ChatGoogleGenerativeAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from simulators.rules import tokens  # noqa: E402

from runcontext import ContextBuilder, RunContext, Session  # noqa: E402
from runcontext.integrations.langchain import RunContextMiddleware  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

INSTRUCTIONS = "Answer briefly."


@tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open."


def gemini(url: str) -> ChatGoogleGenerativeAI:
    return ChatGoogleGenerativeAI(
        model=GEMINI_MODEL, base_url=url, google_api_key="fake", max_retries=0
    )


def tail_of(build: int) -> str | None:
    """The tail ``builder(Clock())`` renders on its ``build``-th build."""
    return RunContext(head_sections=[("identity", HEAD)], facts=[("build", str(build))]).tail_text


def test_head_first_in_the_system_instruction_tail_last_and_not_in_the_state(
    server: FakeServer,
) -> None:
    agent = create_agent(
        gemini(server.url),
        tools=[lookup],
        system_prompt=INSTRUCTIONS,
        middleware=[RunContextMiddleware(builder(Clock()))],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    server.tool("lookup", ticket="T-1")
    agent.invoke({"messages": [{"role": "user", "content": "Is T-1 open?"}]}, config)
    agent.invoke({"messages": [{"role": "user", "content": "Still?"}]}, config)
    bodies = server.bodies()
    assert len(bodies) == 3  # turn 1: the tool call and the answer; turn 2: the answer
    for body, build in zip(bodies, (1, 1, 2), strict=True):
        # The head is the first part of the system instruction, the agent's prompt after it.
        assert body["systemInstruction"]["parts"] == [{"text": HEAD}, {"text": INSTRUCTIONS}]
        # The tail is the last content, a user turn of one text part, in this request only.
        assert body["contents"][-1] == {"role": "user", "parts": [{"text": tail_of(build)}]}
        assert "- build: " not in json.dumps(body["contents"][:-1])
    # The conversation before the tail is the agent's, as Gemini contents.
    assert [c["role"] for c in bodies[1]["contents"]] == ["user", "model", "user", "user"]
    assert bodies[1]["contents"][0] == {"role": "user", "parts": [{"text": "Is T-1 open?"}]}
    assert "functionCall" in bodies[1]["contents"][1]["parts"][0]
    assert "functionResponse" in bodies[1]["contents"][2]["parts"][0]
    assert bodies[2]["contents"][-2] == {"role": "user", "parts": [{"text": "Still?"}]}
    # Nothing of the tail or the head in the agent's checkpointed messages.
    state = json.dumps([m.model_dump() for m in agent.get_state(config).values["messages"]])
    assert "- build: " not in state and HEAD not in state


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


def simulated_turns(middleware: RunContextMiddleware, url: str, turns: int = 6) -> None:
    """``turns`` tool loops (a tool call, then an answer) against the simulator."""
    agent = create_agent(
        gemini(url),
        tools=[run_tests],
        system_prompt=INSTRUCTIONS,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in range(turns):
        question = f"Question {turn}: " + "what changed in the build since the last run? " * 4
        agent.invoke({"messages": [{"role": "user", "content": question}]}, config)


def head_builder() -> ContextBuilder:
    return ContextBuilder([TurnFacts()], head_sections=[("instructions", head_text(8 * 1024))])


def test_the_simulator_reads_the_prefix_from_turn_2_and_nothing_at_the_tail() -> None:
    with ToolLoopSimulator() as simulator:
        simulated_turns(RunContextMiddleware(head_builder()), simulator.url)
    exchanges = simulator.exchanges[2:]  # from turn 2 on
    assert len(exchanges) == 10 and all(e.usage is not None for e in exchanges)
    usages = [e.usage for e in exchanges if e.usage is not None]
    for exchange, usage in zip(exchanges, usages, strict=True):
        assert usage.shared > 2048  # above Gemini 2.5's minimum: all of it can be read
        assert usage.read >= 0.95 * usage.shared
        # Gemini bills no write; and what is read ends before the tail, the last content.
        tail = exchange.json["contents"][-1]
        assert tail["role"] == "user" and "- clock: " in tail["parts"][0]["text"]
        tail_tokens = tokens(["user", {"role": "user"}]) + tokens(["user", tail["parts"][0]])
        assert usage.written == 0
        assert usage.read <= usage.total - tail_tokens
    assert sum(u.read for u in usages) >= 0.95 * sum(u.shared for u in usages)


def test_the_bill_is_in_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    with ToolLoopSimulator() as simulator:
        middleware = RunContextMiddleware(head_builder(), session=str(path), counter=len)
        simulated_turns(middleware, simulator.url, turns=3)
        middleware.close()
        usages = simulator.usages
    with Session.open(path) as session:
        runs = session.runs()
        billed = [run.tokens["billed"] for run in runs if run.tokens is not None]
    assert len(billed) == len(runs) == 6
    assert [b["input"] for b in billed] == [usage.total for usage in usages]
    assert [b["cache_read"] for b in billed] == [usage.read for usage in usages]
    assert all(b["cache_write"] == 0 for b in billed)
    assert billed[-1]["cache_read"] > 0
