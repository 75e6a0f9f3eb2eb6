"""What OpenAI's prompt cache reads and writes through the OpenAI Agents SDK, turn by turn.

The workload of ``bench_provider_cache.py`` (its ``turns``, ``facts`` and ``head_text``: a
deterministic tool-using conversation whose facts change every turn, two requests per turn,
the question and the tool result) sent through the real SDK (``Runner.run`` with the whole
conversation as each run's input) to the cache simulator of ``tests/simulators``, with the
Responses model and the Chat Completions model, under both readings of where OpenAI's implicit
breakpoint lands. Two ways to give the agent its context:

* *runcontext*: ``RunContextFilter`` (head as ``instructions``, tail last, one explicit
  breakpoint on the last conversation block) with ``model_settings()`` (explicit mode);
* *dynamic instructions*: the SDK's own idiom, an ``instructions`` function returning the head
  and the rendered facts, no filter, the default (implicit) cache mode.

Columns as in ``bench_provider_cache.py`` (``summarise``): read over what a perfect cache could
read (the prefix each runcontext request shares with the previous one), the share written,
requests that wrote into their last message (the tail), and input cost relative to no caching.
The SDK sends to OpenAI only; other providers go through its LiteLLM extension, not measured.

    python benches/bench_cache_openai_agents.py --turns 50
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
)
from bench_provider_cache import READINGS, command, facts, summarise, turns  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from simulators.rules import OpenAICache, Usage  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import ContextBuilder, RunContext  # noqa: E402
from runcontext.integrations.openai_agents import RunContextFilter  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

MODEL = "gpt-6-luna"
TOOL = "run_tests"
INSTRUCTIONS = "Answer briefly."


class Facts:
    """The workload's facts of the turn being run."""

    name = "facts"
    revision = "facts/bench"

    def __init__(self) -> None:
        self.turn = 1

    def collect(self, deadline: float) -> Contribution:
        return Contribution(facts=facts(self.turn))


def _model(client: AsyncOpenAI, chat: bool) -> Any:
    if chat:
        return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    return OpenAIResponsesModel(model=MODEL, openai_client=client)


def run(
    chat: bool, idiom: bool, reading: str, turn_count: int, head: str
) -> list[tuple[int, Usage]]:
    """Every request's (turn, usage) for one series."""
    source = Facts()
    with SimulatorServer(openai=OpenAICache(implicit=reading)) as server:
        # An async client belongs to one event loop: made here, closed in main().
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-sim", max_retries=0)
        config: RunConfig
        if idiom:

            def instructions(wrapper: Any, agent: Any) -> str:
                context = RunContext(
                    head_sections=[("instructions", head)], facts=facts(source.turn)
                )
                rendered = "\n\n".join(t for t in (context.head_text, context.tail_text) if t)
                return f"{rendered}\n\n{INSTRUCTIONS}"

            agent = Agent(name="coder", instructions=instructions, model=_model(client, chat))
            config = RunConfig()
        else:
            builder = ContextBuilder([source], head_sections=[("instructions", head)])
            flt = RunContextFilter(builder)
            agent = Agent(name="coder", instructions=INSTRUCTIONS, model=_model(client, chat))
            config = RunConfig(
                call_model_input_filter=flt, model_settings=flt.model_settings(MODEL)
            )
        history: list[Any] = []

        async def main() -> None:
            for turn, (question, answer) in enumerate(turns(turn_count), start=1):
                source.turn = turn
                history.append({"role": "user", "content": question})
                await Runner.run(agent, list(history), run_config=config)
                output = f"{turn % 3} failed, {40 + turn} passed. " * 6
                history.append(
                    {
                        "type": "function_call",
                        "call_id": f"call_{turn}",
                        "name": TOOL,
                        "arguments": "{}",
                    }
                )
                history.append(
                    {"type": "function_call_output", "call_id": f"call_{turn}", "output": output}
                )
                await Runner.run(agent, list(history), run_config=config)
                history.append({"role": "assistant", "content": answer})
            await client.close()

        asyncio.run(main())
        usages = server.usages
        return [(index // 2 + 1, usage) for index, usage in enumerate(usages)]


def measure(turn_count: int, head: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for chat in (False, True):
        api = "Chat" if chat else "Responses"
        for reading in READINGS:
            ours = run(chat, False, reading, turn_count, head)
            readable = [usage.shared for _, usage in ours]
            results[f"{api} runcontext [{reading}]"] = summarise(ours, readable)
            idiom = run(chat, True, reading, turn_count, head)
            results[f"{api} dynamic instructions [{reading}]"] = summarise(idiom, readable)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    return command(argv, __doc__, f"the OpenAI Agents SDK; model {MODEL}", measure)


def test_cache_openai_agents_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "Responses runcontext [newest]" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
