"""What each provider's prompt cache reads and writes, turn by turn, through the SDKs.

A deterministic 50-turn tool-using conversation (each turn: a user message, a tool call, its
result, an answer; two requests per turn) whose facts change every turn, run through
``runcontext.Loop`` with each adapter and the official SDK against the cache simulators of
``tests/simulators`` (a local server that applies each provider's documented cache rules and
answers with usage in the provider's own shape). Beside each adapter, the naive idiom: the same
rendered facts at the end of the system prompt (OpenAI's implicit mode; Anthropic's top-level
automatic ``cache_control``; Gemini's implicit cache), and for OpenAI Chat the adapter as it
was before explicit breakpoints (no breakpoint, implicit mode).

For every request from turn 2 on:

* *read / readable*: tokens read from cache over the tokens a perfect cache could read, the
  prefix this request shares with the previous one (head and earlier conversation; for the
  naive idiom, the same conversation measured on the adapter's series);
* *written*: tokens written to cache over the request's input;
* *tail writes*: requests that wrote into their last message (the tail), paid and never read;
* *cost*: input cost relative to the same tokens without caching (reads 0.1x, writes 1.25x).

OpenAI Chat also runs behind a simulated OpenAI-compatible gateway that moves system and
developer messages to the front (the simulator's ``/gateway`` route), with the tail as a
``system`` and as a ``user`` message: the measured trade-off of ``tail_role``.

OpenAI runs under both readings of where the implicit breakpoint lands (``newest``: the end of
the newest message; ``last_user_tool``: the end of the last user or tool message).

    python benches/bench_provider_cache.py --turns 50
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import anthropic  # noqa: E402
import openai  # noqa: E402
from bench_prefix_cache import facts, head_text, turns  # noqa: E402
from google import genai  # noqa: E402
from google.genai import types  # noqa: E402
from simulators.rules import OpenAICache, Usage  # noqa: E402
from simulators.server import SimulatorServer  # noqa: E402

from runcontext import Loop, RunContext  # noqa: E402
from runcontext.adapters import (  # noqa: E402
    anthropic_messages,
    gemini_contents,
    openai_chat,
    openai_chat_request,
    openai_responses,
)

OPENAI_MODEL = "gpt-5.6"
ANTHROPIC_MODEL = "claude-sonnet-5-5"
GEMINI_MODEL = "gemini-2.5-flash"
TOOL = "run_tests"
READINGS = ("newest", "last_user_tool")

Adapter = Callable[[Sequence[Mapping[str, Any]], RunContext], Any]


@dataclass(frozen=True)
class Provider:
    """How one API spells the conversation, and how its SDK sends a request."""

    name: str
    user: Callable[[str], dict[str, Any]]
    call: Callable[[int], dict[str, Any]]
    result: Callable[[int, str], dict[str, Any]]
    answer: Callable[[str], dict[str, Any]]
    client: Callable[[SimulatorServer], Any]
    send: Callable[[Any, Any], None]


def _rendered(context: RunContext) -> str:
    return "\n\n".join(t for t in (context.head_text, context.tail_text) if t)


def _openai_client(server: SimulatorServer) -> Any:
    return openai.OpenAI(api_key="sk-sim", base_url=server.url + "/v1", max_retries=0)


def _gateway_client(server: SimulatorServer) -> Any:
    return openai.OpenAI(api_key="sk-sim", base_url=server.url + "/gateway/v1", max_retries=0)


def _chat_send(client: Any, request: Any) -> None:
    if isinstance(request, list):
        request = {"model": OPENAI_MODEL, "messages": request}
    client.chat.completions.create(**request)


def _responses_send(client: Any, request: Any) -> None:
    client.responses.create(**{"model": OPENAI_MODEL, **request})


def _anthropic_client(server: SimulatorServer) -> Any:
    return anthropic.Anthropic(api_key="sk-ant-sim", base_url=server.url, max_retries=0)


def _anthropic_send(client: Any, request: Any) -> None:
    client.messages.create(model=ANTHROPIC_MODEL, max_tokens=1024, **request)


def _gemini_client(server: SimulatorServer) -> Any:
    return genai.Client(api_key="sim", http_options=types.HttpOptions(base_url=server.url))


def _gemini_send(client: Any, request: Any) -> None:
    client.models.generate_content(model=GEMINI_MODEL, **request)


CHAT = Provider(
    "OpenAI Chat",
    user=lambda text: {"role": "user", "content": text},
    call=lambda n: {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": TOOL, "arguments": "{}"}}
        ],
    },
    result=lambda n, out: {"role": "tool", "tool_call_id": f"call_{n}", "content": out},
    answer=lambda text: {"role": "assistant", "content": text},
    client=_openai_client,
    send=_chat_send,
)
# The same API behind a gateway that moves system and developer messages to the front.
CHAT_GATEWAY = dataclasses.replace(CHAT, client=_gateway_client)
RESPONSES = Provider(
    "OpenAI Responses",
    user=lambda text: {"role": "user", "content": text},
    call=lambda n: {
        "type": "function_call",
        "call_id": f"call_{n}",
        "name": TOOL,
        "arguments": "{}",
    },
    result=lambda n, out: {"type": "function_call_output", "call_id": f"call_{n}", "output": out},
    answer=lambda text: {"role": "assistant", "content": text},
    client=_openai_client,
    send=_responses_send,
)
ANTHROPIC = Provider(
    "Anthropic",
    user=lambda text: {"role": "user", "content": text},
    call=lambda n: {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": TOOL, "input": {}}],
    },
    result=lambda n, out: {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": out}],
    },
    answer=lambda text: {"role": "assistant", "content": text},
    client=_anthropic_client,
    send=_anthropic_send,
)
GEMINI = Provider(
    "Gemini",
    user=lambda text: {"role": "user", "parts": [{"text": text}]},
    call=lambda n: {"role": "model", "parts": [{"function_call": {"name": TOOL, "args": {}}}]},
    result=lambda n, out: {
        "role": "user",
        "parts": [{"function_response": {"name": TOOL, "response": {"output": out}}}],
    },
    answer=lambda text: {"role": "model", "parts": [{"text": text}]},
    client=_gemini_client,
    send=_gemini_send,
)


def naive_chat(messages: Sequence[Mapping[str, Any]], context: RunContext) -> Any:
    return {
        "model": OPENAI_MODEL,
        "messages": [{"role": "system", "content": _rendered(context)}, *messages],
    }


def naive_responses(messages: Sequence[Mapping[str, Any]], context: RunContext) -> Any:
    return {"instructions": _rendered(context), "input": list(messages)}


def naive_anthropic(messages: Sequence[Mapping[str, Any]], context: RunContext) -> Any:
    return {
        "system": _rendered(context),
        "messages": list(messages),
        "cache_control": {"type": "ephemeral"},  # automatic caching: the last block
    }


def naive_gemini(messages: Sequence[Mapping[str, Any]], context: RunContext) -> Any:
    return {"contents": list(messages), "config": {"system_instruction": _rendered(context)}}


def series() -> list[tuple[str, Provider, Adapter, str]]:
    """(label, provider, adapter, OpenAI implicit reading) for every measured series."""
    rows: list[tuple[str, Provider, Adapter, str]] = []
    for reading in READINGS:
        rows += [
            (
                f"Chat runcontext [{reading}]",
                CHAT,
                functools.partial(openai_chat_request, model=OPENAI_MODEL),
                reading,
            ),
            (
                f"Chat runcontext, user tail [{reading}]",
                CHAT,
                functools.partial(openai_chat_request, model=OPENAI_MODEL, tail_role="user"),
                reading,
            ),
            (
                f"Chat no breakpoint [{reading}]",
                CHAT,
                functools.partial(openai_chat, cache="off"),
                reading,
            ),
            (f"Chat naive [{reading}]", CHAT, naive_chat, reading),
            (
                f"Chat runcontext via gateway, user tail [{reading}]",
                CHAT_GATEWAY,
                functools.partial(openai_chat_request, model=OPENAI_MODEL, tail_role="user"),
                reading,
            ),
            (
                f"Chat via gateway, system tail [{reading}]",
                CHAT_GATEWAY,
                functools.partial(openai_chat_request, model=OPENAI_MODEL),
                reading,
            ),
            (
                f"Responses runcontext [{reading}]",
                RESPONSES,
                functools.partial(openai_responses, cache="explicit"),
                reading,
            ),
            (f"Responses naive [{reading}]", RESPONSES, naive_responses, reading),
        ]
    rows += [
        ("Anthropic runcontext", ANTHROPIC, anthropic_messages, "newest"),
        ("Anthropic naive (automatic)", ANTHROPIC, naive_anthropic, "newest"),
        ("Gemini runcontext", GEMINI, gemini_contents, "newest"),
        ("Gemini naive", GEMINI, naive_gemini, "newest"),
    ]
    return rows


def run(
    provider: Provider, adapter: Adapter, reading: str, turn_count: int, head: str
) -> list[tuple[int, Usage]]:
    """Every request's (turn, usage) for one series."""
    with SimulatorServer(openai=OpenAICache(implicit=reading)) as server:
        pending: list[dict[str, Any]] = []
        client = provider.client(server)

        def backend(request: Any) -> Mapping[str, Any]:
            provider.send(client, request)
            return pending.pop(0)

        loop = Loop(backend, adapter=adapter)
        messages: list[Any] = []
        out: list[tuple[int, Usage]] = []
        for turn, (question, answer) in enumerate(turns(turn_count), start=1):
            context = RunContext(head_sections=[("instructions", head)], facts=facts(turn))
            messages.append(provider.user(question))
            pending.append(provider.call(turn))
            messages = loop.run(messages, context=context).messages
            messages.append(provider.result(turn, f"{turn % 3} failed, {40 + turn} passed. " * 6))
            pending.append(provider.answer(answer))
            messages = loop.run(messages, context=context).messages
            out += [(turn, usage) for usage in server.usages[-2:]]
        return out


