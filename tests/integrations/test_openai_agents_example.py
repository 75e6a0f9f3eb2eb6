"""The Agents SDK example of docs/INTEGRATIONS.md, run twice in one directory as a user runs a
script twice: the second run opens the transcript the first created and continues it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_docs import EXAMPLES

from runcontext import Session

from fakeserver import FakeServer
from frameworks import require


def test_the_example_runs_twice(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("agents", "openai-agents")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.chdir(tmp_path)
    code = compile(EXAMPLES["openai-agents"], "INTEGRATIONS.md:openai-agents", "exec")
    for _ in range(2):
        exec(code, {"__name__": "__example__"})
    first, second = server.bodies()
    for body in (first, second):
        assert body["prompt_cache_options"] == {"mode": "explicit"}
        assert body["input"][0] == {"role": "system", "content": "Answer briefly."}
    assert len(second["input"]) == len(first["input"]) + 2  # the first reply, the new question
    with Session.open(tmp_path / "agent.jsonl") as transcript:
        assert len(transcript.runs()) == 2
        messages = transcript.messages()
    assert messages[0] == {"role": "system", "content": "Answer briefly."}
    assert [m["content"] for m in messages if m.get("role") == "user"] == ["What changed?"] * 2
    assert "done" in json.dumps(messages[-1])  # the second run's reply, saved by the session
