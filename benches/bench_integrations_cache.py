"""How much of each request a prefix cache can reuse, under each agent framework: runcontext's
integration against the framework's own dynamic-instructions idiom.

A 10-turn conversation (the texts of ``bench_prefix_cache.py``, an 8.6 KB head, one tool) runs
through the real framework against a local fake model server that records every request; the
facts change every turn (a clock with seconds, a git HEAD that moves every five turns). For
each request from the second on, as ``bench_prefix_cache.py`` does: the longest byte-identical
prefix of the previous request and this one, divided by the size of the previous one.

Requests are compared in the order the provider's cache reads them: tools, then the
instructions, then the conversation (OpenAI: ``tools``, ``messages``, or ``tools``,
``instructions``, ``input``; Anthropic: ``tools``, ``system``, ``messages``), each block
serialised as the SDKs do, ``cache_control`` markers left out (they are instructions to the
cache, not content). For Anthropic a second figure, *read*, is what the cache can actually
serve: the longest prefix that ends at a breakpoint of the previous request (an explicit
``cache_control``, or the last block under the top-level automatic ``cache_control``) and that
a breakpoint of this request reaches within the API's 20-block lookback.

The idioms: LangChain ``@dynamic_prompt`` (the system prompt rebuilt per call, facts after the
head), Pydantic AI ``@agent.instructions`` (a dynamic instruction after the static head),
OpenAI Agents ``instructions=`` as a function. Each renders the same facts text as the tail.

    python benches/bench_integrations_cache.py [--turns 10]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "integrations"))

from bench_prefix_cache import facts, head_text, turns  # noqa: E402

from runcontext import ContextBuilder, RunContext  # noqa: E402
from runcontext.providers import Contribution  # noqa: E402

from fakeserver import FakeServer  # noqa: E402

LOOKBACK = 20
HEAD = head_text(8600)


def rendered_facts(turn: int) -> str:
    return RunContext(facts=facts(turn)).tail_text or ""


class TurnFacts:
    """A provider giving turn ``n``'s facts on its ``n``-th build."""

    name = "facts"
    revision = "facts/bench"

    def __init__(self) -> None:
        self.turn = 0

    def collect(self, deadline: float) -> Contribution:
        self.turn += 1
        return Contribution(facts=facts(self.turn))


def context_builder() -> ContextBuilder:
    return ContextBuilder([TurnFacts()], head_sections=[("instructions", HEAD)])


def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open"


# --- measuring -----------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


Block = tuple[bytes, bool]  # (the block's bytes in the cache view, whether it is a breakpoint)


def unmarked(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: unmarked(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, list):
        return [unmarked(item) for item in block]
    return block


def marked(block: Any) -> bool:
    return isinstance(block, dict) and block.get("cache_control") is not None


def openai_blocks(body: dict[str, Any]) -> list[Block]:
    blocks = [(dumps(["tool", tool]), False) for tool in body.get("tools", [])]
    if "instructions" in body:
        blocks.append((dumps(["instructions", body["instructions"]]), False))
    for item in body.get("messages", body.get("input", [])):
        blocks.append((dumps(["item", item]), False))
    return blocks


def anthropic_blocks(body: dict[str, Any]) -> list[Block]:
    blocks = [(dumps(["tool", unmarked(t)]), marked(t)) for t in body.get("tools", [])]
    system = body.get("system", [])
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    blocks += [(dumps(["system", unmarked(b)]), marked(b)) for b in system]
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for index, block in enumerate(content):
            # A block carries its message's role; the first block of a message starts it.
            key = [message["role"], index == 0, unmarked(block)]
            blocks.append((dumps(key), marked(block) or _nested_marker(block)))
    if body.get("cache_control") is not None and blocks:
        blocks[-1] = (blocks[-1][0], True)  # automatic caching: the last block
    return blocks


def _nested_marker(block: Any) -> bool:
    return '"cache_control"' in dumps(block).decode()


def common_prefix(a: bytes, b: bytes) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def prefix_share(previous: list[Block], current: list[Block]) -> float:
    a = b"".join(block for block, _ in previous)
    b = b"".join(block for block, _ in current)
    return common_prefix(a, b) / len(a)


def read_share(previous: list[Block], current: list[Block]) -> float:
    """The share of the previous request the cache can serve to this one (Anthropic)."""
    total = sum(len(block) for block, _ in previous)
    same = 0
    while same < min(len(previous), len(current)) and previous[same][0] == current[same][0]:
        same += 1
    ends = [i for i, (_, mark) in enumerate(current) if mark]
    best = 0
    for k in range(same):
        if previous[k][1] and any(0 <= j - k <= LOOKBACK for j in ends):
            best = max(best, sum(len(block) for block, _ in previous[: k + 1]))
    return best / total


# --- the runs ------------------------------------------------------------------------------


def conversation(server: FakeServer, count: int, ask: Callable[[str], None]) -> None:
    for user, reply in turns(count):
        server.text(reply)
        ask(user)


def langchain_run(server: FakeServer, count: int, provider: str, setup: str) -> None:
    ours = setup.startswith("runcontext")
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelRequest, dynamic_prompt
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from runcontext.integrations.langchain import RunContextMiddleware

    model: Any
    middleware: list[Any] = []
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(model="gpt-4.1", base_url=server.url + "/v1", api_key="sk-fake")
    else:
        from langchain_anthropic import ChatAnthropic
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

        model = ChatAnthropic(
            model="claude-haiku-4-5", base_url=server.url, api_key="sk-fake", max_tokens=256
        )
        middleware.append(AnthropicPromptCachingMiddleware())
    turn = [0]
    if ours:
        # "wrong order": the caching middleware inside runcontext's (MiddlewareOrderWarning).
        at = 0 if setup.endswith("wrong order") else len(middleware)
        middleware.insert(at, RunContextMiddleware(context_builder()))
    else:

        @dynamic_prompt
        def prompt(request: ModelRequest) -> str:
            return f"{HEAD}\n\n{rendered_facts(turn[0])}"

        middleware.append(prompt)
    agent = create_agent(
        model, tools=[tool(lookup)], middleware=middleware, checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "bench"}}

    def ask(text: str) -> None:
        turn[0] += 1
        agent.invoke({"messages": [{"role": "user", "content": text}]}, config)

    conversation(server, count, ask)


