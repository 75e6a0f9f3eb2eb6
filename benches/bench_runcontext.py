"""Build + render + digest of a typical RunContext .

Run by hand from the repository root: `python benches/bench_runcontext.py`. Compares the
Rust-backed RunContext with the pure-Python reference (tests/reference/) and with a plain
f-string rendering that neither validates nor digests, so the cost of correctness is visible.
`pytest benches/bench_runcontext.py --benchmark-only` times the same three side by side.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _timing import benchmark_call, fmt_time, median_seconds, print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from runcontext import RunContext

from reference.runcontext import CLOSING_TEXT
from reference.runcontext import RunContext as ReferenceRunContext

IDENTITY = ("You are a careful coding agent working in a monorepo. " * 4)[:200]
AGENTS_MD = "\n".join(
    f"- rule {i}: keep functions small and named for what they do." for i in range(140)
)[:8192]
TODO = "1. read the failing test\n2. fix the parser\n3. run the suite"


def facts(date: str) -> list[tuple[str, str]]:
    return [
        ("date", date),
        ("cwd", "/home/dev/work/monorepo/services/api"),
        ("platform", "linux (x86_64)"),
        ("git", "main @ 1a2b3c4"),
    ]


def build(date: str = "2026-11-30") -> RunContext:
    rc = RunContext(
        head_sections=[("identity", IDENTITY), ("agents", AGENTS_MD)],
        facts=facts(date),
        tail_sections=[("todo", TODO)],
    )
    rc.head_text, rc.tail_text, rc.digest  # noqa: B018 - the properties a request reads
    return rc


def build_reference(date: str = "2026-11-30") -> ReferenceRunContext:
    return ReferenceRunContext(
        head_sections=[("identity", IDENTITY), ("agents", AGENTS_MD)],
        facts=facts(date),
        tail_sections=[("todo", TODO)],
    )


def fstring(date: str = "2026-11-30") -> tuple[str, str]:
    head = f"{IDENTITY}\n\n{AGENTS_MD}"
    lines = "\n".join(f"- {name}: {value}" for name, value in facts(date))
    tail = f"## Current context\n\n{lines}\n\n{TODO}\n\n{CLOSING_TEXT}"
    return head, tail


# runcontext, then the anchors.
BUILDS = {
    "runcontext.RunContext": build,
    "reference RunContext (pure Python)": build_reference,
    "f-string, no validation, no digest": fstring,
}


def main() -> None:
    assert build().tail_text == build_reference().tail_text == fstring()[1]
    assert build().digest == build_reference().digest
    rows = [
        (name, median_seconds(fn, repeat=7 if fn is build_reference else 15))
        for name, fn in BUILDS.items()
    ]
    print(
        f"typical context: identity {len(IDENTITY)} B, AGENTS.md {len(AGENTS_MD)} B, "
        "4 facts, 1 tail section"
    )
    print_table(
        "build + render + digest, median per context", rows, baseline="runcontext.RunContext"
    )
    dates = [f"2026-11-30T08:{i // 60:02d}:{i % 60:02d}Z" for i in range(1000)]
    for label, fn in (("runcontext.RunContext", build), ("f-string", fstring)):
        samples = []
        for _ in range(7):
            start = time.perf_counter()
            for d in dates:
                fn(d)
            samples.append(time.perf_counter() - start)
        samples.sort()
        print(f"  1,000 contexts differing only in the date, {label:<24} {fmt_time(samples[3])}")


@pytest.mark.parametrize("implementation", BUILDS)
def test_runcontext(benchmark: Any, implementation: str) -> None:
    benchmark.group = "RunContext build + render + digest: 8 KB AGENTS.md, 4 facts"
    benchmark_call(
        benchmark,
        BUILDS[implementation],
        implementation=implementation,
        anchor=implementation != "runcontext.RunContext",
    )


if __name__ == "__main__":
    main()
