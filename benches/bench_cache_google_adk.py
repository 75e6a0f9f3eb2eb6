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

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "integrations"))

from adk_cache import MODEL, SETUPS, run  # noqa: E402
from bench_provider_cache import command, facts, summarise, turns  # noqa: E402


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


def main(argv: Sequence[str] | None = None) -> int:
    return command(
        argv,
        __doc__,
        f"through Google ADK; model {MODEL} (Gemini implicit caching)",
        measure,
        tail="tail writes",
    )


def test_cache_google_adk_runs(capsys: Any) -> None:
    assert main(["--turns", "3"]) == 0
    assert "ADK runcontext" in capsys.readouterr().out


if __name__ == "__main__":
    raise SystemExit(main())
