"""pytest configuration of the benchmark suite (`pytest benches --benchmark-only`).

Each ``bench_*.py`` script is both a program that prints interleaved ratio tables
(``python benches/bench_X.py``) and a module of pytest-benchmark tests (pyproject's
``python_files`` collects ``bench_*.py``; the default test run's ``testpaths`` is ``tests``
only, so ``python -m pytest`` never collects benches/). Under ``--benchmark-disable`` (CI's
``make bench-check``) every benchmark body runs once, untimed, so the suite cannot rot, and
:func:`quick` makes the large payloads small.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent
# The pure-Python reference (tests/reference/) is an anchor of bench_runcontext.py.
sys.path.insert(0, str(BENCHES.parent / "tests"))


def quick_run(config: pytest.Config) -> bool:
    """Whether this is a check run (``--benchmark-disable`` or RUNCONTEXT_BENCH_QUICK=1):
    small sizes, every body once."""
    return (
        bool(config.getoption("benchmark_disable"))
        or os.environ.get("RUNCONTEXT_BENCH_QUICK") == "1"
    )


@pytest.fixture(scope="session")
def quick(request: pytest.FixtureRequest) -> bool:
    """True in a check run: benchmarks with a size pick their small one."""
    return quick_run(request.config)
