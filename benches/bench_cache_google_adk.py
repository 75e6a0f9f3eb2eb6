"""What Gemini's implicit cache reads and writes, turn by turn, through Google ADK.

The workload of ``bench_provider_cache.py`` (the same turns, facts and head: each turn a user
message, a tool call, its result and an answer; two requests per turn) run through an ADK
``Runner`` against the Gemini cache simulator of ``tests/simulators``, three ways
(``tests/integrations/adk_cache.py``): with ``RunContextPlugin``; with ADK's own idiom of a
``static_instruction`` (the head) and a dynamic ``instruction`` (the facts); and with one
dynamic ``instruction`` holding both. Columns as in ``bench_provider_cache.py``; *readable* is
the prefix each runcontext request shares with the previous one (Gemini bills no cache write,
so the written share and the tail writes are 0 by the provider's rules).

    python benches/bench_cache_google_adk.py --turns 50
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "integrations"))

from adk_cache import MODEL, SETUPS, run  # noqa: E402
from bench_provider_cache import facts, head_text, summarise, turns  # noqa: E402


def measure(turn_count: int, head: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    readable: list[int] = []
    for setup in SETUPS:  # runcontext first: its shared prefixes are the readable tokens
        requests = run(setup, turns(turn_count), facts, head)
        usages = [(turn, usage) for turn, usage, _ in requests]
        if not readable:
            readable = [usage.shared for _, usage in usages]
        results[f"ADK {setup}" if setup == "runcontext" else setup] = summarise(usages, readable)
    return results


def report(results: dict[str, dict[str, float]]) -> None:
    columns = ("read/readable", "lowest", "written", "tail writes", "cost")
    widths = (13, 7, 8, 15, 6)
    print(f"{'series':24} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for label, row in results.items():
        print(
            f"{label:24} {row['read']:>13.1%} {row['lowest']:>7.1%} {row['written']:>8.1%} "
            f"{int(row['tail']):>8} / {int(row['requests']):<4} {row['cost']:>6.2f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns to simulate (default 50)")
    parser.add_argument("--head-kb", type=float, default=8.4, help="head size in KB (default 8.4)")
    args = parser.parse_args(argv)
    head = head_text(int(args.head_kb * 1024))
    print(
        f"{args.turns} turns, 2 requests each, through Google ADK; head "
        f"{len(head.encode()):,} B; model {MODEL} (Gemini implicit caching)\n"
    )
    report(measure(args.turns, head))
    return 0


def test_cache_google_adk_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "ADK runcontext" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
