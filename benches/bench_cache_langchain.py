"""What each provider's prompt cache reads and writes through a LangChain v1 agent.

The workload of ``bench_provider_cache.py`` (its ``turns``, ``facts`` and ``head_text``; a
50-turn conversation, two requests a turn: the question answered with a tool call, then the
tool result answered with text; facts changing every turn) through ``create_agent`` with a
real ``ChatOpenAI`` (Chat Completions and the Responses API, ``gpt-6-luna``),
``ChatAnthropic`` (``claude-sonnet-5-5``) and ``ChatGoogleGenerativeAI`` (``gemini-2.5-flash``,
implicit caching) against the cache simulators of ``tests/simulators``. Beside
``RunContextMiddleware``, LangChain's own dynamic-instructions idiom: a ``@dynamic_prompt``
middleware that puts the head and the same rendered facts in the system prompt (on Anthropic
with ``AnthropicPromptCachingMiddleware``, LangChain's caching idiom, as runcontext's series
has it too; Gemini has no caching middleware, as it caches implicitly). OpenAI runs under
both readings of where the implicit breakpoint lands. Columns as ``bench_provider_cache.py``'s
(``summarise``): *read / readable* against the prefix each runcontext request shares with the
previous one, *written*, requests that wrote into their last message, input cost relative to
no caching.

    python benches/bench_cache_langchain.py --turns 50
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import httpx  # noqa: E402
from bench_provider_cache import command, facts, summarise, turns  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ModelRequest, dynamic_prompt  # noqa: E402
from langchain_anthropic import ChatAnthropic  # noqa: E402
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_google_genai import ChatGoogleGenerativeAI  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from simulators.rules import OpenAICache, Usage  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import ContextBuilder, RunContext  # noqa: E402
from runcontext.integrations.langchain import RunContextMiddleware  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

OPENAI_MODEL = "gpt-6-luna"
ANTHROPIC_MODEL = "claude-sonnet-5-5"
GEMINI_MODEL = "gemini-2.5-flash"
READINGS = ("newest", "last_user_tool")
TOOL = "run_tests"


class TurnFacts:
    """Turn ``n``'s facts on the ``n``-th build."""

    name = "facts"
    revision = "facts/bench"

    def __init__(self) -> None:
        self.turn = 0

    def collect(self, deadline: float) -> Contribution:
        self.turn += 1
        return Contribution(facts=facts(self.turn))


class ToolLoopSimulator(SimulatorServer):
    """The simulators, answering every other request with a tool call (the turn's first), each
    answer with an id of its own (LangGraph keeps one message per id)."""

    def answer(self, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, answer = super().answer(path, raw)
        calls = sum(1 for e in self.exchanges if e.usage is not None)
        if status != 200:
            return status, answer
        if "candidates" in answer:  # Gemini: no reply id; a tool call is a functionCall part
            if calls % 2:
                call = {"functionCall": {"name": TOOL, "args": {}}}
                answer["candidates"][0]["content"]["parts"] = [call]
            return status, answer
        answer["id"] = f"{answer['id']}_{calls}"
        if path == "/v1/responses":
            answer["output"][0]["id"] = f"msg_sim_{calls}"
        if calls % 2 == 0:
            return status, answer
        call_id = f"call_{calls}"
        if path.endswith("/v1/chat/completions"):  # straight, or through the gateway route
            answer["choices"][0]["message"] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": TOOL, "arguments": "{}"},
                    }
                ],
            }
            answer["choices"][0]["finish_reason"] = "tool_calls"
        elif path == "/v1/responses":
            answer["output"] = [
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": TOOL,
                    "arguments": "{}",
                    "status": "completed",
                }
            ]
        else:
            answer["content"] = [{"type": "tool_use", "id": call_id, "name": TOOL, "input": {}}]
            answer["stop_reason"] = "tool_use"
        return status, answer


def openai(responses: bool) -> Callable[[str], Any]:
    def model(url: str) -> Any:
        return ChatOpenAI(
            model=OPENAI_MODEL,
            base_url=url + "/v1",
            api_key="sk-sim",
            max_retries=0,
            use_responses_api=responses,
            http_async_client=httpx.AsyncClient(),
        )

    return model


