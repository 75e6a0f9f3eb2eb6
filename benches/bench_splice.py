"""Time ``splice`` and each adapter on 10, 1,000 and 100,000 messages of 10 B and of 1 MB.

The cost of a call should depend on the number of message references only, never on what the
messages hold: the ratio column (1 MB median / 10 B median) should stay near 1.0 at every size.
All 1 MB messages share one string object, so the largest case needs about 1 MB of text.

    python benches/bench_splice.py [--repeats N]

`pytest benches/bench_splice.py --benchmark-only` times each call and size with pytest-benchmark:
one group per call and size, the 1 MB messages beside the 10 B ones (the anchor).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pytest

from runcontext import RunContext
from runcontext._splice import splice
from runcontext.adapters import anthropic_messages, openai_chat, openai_responses

from _timing import benchmark_call

SIZES = (10, 1_000, 100_000)
BODIES = {"10 B": "x" * 10, "1 MB": "x" * 1_000_000}

CONTEXT = RunContext(
    head_sections=[("instructions", "You are a careful coding assistant.\n" * 40)],
    facts=[
        ("clock", "2025-06-01T09:00:00Z"),
        ("git HEAD", "4f1c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"),
        ("cwd", "/work/project"),
    ],
)

CALLS: dict[str, Callable[[Sequence[Any], RunContext], object]] = {
    "splice": splice,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic_messages": anthropic_messages,
}


def conversation(count: int, body: str) -> list[dict[str, Any]]:
    """``count`` alternating turns that start and end with ``user``, all sharing ``body``."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": body} for i in range(count - 1)] + [
        {"role": "user", "content": body}
    ]


def medians_ns(calls: Sequence[Callable[[], object]], repeats: int) -> list[float]:
    """Median time of each call, the calls interleaved so that load drift hits them alike."""
    for call in calls:
        call()  # warm up
    samples: list[list[int]] = [[] for _ in calls]
    for _ in range(repeats):
        for call, times in zip(calls, samples, strict=True):
            start = time.perf_counter_ns()
            call()
            times.append(time.perf_counter_ns() - start)
    return [statistics.median(times) for times in samples]


def human(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns:.0f} ns"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=0, help="timed calls per cell (default: by size)"
    )
    args = parser.parse_args(argv)
    header = f"{'call':<20}{'messages':>10}{'10 B':>14}{'1 MB':>14}{'1MB/10B':>10}"
    print(header)
    print("-" * len(header))
    for count in SIZES:
        repeats = args.repeats or max(31, min(1_001, 2_000_000 // count))
        conversations = {name: conversation(count, body) for name, body in BODIES.items()}
        for name, call in CALLS.items():
            small, large = medians_ns(
                [partial(call, messages, CONTEXT) for messages in conversations.values()],
                repeats,
            )
            print(
                f"{name:<20}{count:>10,}{human(small):>14}{human(large):>14}{large / small:>10.2f}"
            )
    return 0


@functools.cache
def cached_conversation(count: int, body: str) -> list[dict[str, Any]]:
    return conversation(count, BODIES[body])


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("count", SIZES)
def test_splice(benchmark: Any, quick: bool, count: int, name: str, body: str) -> None:
    count = min(count, 1_000) if quick else count
    benchmark.group = f"{name}: {count:,} messages, 1 MB each vs 10 B each"
    messages, call = cached_conversation(count, body), CALLS[name]
    benchmark_call(
        benchmark,
        lambda: call(messages, CONTEXT),
        implementation=f"{name}, {body} messages",
        anchor=body == "10 B",
    )


if __name__ == "__main__":
    raise SystemExit(main())
