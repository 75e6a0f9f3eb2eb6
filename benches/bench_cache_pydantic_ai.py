"""What each provider's prompt cache reads and writes through Pydantic AI, turn by turn.

The workload of ``bench_provider_cache.py`` (its ``turns``, ``facts`` and ``head_text``: a
tool-using conversation whose facts change every turn, two requests per turn) run through a
Pydantic AI ``Agent`` and the official SDKs against the cache simulators of
``tests/simulators``, on each model class Pydantic AI has for the providers it supports:
``OpenAIChatModel`` and ``OpenAIResponsesModel`` (GPT-6, with explicit breakpoints),
``AnthropicModel`` and ``GoogleModel`` (``gemini-2.5-flash``, implicit caching). Two ways to
give the agent the facts:

* *runcontext*: ``RunContextCapability`` (the head first among the instructions, the facts in
  the tail after the conversation; on Anthropic with ``anthropic_cache=True``, the obvious
  setting, which the capability turns into explicit markers; on Gemini with no setting);
* *idiom*: Pydantic AI's own dynamic instructions, an ``@agent.instructions`` function
  returning the head and the facts, with the framework's cache settings (OpenAI: its default,
  OpenAI's implicit breakpoint; Anthropic: ``anthropic_cache=True`` and
  ``anthropic_cache_instructions=True``; Gemini: none, its caching is implicit).

Each turn is two agent runs: the user's question (whose reply the workload turns into a tool
call), then the tool's result (whose reply becomes the turn's answer), as a tool loop sends
them. The columns are ``bench_provider_cache.py``'s (``summarise``): from turn 2 on, tokens read
over the tokens a perfect cache could read (the prefix shared with the previous request,
measured on the runcontext series), the lowest share of one request, tokens written over
input, requests that wrote into their last message (the tail), and input cost relative to no
caching. OpenAI runs under both readings of where its implicit breakpoint lands.

    python benches/bench_cache_pydantic_ai.py --turns 50
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_provider_cache import command, facts, summarise, turns  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.exceptions import DeprecatedModelWarning  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.google import GoogleModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.google import GoogleProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from simulators.rules import OpenAICache, Usage  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import ContextBuilder, RunContext  # noqa: E402
from runcontext.integrations.pydantic_ai import RunContextCapability  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

OPENAI_MODEL = "gpt-6-luna"
ANTHROPIC_MODEL = "claude-sonnet-5-5"
# Gemini 2.5's implicit-cache minimum (2,048 tokens) is below the workload's head, as in
# bench_cache_google_adk.py; Pydantic AI's note that the name is retired is silenced.
GEMINI_MODEL = "gemini-2.5-flash"
TOOL = "run_tests"
READINGS = ("newest", "last_user_tool")


@dataclass(frozen=True)
class Series:
    label: str
    model: Callable[[SimulatorServer], Any]
    settings: dict[str, Any]
    runcontext: bool  # the capability, or the framework's dynamic instructions
    reading: str = "newest"
    tail_role: Literal["system", "user"] | None = None  # the capability's


class Facts:
    """The workload's facts of the current turn, as a provider."""

    name = "workload"
    revision = "workload/1"

    def __init__(self) -> None:
        self.turn = 1

    def collect(self, deadline: float) -> Contribution:
        return Contribution(facts=facts(self.turn))


def _chat(server: SimulatorServer) -> Any:
    provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-sim")
    return OpenAIChatModel(OPENAI_MODEL, provider=provider)


def gateway_chat(server: SimulatorServer) -> Any:
    """OpenAI Chat through the simulator's gateway route, which moves system messages first."""
    provider = OpenAIProvider(base_url=server.url + "/gateway/v1", api_key="sk-sim")
    return OpenAIChatModel(OPENAI_MODEL, provider=provider)


def _responses(server: SimulatorServer) -> Any:
    provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-sim")
    return OpenAIResponsesModel(OPENAI_MODEL, provider=provider)


def _anthropic(server: SimulatorServer) -> Any:
    return AnthropicModel(
        ANTHROPIC_MODEL, provider=AnthropicProvider(base_url=server.url, api_key="sk-ant-sim")
    )


def _gemini(server: SimulatorServer) -> Any:
    return GoogleModel(GEMINI_MODEL, provider=GoogleProvider(api_key="sim", base_url=server.url))