def anthropic(url: str) -> Any:
    return ChatAnthropic(model=ANTHROPIC_MODEL, base_url=url, api_key="sk-ant-sim", max_tokens=64)


def gemini(url: str) -> Any:
    return ChatGoogleGenerativeAI(
        model=GEMINI_MODEL, base_url=url, google_api_key="sim", max_retries=0
    )


def runcontext_middleware(head: str, anthropic_caching: bool) -> list[Any]:
    builder = ContextBuilder([TurnFacts()], head_sections=[("instructions", head)])
    caching = [AnthropicPromptCachingMiddleware()] if anthropic_caching else []
    return [*caching, RunContextMiddleware(builder)]


def idiom_middleware(head: str, anthropic_caching: bool) -> list[Any]:
    source = TurnFacts()
    current: dict[str, str] = {}

    @dynamic_prompt
    def instructions(request: ModelRequest) -> str:  # type: ignore[type-arg]
        # One build per turn (a turn's first request is the one with a new user message).
        if request.messages[-1].type == "human" or "text" not in current:
            context = RunContext(
                head_sections=[("instructions", head)], facts=source.collect(0).facts
            )
            current["text"] = "\n\n".join(t for t in (context.head_text, context.tail_text) if t)
        return current["text"]

    caching = [AnthropicPromptCachingMiddleware()] if anthropic_caching else []
    return [*caching, instructions]


Series = tuple[str, Callable[[str], Any], Callable[[str, bool], list[Any]], bool, str, str]


def series() -> list[Series]:
    """(label, model, middleware, Anthropic caching, OpenAI implicit reading, provider)."""
    rows: list[Series] = []
    for reading in READINGS:
        for api, responses in (("Chat", False), ("Responses", True)):
            rows += [
                (
                    f"{api} runcontext [{reading}]",
                    openai(responses),
                    runcontext_middleware,
                    False,
                    reading,
                    api,
                ),
                (
                    f"{api} @dynamic_prompt [{reading}]",
                    openai(responses),
                    idiom_middleware,
                    False,
                    reading,
                    api,
                ),
            ]
    rows += [
        ("Anthropic runcontext", anthropic, runcontext_middleware, True, "newest", "Anthropic"),
        (
            "Anthropic @dynamic_prompt + caching",
            anthropic,
            idiom_middleware,
            True,
            "newest",
            "Anthropic",
        ),
        # Gemini caches implicitly: no caching middleware, on either side.
        ("Gemini runcontext", gemini, runcontext_middleware, False, "newest", "Gemini"),
        ("Gemini @dynamic_prompt", gemini, idiom_middleware, False, "newest", "Gemini"),
    ]
    return rows


def run(
    model: Callable[[str], Any],
    middleware: list[Any],
    reading: str,
    turn_count: int,
) -> list[tuple[int, Usage]]:
    @tool(TOOL)
    def run_tests() -> str:
        """Run the test suite."""
        return "ok"

    with ToolLoopSimulator(openai=OpenAICache(implicit=reading)) as server:
        agent = create_agent(
            model(server.url),
            tools=[run_tests],
            middleware=middleware,
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "bench"}}
        out: list[tuple[int, Usage]] = []
        for turn, (question, _) in enumerate(turns(turn_count), start=1):
            agent.invoke({"messages": [{"role": "user", "content": question}]}, config)
            out += [(turn, usage) for usage in server.usages[len(out) :]]
        rejected = [e for e in server.exchanges if e.usage is None]
        if rejected:
            raise RuntimeError(f"the simulator refused a request: {json.loads(rejected[0].body)}")
        return out


def measure(turn_count: int, head: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    readable: dict[str, list[int]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the caching middleware's notes
        for label, model, middleware, caching, reading, provider in series():
            usages = run(model, middleware(head, caching), reading, turn_count)
            if "runcontext" in label and provider not in readable:
                readable[provider] = [u.shared for _, u in usages]
            results[label] = summarise(usages, readable[provider])
    return results


def main(argv: Sequence[str] | None = None) -> int:
    return command(
        argv,
        __doc__,
        f"LangChain; models {OPENAI_MODEL}, {ANTHROPIC_MODEL}, {GEMINI_MODEL}",
        measure,
    )


def test_cache_langchain_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "Chat runcontext [newest]" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