def summarise(usages: list[tuple[int, Usage]], readable: list[int]) -> dict[str, float]:
    later = [(u, r) for (turn, u), r in zip(usages, readable, strict=True) if turn >= 2]
    shares = [u.read / r for u, r in later if r]
    total = sum(u.total for u, _ in later)
    return {
        "read": sum(u.read for u, _ in later) / sum(r for _, r in later),
        "lowest": min(shares) if shares else 0.0,
        "written": sum(u.written for u, _ in later) / total,
        "tail": sum(1 for u, _ in later if u.written_in_last_message),
        "requests": len(later),
        "cost": sum(u.cost() * u.total for u, _ in later) / total,
    }


def measure(turn_count: int, head: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    readable: dict[str, list[int]] = {}
    for label, provider, adapter, reading in series():
        usages = run(provider, adapter, reading, turn_count, head)
        if "runcontext" in label and provider.name not in readable:
            readable[provider.name] = [u.shared for _, u in usages]
        results[label] = summarise(usages, readable[provider.name])
    return results


def report(results: dict[str, dict[str, float]], tail: str = "last-msg writes") -> None:
    """The table every cache benchmark prints: one row a series."""
    columns = ("read/readable", "lowest", "written", tail, "cost")
    widths = (13, 7, 8, 15, 6)
    width = max(len("series"), *map(len, results))
    print(
        f"{'series':{width}} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    )
    for label, row in results.items():
        print(
            f"{label:{width}} {row['read']:>13.1%} {row['lowest']:>7.1%} {row['written']:>8.1%} "
            f"{int(row['tail']):>8} / {int(row['requests']):<4} {row['cost']:>6.2f}"
        )


def command(
    argv: Sequence[str] | None,
    description: str | None,
    what: str,
    measure: Callable[[int, str], dict[str, dict[str, float]]],
    tail: str = "last-msg writes",
) -> int:
    """The command line every cache benchmark shares: ``--turns`` and ``--head-kb``, a line
    saying what runs (``what``: the path and models), and the table."""
    parser = argparse.ArgumentParser(description=(description or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns to simulate (default 50)")
    parser.add_argument("--head-kb", type=float, default=8.4, help="head size in KB (default 8.4)")
    args = parser.parse_args(argv)
    head = head_text(int(args.head_kb * 1024))
    print(f"{args.turns} turns, 2 requests each; head {len(head.encode()):,} B; {what}\n")
    report(measure(args.turns, head), tail)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    models = f"models {OPENAI_MODEL}, {ANTHROPIC_MODEL}, {GEMINI_MODEL}"
    return command(argv, __doc__, f"Loop and the adapters; {models}", measure)


def test_provider_cache_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "Chat runcontext [newest]" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