def pydantic_ai_run(server: FakeServer, count: int, provider: str, setup: str) -> None:
    ours = setup.startswith("runcontext")
    from pydantic_ai import Agent

    from runcontext.integrations.pydantic_ai import RunContextCapability

    model: Any
    settings: dict[str, Any] = {}
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider_ = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
        model = OpenAIChatModel("gpt-4.1", provider=provider_)
    else:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel(
            "claude-haiku-4-5", provider=AnthropicProvider(base_url=server.url, api_key="x")
        )
        settings = {"anthropic_cache_instructions": True}
        auto = not ours or setup.endswith("anthropic_cache")
        settings["anthropic_cache" if auto else "anthropic_cache_messages"] = True
    turn = [0]
    if ours:
        agent: Agent[None, str] = Agent(
            model, capabilities=[RunContextCapability(context_builder())], model_settings=settings
        )
    else:
        agent = Agent(model, instructions=HEAD, model_settings=settings)

        @agent.instructions
        def current_facts() -> str:
            return rendered_facts(turn[0])

    agent.tool_plain(lookup)
    history: list[Any] = []

    def ask(text: str) -> None:
        turn[0] += 1
        history[:] = agent.run_sync(text, message_history=history).all_messages()

    conversation(server, count, ask)


def openai_agents_run(server: FakeServer, count: int, provider: str, setup: str) -> None:
    ours = setup.startswith("runcontext")
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    from runcontext.integrations.openai_agents import RunContextFilter

    client = AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)
    model = OpenAIResponsesModel(model="gpt-4.1", openai_client=client)
    turn = [0]
    run_config = RunConfig(tracing_disabled=True)
    if ours:
        agent: Agent[Any] = Agent(name="bench", model=model, tools=[function_tool(lookup)])
        run_config = RunConfig(
            tracing_disabled=True, call_model_input_filter=RunContextFilter(context_builder())
        )
    else:

        def instructions(ctx: Any, agent: Any) -> str:
            return f"{HEAD}\n\n{rendered_facts(turn[0])}"

        agent = Agent(
            name="bench", model=model, tools=[function_tool(lookup)], instructions=instructions
        )

    async def talk() -> None:
        # One event loop for the whole conversation: the client's connections belong to it.
        items: list[Any] = []
        for user, reply in turns(count):
            server.text(reply)
            turn[0] += 1
            question = {"role": "user", "content": user}
            result = await Runner.run(agent, [*items, question], run_config=run_config)
            items[:] = result.to_input_list()

    asyncio.run(talk())


Run = Callable[[FakeServer, int, str, str], None]
RUNS: list[tuple[str, str, Run, tuple[str, ...]]] = [
    ("LangChain", "openai", langchain_run, ("runcontext", "@dynamic_prompt")),
    (
        "LangChain",
        "anthropic",
        langchain_run,
        ("runcontext", "runcontext, wrong order", "@dynamic_prompt"),
    ),
    ("Pydantic AI", "openai", pydantic_ai_run, ("runcontext", "@agent.instructions")),
    (
        "Pydantic AI",
        "anthropic",
        pydantic_ai_run,
        ("runcontext", "runcontext, anthropic_cache", "@agent.instructions"),
    ),
    ("OpenAI Agents", "openai", openai_agents_run, ("runcontext", "instructions=fn")),
]


def measure(
    run: Run, count: int, provider: str, setup: str
) -> tuple[list[float], list[float] | None]:
    server = FakeServer()
    server.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the wrong-order run warns, as it should
            run(server, count, provider, setup)
    finally:
        server.stop()
    bodies = server.bodies()
    views = [anthropic_blocks(b) if provider == "anthropic" else openai_blocks(b) for b in bodies]
    pairs = list(itertools.pairwise(views))
    prefix = [prefix_share(a, b) for a, b in pairs]
    read = [read_share(a, b) for a, b in pairs] if provider == "anthropic" else None
    return prefix, read


def percent(values: Sequence[float]) -> str:
    return f"{100 * sum(values) / len(values):5.1f}% (lowest {100 * min(values):5.1f}%)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"{args.turns} turns; head {len(HEAD.encode()):,} B; facts change every turn")
    print("share of the previous request that is a byte-identical prefix of the next (mean)")
    print()
    print(f"{'framework':<14}{'provider':<11}{'setup':<29}{'prefix':<26}cache can read")
    for name, provider, run, setups in RUNS:
        for setup in setups:
            prefix, read = measure(run, args.turns, provider, setup)
            shown = percent(read) if read is not None else "(automatic: = prefix)"
            print(f"{name:<14}{provider:<11}{setup:<29}{percent(prefix):<26}{shown}".rstrip())
    return 0


def test_integrations_cache_runs(capsys: Any) -> None:
    # Shares, not times: no pytest-benchmark group (skipped under --benchmark-only). The
    # check run (make bench-check) runs the script small, so it cannot rot.
    assert main(["--turns", "2"]) == 0
    assert "2 turns" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
