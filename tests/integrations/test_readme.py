"""README.md's code runs as written: its Python blocks in order, in one namespace, with the
official SDKs pointed at the fake model server through their environment variables, and its
``>>>`` examples raise exactly the errors shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import runcontext
from runcontext import RunContext

from fakeserver import FakeServer

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.DOTALL)
SESSIONS = re.findall(r"```\n(>>> .*?)```", TEXT, re.DOTALL)


def test_the_python_blocks_run_in_order(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(BLOCKS) >= 4
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.chdir(tmp_path)
    for _ in range(len(BLOCKS)):
        server.text("Done.")
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for number, block in enumerate(BLOCKS, 1):
        exec(compile(block, f"README.md block {number}", "exec"), namespace)
    paths = [recorded.path for recorded in server.requests]
    assert paths == ["/v1/chat/completions", "/v1/messages", "/v1/chat/completions"]
    last = server.bodies()[-1]["messages"]
    assert last[0]["content"] == "Be careful." and "- date: 2026-11-30" in last[-1]["content"]
    assert (tmp_path / "agent.jsonl").exists()
    assert namespace["messages"][-1] == {"role": "assistant", "content": "Done."}  # type: ignore[index]


def test_the_error_examples_are_what_runcontext_raises() -> None:
    assert SESSIONS
    for session in SESSIONS:
        lines = session.strip().splitlines()
        for prompt, shown in zip(lines[::2], lines[1::2], strict=True):
            expression = prompt.removeprefix(">>> ")
            with pytest.raises(Exception) as info:
                eval(expression, {"runcontext": runcontext, "RunContext": RunContext})
            assert f"{type(info.value).__name__}: {info.value}" == shown
