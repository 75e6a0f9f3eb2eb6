"""Benchmark ContextBuilder: the default providers here, and the builder's own overhead.

    python benches/bench_builder.py [--runs N] [DIR]

Prints medians (and p90) in milliseconds:
- ``build()`` of the default providers (clock, cwd, platform, git, instructions) for DIR,
  default this repository (the target: median under 5 ms), and for a scratch repository
  whose AGENTS.md fills the 32 KiB instructions budget;
- ``build()`` and ``abuild()`` with 20 trivial providers, against calling the same 20
  ``collect()`` methods in a loop: the difference is what the builder itself costs (worker
  hand-off, checks, redaction, RunContext);
- ``redact()`` over 32 KiB (the instructions budget) of ordinary text, of text dense with
  the assignment key words, and of ``password=`` repeated (the worst shape for the
  assignment scan).

`pytest benches/bench_builder.py --benchmark-only` times the builds with pytest-benchmark
(20 trivial providers beside calling their collect() in a loop, the anchor); redaction is
timed in bench_redact.py.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runcontext.providers import Contribution, default_providers
from runcontext.providers.builder import ContextBuilder
from runcontext.providers.redact import redact

from _timing import benchmark_call

REPOSITORY = Path(__file__).resolve().parents[1]


class Trivial:
    revision = "trivial/1"

    def __init__(self, index: int) -> None:
        self.name = f"trivial-{index}"
        self._contribution = Contribution(facts=[(self.name, "value")])

    def collect(self, deadline: float) -> Contribution:
        return self._contribution


def measure(function: Callable[[], object], runs: int) -> tuple[float, float]:
    for _ in range(max(runs // 10, 5)):  # warm up: worker threads, caches
        function()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.9)] * 1000


def report(label: str, figures: tuple[float, float]) -> None:
    median, p90 = figures
    print(f"{label:<52} median {median:8.3f} ms   p90 {p90:8.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()

    builder = ContextBuilder(default_providers(args.directory))
    context, diagnostics = builder.build()
    print(
        f"default providers in {args.directory}: {len(context.facts)} facts, "
        f"{len(context.sections)} sections, {len(diagnostics)} diagnostics"
    )
    default = measure(builder.build, args.runs)
    report("build(), default providers", default)
    print(f"  target < 5 ms median: {'met' if default[0] < 5 else 'NOT met'}")

    with tempfile.TemporaryDirectory() as scratch:
        # The worst case the instructions budget allows: a 32 KiB AGENTS.md to read, check
        # and redact on every build.
        (Path(scratch) / ".git").mkdir()
        (Path(scratch) / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        line = "Run `make test` before each commit; keep the public API typed and documented.\n"
        (Path(scratch) / "AGENTS.md").write_text((line * 500)[:32000])
        full = ContextBuilder(default_providers(scratch))
        report("build(), default providers, 32 KiB AGENTS.md", measure(full.build, args.runs))

    trivial = [Trivial(index) for index in range(20)]
    twenty = ContextBuilder(trivial)
    direct = measure(lambda: [provider.collect(0.0) for provider in trivial], args.runs)
    built = measure(twenty.build, args.runs)
    report("20 trivial providers: collect() in a loop", direct)
    report("20 trivial providers: build()", built)
    print(
        f"  builder overhead: {built[0] - direct[0]:.3f} ms per build, "
        f"{(built[0] - direct[0]) / 20 * 1000:.1f} µs per provider"
    )

    loop = asyncio.new_event_loop()
    try:
        abuilt = measure(lambda: loop.run_until_complete(twenty.abuild()), args.runs)
    finally:
        loop.close()
    report("20 trivial providers: abuild() (incl. run_until_complete)", abuilt)

    text = ("Use `make test`; commit hashes like 0123456789abcdef0123 are fine.\n" * 500)[:32768]
    report("redact() of 32 KiB without secrets", measure(lambda: redact(text), args.runs))
    # Key words make the assignment scan look at every one of them: the common case for
    # an AGENTS.md that talks about credentials without holding any.
    worded = (
        "Read the api_key from $OPENAI_API_KEY; never commit a password or secret. "
        "The token: see docs. password: must be 12 characters. secret_key = <set me>\n" * 300
    )[:32768]
    report("redact() of 32 KiB dense with key words", measure(lambda: redact(worded), args.runs))
    hostile = "password=" * (32768 // 9)  # a key word and an operator every 9 characters
    report("redact() of 32 KiB of 'password='", measure(lambda: redact(hostile), args.runs))


def test_default_providers(benchmark: Any) -> None:
    benchmark.group = "ContextBuilder.build(): default providers, this repository"
    builder = ContextBuilder(default_providers(REPOSITORY))
    benchmark_call(benchmark, builder.build, implementation="ContextBuilder.build()", anchor=False)


TWENTY = [Trivial(index) for index in range(20)]


@pytest.mark.parametrize("implementation", ["build()", "abuild()", "collect() in a loop"])
def test_trivial_providers(benchmark: Any, implementation: str) -> None:
    benchmark.group = "ContextBuilder: 20 trivial providers"
    builder = ContextBuilder(TWENTY)
    loop = asyncio.new_event_loop()
    calls: dict[str, Callable[[], object]] = {
        "build()": builder.build,
        "abuild()": lambda: loop.run_until_complete(builder.abuild()),
        "collect() in a loop": lambda: [provider.collect(0.0) for provider in TWENTY],
    }
    try:
        benchmark_call(
            benchmark,
            calls[implementation],
            implementation=implementation,
            anchor=implementation == "collect() in a loop",
        )
    finally:
        loop.close()


if __name__ == "__main__":
    main()