# OpenAI refuses tools over Chat Completions while a GPT-6 model reasons (docs/INTEGRATIONS.md).
CHAT_SETTINGS = {"thinking": False}
# A small max_tokens: with a large one the SDK streams, and the simulators answer in one body.
_ANTHROPIC = {"max_tokens": 1024}
_ANTHROPIC_IDIOM = {**_ANTHROPIC, "anthropic_cache": True, "anthropic_cache_instructions": True}


def series() -> list[Series]:
    rows: list[Series] = []
    for reading in READINGS:
        rows += [
            Series(f"Chat runcontext [{reading}]", _chat, CHAT_SETTINGS, True, reading),
            Series(f"Chat idiom [{reading}]", _chat, CHAT_SETTINGS, False, reading),
            Series(f"Responses runcontext [{reading}]", _responses, {}, True, reading),
            Series(f"Responses idiom [{reading}]", _responses, {}, False, reading),
        ]
    rows += [
        Series(
            "Anthropic runcontext (anthropic_cache)",
            _anthropic,
            {**_ANTHROPIC, "anthropic_cache": True},
            True,
        ),
        Series(
            "Anthropic runcontext (cache=True)", _anthropic, {**_ANTHROPIC, "cache": True}, True
        ),
        Series("Anthropic idiom (anthropic_cache)", _anthropic, _ANTHROPIC_IDIOM, False),
        Series("Gemini runcontext", _gemini, {}, True),
        Series("Gemini idiom", _gemini, {}, False),
    ]
    return rows


def _agent(series: Series, server: SimulatorServer, head: str, workload: Facts) -> Agent[None, str]:
    model = series.model(server)
    if series.runcontext:
        builder = ContextBuilder([workload], head_sections=[("instructions", head)])
        agent: Agent[None, str] = Agent(
            model,
            capabilities=[RunContextCapability(builder, tail_role=series.tail_role)],
            model_settings=series.settings,
        )
    else:
        agent = Agent(model, model_settings=series.settings)

        @agent.instructions
        def instructions() -> str:
            context = RunContext(head_sections=[("instructions", head)], facts=facts(workload.turn))
            return "\n\n".join(t for t in (context.head_text, context.tail_text) if t)

    @agent.tool_plain(name=TOOL)
    def run_tests() -> str:
        """Run the test suite."""
        return ""

    return agent


def _answered(messages: list[ModelMessage], part: Any) -> list[ModelMessage]:
    """The run's messages with the simulator's reply replaced by the workload's."""
    last = messages[-1]
    assert isinstance(last, ModelResponse)
    return [*messages[:-1], replace(last, parts=[part])]


def run(series: Series, turn_count: int, head: str) -> list[tuple[int, Usage]]:
    """Every request's (turn, usage) for one series."""
    server = SimulatorServer(openai=OpenAICache(implicit=series.reading))
    with server, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedModelWarning)  # GEMINI_MODEL's retirement
        workload = Facts()
        agent = _agent(series, server, head, workload)
        history: list[ModelMessage] = []
        out: list[tuple[int, Usage]] = []

        async def turn(number: int, question: str, answer: str) -> list[ModelMessage]:
            workload.turn = number
            first = await agent.run(question, message_history=history)
            call = ToolCallPart(TOOL, {}, tool_call_id=f"call_{number}")
            output = f"{number % 3} failed, {40 + number} passed. " * 6
            messages = [
                *_answered(first.all_messages(), call),
                ModelRequest(parts=[ToolReturnPart(TOOL, output, tool_call_id=f"call_{number}")]),
            ]
            second = await agent.run(None, message_history=messages)
            return _answered(second.all_messages(), TextPart(answer))

        for number, (question, answer) in enumerate(turns(turn_count), start=1):
            history = asyncio.run(turn(number, question, answer))
            out += [(number, usage) for usage in server.usages[-2:]]
        return out


def measure(turn_count: int, head: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    readable: dict[str, list[int]] = {}
    for one in series():
        usages = run(one, turn_count, head)
        api = one.label.split()[0]
        if one.runcontext and api not in readable:
            readable[api] = [usage.shared for _, usage in usages]
        results[one.label] = summarise(usages, readable[api])
    return results


def main(argv: Sequence[str] | None = None) -> int:
    return command(
        argv,
        __doc__,
        f"Pydantic AI; models {OPENAI_MODEL}, {ANTHROPIC_MODEL}, {GEMINI_MODEL}",
        measure,
    )


def test_cache_pydantic_ai_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "Chat runcontext [newest]" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
