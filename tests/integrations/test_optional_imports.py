"""Importing runcontext imports no framework, SDK or driver; an integration without its
framework says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "google.adk")
# SDKs, drivers and the optional packages the extras install.
OPTIONAL = (
    "openai",
    "anthropic",
    "google.genai",
    "psycopg",
    "psycopg_pool",
    "tiktoken",
    "opentelemetry",
    "pydantic",
)


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_runcontext_imports_no_framework_sdk_or_driver() -> None:
    code = (
        "import sys, runcontext, runcontext.integrations, runcontext.adapters\n"
        "for name in runcontext.__all__: getattr(runcontext, name)\n"
        "import runcontext.budget, runcontext.tokenizers, runcontext.keyed, runcontext.providers\n"
        f"print([m for m in {FRAMEWORKS + OPTIONAL!r} if m in sys.modules])\n"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("langchain", "langchain", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("google_adk", "google.adk", "google-adk"),
    ],
)
def test_missing_framework_names_the_extra(module: str, blocked: str, extra: str) -> None:
    # A None entry in sys.modules makes `import blocked` raise ImportError, as if it were absent.
    code = f"import sys; sys.modules[{blocked!r}] = None\nimport runcontext.integrations.{module}\n"
    result = run(code)
    assert result.returncode == 1
    assert f"ImportError: runcontext.integrations.{module} needs" in result.stderr
    assert f"pip install 'runcontext[{extra}]'" in result.stderr
