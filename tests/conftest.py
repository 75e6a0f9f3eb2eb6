"""Shared test fixtures: where the vectors live, and hypothesis settings."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "docs" / "vectors"

# CI (any non-empty CI variable; .ci/run sets it) runs more examples, derandomized: every CI
# run tries the same examples, so a failure reproduces by rerunning and a green run stays
# green. The dev profile draws fresh random examples each run (and replays saved failures
# from .hypothesis/), which is where new counterexamples are found.
settings.register_profile(
    "ci",
    max_examples=600,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=150, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
