"""The examples of docs/INTEGRATIONS.md marked ``<!-- tested: NAME -->`` run as written, with
the SDKs pointed at the fake server through their environment variables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakeserver import FakeServer
from frameworks import require

DOC = Path(__file__).resolve().parents[2] / "docs" / "INTEGRATIONS.md"
EXAMPLE = re.compile(r"<!-- tested: ([a-z-]+) -->\n```python\n(.*?)```", re.DOTALL)
EXAMPLES = dict(EXAMPLE.findall(DOC.read_text(encoding="utf-8")))
MODULES = {
    "langchain": "langchain.agents",
    "pydantic-ai": "pydantic_ai",
    "openai-agents": "agents",
    "google-adk": "google.adk",
}
HEAD = "You are a careful coding agent."


def test_every_framework_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(MODULES)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_example_runs(
    name: str, server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(MODULES[name], name)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.chdir(tmp_path)
    exec(compile(EXAMPLES[name], f"{DOC.name}:{name}", "exec"), {"__name__": "__example__"})
    bodies = server.bodies()
    assert bodies
    for body in bodies:
        sent = json.dumps(body)
        assert HEAD in sent
        last = (body.get("messages") or body.get("input") or body.get("contents"))[-1]
        assert "- branch: main" in json.dumps(last)
    if name == "langchain":
        assert all(body["prompt_cache_key"].startswith("rc-") for body in bodies)
    if name in ("langchain", "openai-agents", "google-adk"):
        assert (tmp_path / "agent.jsonl").exists()
