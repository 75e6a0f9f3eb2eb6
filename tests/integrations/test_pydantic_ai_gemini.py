"""RunContextCapability on Gemini, through Pydantic AI's ``GoogleModel`` and the real
``google-genai`` SDK: the head first in ``systemInstruction`` (no framework text before it),
the tail the last part of the last ``user`` content as plain text (no ``<system>`` block) and
never in the run's history; against the Gemini cache simulator (tests/simulators), from turn 2
on at least 95% of the readable prefix read (``cachedContentTokenCount``) and nothing written;
the billed tokens in the transcript (docs/INTEGRATIONS.md, *Pydantic AI*)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("pydantic_ai", "pydantic-ai")
require("pydantic_ai.models.google", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter  # noqa: E402
from pydantic_ai.models.google import GoogleModel  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentedModel  # noqa: E402
from pydantic_ai.providers.google import GoogleProvider  # noqa: E402
from simulators.rules import tokens  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import ContextBuilder, RunContext, Session  # noqa: E402
from runcontext.integrations.pydantic_ai import RunContextCapability  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))

from bench_cache_pydantic_ai import GEMINI_MODEL, Facts, run, series  # noqa: E402
from bench_provider_cache import head_text  # noqa: E402

# gemini-2.5-flash is the model of the Gemini benchmarks (its 2,048-token cache minimum is
# below their head); Pydantic AI notes that Google retired the name.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic_ai.exceptions.DeprecatedModelWarning")

INSTRUCTIONS = "Answer in one short sentence."


def gemini(url: str) -> GoogleModel:
    return GoogleModel(GEMINI_MODEL, provider=GoogleProvider(api_key="fake", base_url=url))


def tail_of(build: int) -> str | None:
    """The tail ``builder(Clock())`` renders on its ``build``-th build."""
    return RunContext(head_sections=[("identity", HEAD)], facts=[("build", str(build))]).tail_text


def history_text(messages: list[ModelMessage]) -> str:
    return ModelMessagesTypeAdapter.dump_json(messages).decode()


def test_head_first_in_the_system_instruction_tail_last_and_not_in_the_history(
    server: FakeServer,
) -> None:
    agent: Agent[None, str] = Agent(
        gemini(server.url),
        instructions=INSTRUCTIONS,
        capabilities=[RunContextCapability(builder(Clock()))],
    )

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return "T-1 is open."

    server.tool("lookup", ticket="T-1")
    first = agent.run_sync("Is T-1 open?")
    second = agent.run_sync("Still?", message_history=first.all_messages())
    bodies = server.bodies()
    assert len(bodies) == 3  # run 1: the tool call and the answer; run 2: the answer
    for body, build in zip(bodies, (1, 1, 2), strict=True):
        # The head is the first part of the system instruction, the agent's own after it.
        assert body["systemInstruction"]["parts"] == [{"text": HEAD}, {"text": INSTRUCTIONS}]
        # The tail is the last part of the last content, a user turn, as plain text.
        last = body["contents"][-1]
        assert last["role"] == "user" and last["parts"][-1] == {"text": tail_of(build)}
        sent = json.dumps(body)
        assert sent.count("- build: ") == 1 and "<system>" not in sent
    # Pydantic AI sends the user prompt and the tail as one content; after a tool result, the
    # tail is a content of its own.
    assert bodies[0]["contents"] == [
        {"role": "user", "parts": [{"text": "Is T-1 open?"}, {"text": tail_of(1)}]}
    ]
    assert [c["role"] for c in bodies[1]["contents"]] == ["user", "model", "user", "user"]
    assert "functionResponse" in bodies[1]["contents"][2]["parts"][0]
    assert bodies[1]["contents"][-1] == {"role": "user", "parts": [{"text": tail_of(1)}]}
    # The previous request's tail is not sent again.
    assert bodies[2]["contents"][0] == {"role": "user", "parts": [{"text": "Is T-1 open?"}]}
    # Nothing of the tail in the run's history.
    assert "- build: " not in history_text(second.all_messages())


def test_an_instrumented_gemini_model_gets_the_same_placement(server: FakeServer) -> None:
    agent: Agent[None, str] = Agent(
        InstrumentedModel(gemini(server.url)),
        instructions=INSTRUCTIONS,
        capabilities=[RunContextCapability(builder(Clock()))],
    )
    agent.run_sync("Is T-1 open?")
    (body,) = server.bodies()
    assert body["systemInstruction"]["parts"] == [{"text": HEAD}, {"text": INSTRUCTIONS}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Is T-1 open?"}, {"text": tail_of(1)}]}
    ]


def test_a_system_tail_is_refused_before_anything_is_sent(server: FakeServer) -> None:
    agent: Agent[None, str] = Agent(
        gemini(server.url),
        capabilities=[RunContextCapability(builder(Clock()), tail_role="system")],
    )
    with pytest.raises(ValueError, match="Gemini has no system turn after the conversation"):
        agent.run_sync("Is T-1 open?")
    assert server.bodies() == []


def test_the_simulator_reads_the_prefix_from_turn_2_and_writes_nothing() -> None:
    turns = 4
    (one,) = [one for one in series() if one.label == "Gemini runcontext"]
    usages = run(one, turns, head_text(8 * 1024))
    later = [usage for turn, usage in usages if turn >= 2]
    assert len(later) == 2 * (turns - 1)
    for usage in later:
        assert usage.shared > 2048  # above Gemini 2.5's minimum: all of it can be read
        assert usage.read >= 0.95 * usage.shared, usage
        assert usage.written == 0, usage
    assert sum(u.read for u in later) >= 0.95 * sum(u.shared for u in later)


def test_what_is_read_ends_before_the_tail_and_the_bill_is_in_the_transcript(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent.jsonl"
    workload = Facts()
    capability = RunContextCapability(
        ContextBuilder([workload], head_sections=[("instructions", head_text(8 * 1024))]),
        session=str(path),
        counter=len,
    )
    with SimulatorServer() as simulator:
        agent: Agent[None, str] = Agent(
            gemini(simulator.url), instructions=INSTRUCTIONS, capabilities=[capability]
        )
        history: list[ModelMessage] = []
        for number in range(1, 4):
            workload.turn = number
            question = f"Question {number}: " + "what changed since the last run? " * 8
            result = asyncio.run(agent.run(question, message_history=history))
            history = result.all_messages()
        exchanges = simulator.exchanges
    assert capability.session is not None
    capability.session.close()
    usages = [e.usage for e in exchanges if e.usage is not None]
    assert len(usages) == 3 and usages[-1].read > 0
    for exchange, usage in zip(exchanges, usages, strict=True):
        tail = exchange.json["contents"][-1]["parts"][-1]
        assert "## Current context" in tail["text"]
        assert usage.read <= usage.total - tokens(["user", tail])
    with Session.open(path) as session:
        runs = session.runs()
        billed = [r.tokens["billed"] for r in runs if r.tokens is not None]
    assert len(billed) == len(runs) == 3
    assert [b["input"] for b in billed] == [usage.total for usage in usages]
    assert [b["cache_read"] for b in billed] == [usage.read for usage in usages]
    assert all(b["cache_write"] == 0 for b in billed)
