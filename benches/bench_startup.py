"""Start-up of a fresh process: `import runcontext`, `runcontext --version`, `runcontext show .`.

    python benches/bench_startup.py [--rounds N] [--instructions]

Each command runs as a whole process, the commands in turn within each round (so a noisy
neighbour slows them alike), against `python -c pass` in the same rounds: the difference of
the medians is what runcontext adds (the targets: ≤ 5 ms for the import, whole process ≤ 30 ms
for `--version` and ≤ 45 ms for `show .`). The real console script is run, the one pip
generated next to this interpreter. Children run with bytecode caching on (a
PYTHONDONTWRITEBYTECODE in the environment is dropped for them): an installed wheel has its
.pyc files, and without them every start compiles the package from source. One warm-up run
of each writes them. `--instructions` also counts each process's instructions under
callgrind (needs valgrind), which do not swing with the machine's load; under valgrind
`show` gets `--deadline 60`, so that no provider times out and takes another path.
`pytest benches/bench_startup.py --benchmark-only` times the same processes with
pytest-benchmark, each command in a group with `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from _timing import benchmark_call

REPOSITORY = Path(__file__).resolve().parents[1]
SCRIPT = str(Path(sys.executable).parent / "runcontext")
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

BASELINE = "python -c pass"
COMMANDS: dict[str, list[str]] = {
    BASELINE: [sys.executable, "-c", "pass"],
    "python -c 'import runcontext'": [sys.executable, "-c", "import runcontext"],
    "runcontext --version": [SCRIPT, "--version"],
    "runcontext show .": [SCRIPT, "show", str(REPOSITORY)],
}


def run(command: list[str]) -> None:
    subprocess.run(command, stdout=subprocess.DEVNULL, env=ENV, check=True)


def instructions(command: list[str]) -> int:
    """Instructions callgrind counts for the whole process (its children excluded)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=ENV,
            check=True,
        )
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert match, f"no totals in {out}"
        return int(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--instructions", action="store_true", help="also count instructions")
    args = parser.parse_args(argv)
    for command in COMMANDS.values():
        run(command)  # warm-up: writes the .pyc files
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            start = time.perf_counter()
            run(command)
            samples[name].append(time.perf_counter() - start)
    base = statistics.median(samples[BASELINE])
    print(f"whole process, median of {args.rounds} interleaved rounds (range in brackets)")
    for name, times in samples.items():
        median = statistics.median(times)
        print(
            f"  {name:<32} {median * 1e3:7.2f} ms  [{min(times) * 1e3:6.1f} … "
            f"{max(times) * 1e3:6.1f}]   {BASELINE} + {(median - base) * 1e3:6.2f} ms"
        )
    if args.instructions:
        print("\ninstructions (callgrind), whole process")
        counts = {}
        for name, command in COMMANDS.items():
            slow = [*command, "--deadline", "60"] if "show" in command else command
            counts[name] = instructions(slow)
        for name, count in counts.items():
            extra = count - counts[BASELINE]
            print(
                f"  {name:<32} {count:>13,}   {count / counts[BASELINE]:5.2f}× {BASELINE}"
                f"   + {extra:>12,}"
            )
    return 0


@pytest.mark.parametrize("implementation", ["runcontext", BASELINE])
@pytest.mark.parametrize("command", [name for name in COMMANDS if name != BASELINE])
def test_startup(benchmark: Any, command: str, implementation: str) -> None:
    benchmark.group = f"start-up, whole process: {command}"
    name = command if implementation == "runcontext" else BASELINE
    run(COMMANDS[name])  # warm-up: writes the .pyc files
    benchmark_call(
        benchmark,
        lambda: run(COMMANDS[name]),
        implementation=name,
        anchor=name == BASELINE,
    )


if __name__ == "__main__":
    raise SystemExit(main())
