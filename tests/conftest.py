"""Shared test fixtures: where the vectors live, and hypothesis settings."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "docs" / "vectors"

# CI gets more examples than a quick local run; both are deterministic per seed.
settings.register_profile(
    "ci", max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=150, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
