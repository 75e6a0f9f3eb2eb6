"""The framework check of the integration tests.

Each framework's tests import their framework through :func:`require`, which skips the module
only when the framework is missing *and* ``CI`` is not set: in CI every extra is installed
(``make install-test``), and a missing one is a failure, never a skip.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


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
