"""How much of each request a provider's prefix cache can reuse: runcontext against naive.

A deterministic conversation of ``--turns`` turns; the facts change every turn (a clock with
seconds, and a git HEAD that moves every five turns). For every turn from the second on, the
cacheable fraction is the longest common prefix, in bytes, of this turn's serialized request and
the previous turn's, divided by the size of the previous one (what was written to the cache and
can be read back).

* runcontext: ``openai_chat`` / ``anthropic_messages`` with the facts in the tail.
* naive, facts first: the same rendered facts at the top of the system message at index 0.
* naive, facts last: the same rendered facts at the end of that system message (the kinder
  baseline: the stable prose before the facts still matches).

Bodies are serialized as the official SDKs do (``json.dumps`` with ``ensure_ascii=False`` and
``separators=(",", ":")``, checked byte for byte in tests/test_sdk_requests.py). OpenAI Chat is
measured on the body the SDK sends (``{"model", "messages"}``). Anthropic is measured in the
API's cache order, tools then ``system`` then ``messages`` (the SDK writes ``system`` after
``messages`` in the JSON, which says nothing about the cache), on the cache's view of it:
``cache_control`` markers are instructions to the cache, not content, and a string ``content``
is shorthand for one text block, so both are normalised away. The raw bytes with the markers
are printed too: there the previous turn's marked message no longer matches.

    python benches/bench_prefix_cache.py --turns 50 --png docs/img/prefix-cache.png

``--head-kb`` sets the size of the stable instructions (default 8.4 KB: a 200-byte identity and
an 8 KB AGENTS.md, the typical context of ``benches/bench_runcontext.py``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runcontext import RunContext
from runcontext.adapters import anthropic_messages, openai_chat

OPENAI_MODEL = "gpt-6-luna"
START = datetime.datetime(2025, 6, 1, 9, 0, 0, tzinfo=datetime.UTC)

RULES = [
    "Read the relevant files before you change them, and keep each diff as small as it can be.",
    "Run the test suite after every change and report the exact command and its outcome.",
    "Never invent file names, functions or flags; look them up in the repository first.",
    "Prefer the standard library; add a dependency only when the user asks for one.",
    "When a command fails, quote the error and say what you will try next and why.",
    "Keep explanations short: what changed, why, and how it was checked.",
    "Do not reformat code you did not otherwise touch.",
    "Ask before deleting files, rewriting history or touching anything outside the project.",
]
WORDS = [
    "the",
    "test",
    "fixture",
    "config",
    "parser",
    "cache",
    "request",
    "body",
    "message",
    "branch",
    "commit",
    "file",
    "module",
    "function",
    "error",
    "trace",
    "line",
    "value",
    "option",
    "flag",
    "build",
    "import",
    "path",
    "token",
    "prefix",
    "tail",
    "head",
    "context",
    "digest",
    "run",
    "loop",
    "provider",
    "adapter",
    "schema",
    "field",
    "index",
    "retry",
    "timeout",
]

Measure = Callable[[list[dict[str, Any]], RunContext], bytes]


def head_text(size: int) -> str:
    """Stable instructions of about ``size`` bytes (the guideline list, repeated in parts)."""
    lines = ["You are a careful coding assistant working in the user's repository.", ""]
    part = 0
    while sum(len(line) + 1 for line in lines) < size:
        part += 1
        lines.append(f"## Guidelines, part {part}")
        lines.extend(f"- {rule}" for rule in RULES)
        lines.append("")
    return "\n".join(lines)


def facts(turn: int) -> list[tuple[str, str]]:
    clock = START + datetime.timedelta(seconds=turn * 97 + (turn * 37) % 23)
    head = hashlib.sha1(f"commit {(turn - 1) // 5}".encode()).hexdigest()
    return [
        ("clock", clock.isoformat(timespec="seconds")),
        ("git HEAD", head),
        ("branch", "main"),
        ("cwd", "/home/dev/project"),
    ]


def prose(rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def turns(count: int) -> list[tuple[str, str]]:
    """``count`` (user message, assistant reply) pairs, the same on every run."""
    rng = random.Random(4)
    return [(prose(rng, 150, 600), prose(rng, 600, 2500)) for _ in range(count)]


def dumps(value: Any) -> bytes:
    """Serialise as both SDKs do (their ``openapi_dumps``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def cache_view(blocks: Any) -> list[Any]:
    """Content as Anthropic's cache sees it: a list of blocks, without ``cache_control``."""
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in blocks]


def openai_body(messages: list[dict[str, Any]], context: RunContext) -> bytes:
    return dumps({"model": OPENAI_MODEL, "messages": openai_chat(messages, context)})


def anthropic_body(messages: list[dict[str, Any]], context: RunContext) -> bytes:
    body = anthropic_messages(messages, context)
    return dumps(
        {
            "system": cache_view(body.get("system", [])),
            "messages": [{**m, "content": cache_view(m["content"])} for m in body["messages"]],
        }
    )


def anthropic_raw_body(messages: list[dict[str, Any]], context: RunContext) -> bytes:
    body = anthropic_messages(messages, context)
    return dumps({"system": body.get("system", []), "messages": body["messages"]})


Placement = Callable[[int], RunContext]


def runcontext_placement(head: str) -> Placement:
    """Head sections at index 0, facts in the tail after the conversation."""
    return lambda turn: RunContext(head_sections=[("instructions", head)], facts=facts(turn))


