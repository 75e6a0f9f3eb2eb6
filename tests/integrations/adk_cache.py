"""A tool-using conversation through Google ADK against the Gemini cache simulator
(``tests/simulators``), for the cache test and ``benches/bench_cache_google_adk.py``.

Each turn is a user message, a ``run_tests`` tool call, the tool's result and the answer: two
model calls per turn, through an ADK ``Runner`` as a user runs it. The simulator applies
Gemini's implicit-cache rules to every request and reports the usage; this module makes its
answers follow the script (a function call, then the turn's answer text). Three setups:

- ``runcontext``: ``RunContextPlugin`` with a builder whose head is the instructions and whose
  facts change every turn;
- ``adk static+dynamic``: ADK's own idiom, ``static_instruction`` (the head) and a dynamic
  ``instruction`` (the facts), which ADK sends as a user content before the turn's newest
  user message;
- ``adk instruction``: one dynamic ``instruction`` with the head and the facts (the system
  instruction changes every turn).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from simulators.rules import Usage
from simulators.server import SimulatorServer

from runcontext import ContextBuilder, RunContext
from runcontext.integrations.google_adk import RunContextPlugin
from runcontext.providers import Contribution

MODEL = "gemini-2.5-flash"
SETUPS = ("runcontext", "adk static+dynamic", "adk instruction")
Facts = Callable[[int], list[tuple[str, str]]]


def result(turn: int) -> str:
    """The tool's output on ``turn`` (the workload's test-run summary)."""
    return f"{turn % 3} failed, {40 + turn} passed. " * 6


@dataclass
class ScriptedGemini(SimulatorServer):
    """The simulator, answering Gemini requests with the next scripted parts."""

    script: list[list[dict[str, Any]]] = field(default_factory=list)

    def answer(self, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, answer = super().answer(path, raw)
        if status == 200 and "candidates" in answer:
            answer["candidates"][0]["content"]["parts"] = self.script.pop(0)
        return status, answer


class TurnFacts:
    """The facts of the current turn (set by the run loop)."""

    name = "turn"
    revision = "turn/bench"

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.turn = 1

    def collect(self, deadline: float) -> Contribution:
        return Contribution(facts=self.facts(self.turn))


def run(
    setup: str, turns: Sequence[tuple[str, str]], facts: Facts, head: str
) -> list[tuple[int, Usage, dict[str, Any]]]:
    """Every request's (turn, simulated usage, body) for one setup."""
    current = TurnFacts(facts)

    def rendered(_: Any) -> str:
        return RunContext(facts=facts(current.turn)).tail_text or ""

    def run_tests(turn: int) -> str:
        """Run the test suite."""
        return result(turn)

    with ScriptedGemini() as server:
        model = Gemini(model=MODEL, base_url=server.url, client_kwargs={"api_key": "sim"})
        plugins: list[Any] = []
        if setup == "runcontext":
            builder = ContextBuilder([current], head_sections=[("instructions", head)])
            plugins.append(RunContextPlugin(builder))
            agent = LlmAgent(name="coder", model=model, tools=[run_tests])
        elif setup == "adk static+dynamic":
            agent = LlmAgent(
                name="coder",
                model=model,
                static_instruction=types.Content(role="user", parts=[types.Part(text=head)]),
                instruction=rendered,
                tools=[run_tests],
            )
        elif setup == "adk instruction":
            agent = LlmAgent(
                name="coder",
                model=model,
                instruction=lambda context: head + "\n\n" + rendered(context),
                tools=[run_tests],
            )
        else:
            raise ValueError(f"setup: expected one of {SETUPS}, got {setup!r}")
        sessions = InMemorySessionService()  # type: ignore[no-untyped-call]
        runner = Runner(
            app=App(name="bench", root_agent=agent, plugins=plugins), session_service=sessions
        )
        asyncio.run(sessions.create_session(app_name="bench", user_id="u", session_id="s"))
        out: list[tuple[int, Usage, dict[str, Any]]] = []
        for turn, (question, answer) in enumerate(turns, start=1):
            current.turn = turn
            server.script += [
                [{"functionCall": {"name": "run_tests", "args": {"turn": turn}}}],
                [{"text": answer}],
            ]
            message = types.Content(role="user", parts=[types.Part(text=question)])
            for _ in runner.run(user_id="u", session_id="s", new_message=message):
                pass
            exchanges = server.exchanges[-2:]
            out += [(turn, e.usage, e.json) for e in exchanges if e.usage is not None]
        return out
