"""Fixtures for the integration tests: the fake model server and the framework check.

Each framework's tests import it through :func:`require`, which skips the module only when
the framework is missing *and* ``CI`` is not set: in CI every extra is installed
(``make install-test``), and a missing one is a failure, never a skip.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakeserver import FakeServer


def require(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip(
            f"{module} is not installed (pip install 'runcontext[{extra}]')",
            allow_module_level=True,
        )


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every client in these tests is pointed at the fake server; keys are placeholders.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