def naive_placement(head: str, *, facts_first: bool) -> Placement:
    """The same facts, rendered the same way, inside the system message at index 0."""

    def build(turn: int) -> RunContext:
        rendered = RunContext(facts=facts(turn)).tail_text or ""
        parts = [rendered, head] if facts_first else [head, rendered]
        return RunContext(head_sections=[("system", "\n\n".join(parts))])

    return build


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by bisection on slice equality (fast in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def series(head: str) -> dict[str, tuple[Measure, Placement]]:
    ours = runcontext_placement(head)
    last = naive_placement(head, facts_first=False)
    first = naive_placement(head, facts_first=True)
    return {
        "OpenAI runcontext": (openai_body, ours),
        "OpenAI naive, facts last": (openai_body, last),
        "OpenAI naive, facts first": (openai_body, first),
        "Anthropic runcontext": (anthropic_body, ours),
        "Anthropic runcontext, raw bytes": (anthropic_raw_body, ours),
        "Anthropic naive, facts last": (anthropic_body, last),
        "Anthropic naive, facts first": (anthropic_body, first),
    }


def measure(turn_count: int, head: str) -> dict[str, list[tuple[int, int]]]:
    """For each series, ``(common prefix, previous size)`` in bytes for turns 2..N."""
    pairs = turns(turn_count)
    results: dict[str, list[tuple[int, int]]] = {}
    for name, (serialize, placement) in series(head).items():
        conversation: list[dict[str, Any]] = []
        previous = b""
        rows: list[tuple[int, int]] = []
        for turn, (question, answer) in enumerate(pairs, start=1):
            conversation.append({"role": "user", "content": question})
            body = serialize(conversation, placement(turn))
            if turn > 1:
                rows.append((common_prefix(previous, body), len(previous)))
            previous = body
            conversation.append({"role": "assistant", "content": answer})
        results[name] = rows
    return results


def report(results: dict[str, list[tuple[int, int]]]) -> None:
    names = list(results)
    short = [name.replace("Anthropic", "Anth.").replace("runcontext", "rc") for name in names]
    width = max(len(s) for s in short) + 2
    print("Cacheable fraction of the previous request (common prefix / previous size)")
    print(f"{'turn':>5}" + "".join(f"{s:>{width}}" for s in short))
    for index in range(len(results[names[0]])):
        cells = []
        for name in names:
            common, size = results[name][index]
            cells.append(f"{100 * common / size:>{width - 1}.1f}%")
        print(f"{index + 2:>5}" + "".join(cells))
    print()
    print(f"{'series':<34}{'overall':>9}{'lowest':>9}{'>= 95% from turn':>18}{'bytes reused':>14}")
    for name in names:
        rows = results[name]
        common = sum(c for c, _ in rows)
        size = sum(s for _, s in rows)
        lowest = min(c / s for c, s in rows)
        low = [turn for turn, (c, s) in enumerate(rows, start=2) if c / s < 0.95]
        since = "never" if low and low[-1] == len(rows) + 1 else str(low[-1] + 1 if low else 2)
        print(
            f"{name:<34}{100 * common / size:>8.1f}%{100 * lowest:>8.1f}%{since:>18}{common:>14,}"
        )


def plot(results: dict[str, list[tuple[int, int]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {
        "runcontext": {"color": "#1b7837", "linewidth": 2.2},
        "runcontext, raw bytes": {"color": "#1b7837", "linestyle": ":", "linewidth": 1.4},
        "naive, facts last": {"color": "#d95f02", "linewidth": 1.6},
        "naive, facts first": {"color": "#7570b3", "linewidth": 1.6},
    }
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, provider in zip(axes, ("OpenAI", "Anthropic"), strict=True):
        for name, rows in results.items():
            if not name.startswith(provider):
                continue
            label = name.removeprefix(provider).strip()
            xs = range(2, len(rows) + 2)
            ys = [100 * c / s for c, s in rows]
            ax.plot(xs, ys, label=label, **styles[label])
        ax.set_title("OpenAI Chat" if provider == "OpenAI" else "Anthropic Messages")
        ax.set_xlabel("turn")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(loc="center right", fontsize=8)
    axes[0].set_ylabel("previous request reusable from cache (%)")
    figure.suptitle("Prefix shared with the previous turn's request, facts changing every turn")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50, help="turns to simulate (default 50)")
    parser.add_argument("--png", type=Path, help="also draw the figure to this PNG file")
    parser.add_argument(
        "--head-kb",
        type=float,
        default=8.4,
        help="size of the stable instructions in KB (default 8.4: a 200-byte identity and an "
        "8 KB AGENTS.md, the typical context of benches/bench_runcontext.py)",
    )
    args = parser.parse_args(argv)
    if args.turns < 2:
        parser.error("--turns: need at least 2 turns to compare one with the previous")
    head = head_text(int(args.head_kb * 1000))
    tails = [len((RunContext(facts=facts(t)).tail_text or "").encode()) for t in (1, args.turns)]
    print(f"{args.turns} turns; head {len(head.encode()):,} B; tail up to {max(tails)} B\n")
    results = measure(args.turns, head)
    report(results)
    if args.png is not None:
        plot(results, args.png)
        print(f"\nwrote {args.png}")
    return 0


def test_prefix_cache_runs(capsys: Any) -> None:
    # Shares, not times: no pytest-benchmark group (skipped under --benchmark-only). The
    # check run (make bench-check) runs the script small, so it cannot rot.
    assert main(["--turns", "3"]) == 0
    assert "3 turns" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
