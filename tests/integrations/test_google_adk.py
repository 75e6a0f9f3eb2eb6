"""Google ADK beyond the contract rows: ADK's static/dynamic instruction idiom beside the
plugin, the cache read against the Gemini simulator, the billed tokens in the transcript, the
documented example run twice, and the plugin's argument checks."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from frameworks import require

require("google.adk", "google-adk")

from adk_cache import run  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models import Gemini  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from runcontext import RunContext, Session  # noqa: E402
from runcontext.integrations.google_adk import RunContextPlugin  # noqa: E402

from contract import HEAD, Clock, builder  # noqa: E402
from fakeserver import FakeServer  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "INTEGRATIONS.md"


def ask(runner: Runner, sessions: InMemorySessionService, question: str) -> list[Any]:
    ids = {"app_name": runner.app_name, "user_id": "u", "session_id": "s"}
    if asyncio.run(sessions.get_session(**ids)) is None:
        asyncio.run(sessions.create_session(**ids))
    message = types.Content(role="user", parts=[types.Part(text=question)])
    return list(runner.run(user_id="u", session_id="s", new_message=message))


def runner_for(server: FakeServer, plugin: RunContextPlugin, **agent: Any) -> Runner:
    model = Gemini(model="gemini-3-flash", base_url=server.url, client_kwargs={"api_key": "k"})
    root = LlmAgent(name="agent", model=model, **agent)
    return Runner(
        app=App(name="app", root_agent=root, plugins=[plugin]),
        session_service=InMemorySessionService(),  # type: ignore[no-untyped-call]
    )


def test_static_and_dynamic_instructions_keep_the_head_first_and_the_tail_last(
    server: FakeServer, tmp_path: Path
) -> None:
    plugin = RunContextPlugin(builder(Clock()), session=str(tmp_path / "t.jsonl"))
    runner = runner_for(
        server,
        plugin,
        static_instruction=types.Content(role="user", parts=[types.Part(text="Be exact.")]),
        instruction="Today's ticket queue is {queue}.",
    )
    sessions = runner.session_service
    asyncio.run(
        sessions.create_session(app_name="app", user_id="u", session_id="s", state={"queue": "Q7"})
    )
    ask(runner, sessions, "Is T-1 open?")  # type: ignore[arg-type]
    body = server.requests[0].json
    system = [part["text"] for part in body["systemInstruction"]["parts"]]
    assert system[0] == HEAD  # the head first, then ADK's static instruction and identity
    assert system[1].startswith("Be exact.")
    contents = body["contents"]
    # ADK's dynamic instruction is a user content before the newest user message; the tail
    # is the last content, after it.
    assert "Today's ticket queue is Q7." in contents[0]["parts"][0]["text"]
    assert contents[1] == {"parts": [{"text": "Is T-1 open?"}], "role": "user"}
    assert contents[2]["role"] == "user" and "- build: 1" in contents[2]["parts"][0]["text"]
    assert len(contents) == 3
    session = plugin.session
    assert session is not None
    # Recorded as sent: the system parts after the head, then the contents before the tail.
    assert session.messages()[:3] == [
        {"role": "system", "parts": body["systemInstruction"]["parts"][1:]},
        *contents[:2],
    ]
    events = asyncio.run(sessions.get_session(app_name="app", user_id="u", session_id="s"))
    stored = json.dumps([event.model_dump(mode="json") for event in events.events])  # type: ignore[union-attr]
    assert "- build: " not in stored and "Today's ticket queue" not in stored


def test_the_cache_reads_the_shared_prefix_from_turn_2_and_nothing_at_the_tail() -> None:
    head = "\n".join(f"- rule {n}: keep the change small and say why." for n in range(220))
    turns = [
        (f"Question {n}: " + "why? " * 40, f"Answer {n}: " + "because. " * 60) for n in range(5)
    ]

    def facts(turn: int) -> list[tuple[str, str]]:
        return [("turn", str(turn)), ("clock", f"12:{turn:02d}")]

    requests = run("runcontext", turns, facts, head)
    assert len(requests) == 10  # a tool call and an answer per turn
    later = [(usage, body) for turn, usage, body in requests if turn >= 2]
    for usage, body in later:
        assert usage.shared > 2048  # above Gemini 2.5's minimum, so readable
        assert usage.read >= 0.95 * usage.shared
        assert usage.written == usage.written_in_last_message == 0
        tail = body["contents"][-1]
        assert tail["role"] == "user" and "- turn: " in tail["parts"][0]["text"]
    assert sum(u.read for u, _ in later) / sum(u.shared for u, _ in later) >= 0.95


def test_the_run_records_what_gemini_billed(server: FakeServer, tmp_path: Path) -> None:
    plugin = RunContextPlugin(
        RunContext(head_sections=[("identity", HEAD)], facts=[("branch", "main")]),
        session=str(tmp_path / "t.jsonl"),
        counter=len,
    )
    runner = runner_for(server, plugin, instruction="Answer briefly.")
    ask(runner, runner.session_service, "Hello?")  # type: ignore[arg-type]
    with Session.open(tmp_path / "t.jsonl") as session:
        (run_,) = session.runs()
        tokens = run_.tokens
    assert tokens is not None
    # The fake server's usageMetadata: 10 prompt tokens, 5 candidates tokens.
    assert tokens["billed"] == {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}


def test_the_documented_example_runs_twice(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = re.search(r"<!-- tested: google-adk -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert example is not None
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # created, then opened: never FileExistsError
        exec(compile(example.group(1), "INTEGRATIONS.md", "exec"), {"__name__": "__example__"})
    with Session.open(tmp_path / "agent.jsonl") as session:
        assert len(session.runs()) == 2
        assert [m["role"] for m in session.messages()] == [
            "system",
            "user",
            "model",
            "user",
            "model",
        ]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^context_or_builder: expected a runcontext\.RunContext"):
        RunContextPlugin("facts")
    with pytest.raises(
        TypeError,
        match=r"^session: expected a runcontext\.Session, a transcript path or a postgresql:// "
        r"URI, or None; got int",
    ):
        RunContextPlugin(RunContext(), session=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^budget: a budget needs a counter"):
        from runcontext.budget import Budget

        RunContextPlugin(RunContext(), budget=Budget(context_window=100))
