"""The OpenAI Agents SDK as contract rows: ``RunContextFilter`` as the run's
``call_model_input_filter``, ``OpenAIResponsesModel`` with a model that takes cache breakpoints,
the conversation kept in an SDK ``SQLiteSession`` per conversation (a ``RunContextSession`` when
the row has a transcript), run with ``Runner.run_sync``, ``Runner.run`` and
``Runner.run_streamed``.

On the wire the head is ``instructions``, the agent's instructions the first input item, then
the conversation and the tail. The transcript records the input items as sent, but for the
breakpoint: the item that carries it is recorded without it, as the SDK held it (a string
content travels as one marked ``input_text`` part), which :func:`wire` undoes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from contract import INSTRUCTIONS, LOOKUP_RESULT, Agent, Outcome, Row, Setup, Wire, text_of
from fakeserver import Recorded
from frameworks import require

MODEL = "gpt-6-luna"


class AgentsSDKAgent:
    def __init__(self, setup: Setup, mode: str) -> None:
        require("agents", "openai-agents")
        from agents import RunConfig, SQLiteSession, function_tool

        from runcontext.integrations.openai_agents import RunContextFilter, RunContextSession

        @function_tool
        def lookup(ticket: str) -> str:
            """Look a ticket up."""
            return LOOKUP_RESULT

        self.setup = setup
        self.mode = mode
        self.lookup = lookup
        self.sessions: dict[str, Any] = {}
        transcript: Any = None
        if setup.session is not None:
            # The conversation the contract records: its SDK session also writes the transcript.
            transcript = RunContextSession(SQLiteSession("c1"), setup.session)
            self.sessions["c1"] = transcript
        self.filter = RunContextFilter(
            setup.context,
            session=transcript,
            counter=setup.counter,
            budget=setup.budget,
        )
        self.config = RunConfig(
            call_model_input_filter=self.filter, model_settings=self.filter.model_settings(MODEL)
        )

    def _agent(self) -> Any:
        # A client per run: an async client belongs to the event loop it first ran in.
        from agents import Agent as SDKAgent
        from agents import OpenAIResponsesModel
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=self.setup.server.url + "/v1", api_key="sk-fake", max_retries=0
        )
        model = OpenAIResponsesModel(model=MODEL, openai_client=client)
        return SDKAgent(name="helper", instructions=INSTRUCTIONS, model=model, tools=[self.lookup])

    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        from agents import Runner, SQLiteSession

        session = self.sessions.setdefault(conversation, SQLiteSession(conversation))
        agent = self._agent()
        result: Any
        if self.mode == "sync":
            result = Runner.run_sync(agent, question, session=session, run_config=self.config)
        elif self.mode == "async":
            result = asyncio.run(
                Runner.run(agent, question, session=session, run_config=self.config)
            )
        else:

            async def streamed() -> Any:
                run = Runner.run_streamed(agent, question, session=session, run_config=self.config)
                async for _ in run.stream_events():
                    pass
                return run

            result = asyncio.run(streamed())
        history = asyncio.run(session.get_items())
        return Outcome(result, history)


def _unmarked(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """The item as the SDK held it: a part marked with a breakpoint loses the marker, and a
    content (or a tool output) that is that one text part becomes the string it was."""
    for key in ("content", "output"):
        value = item.get(key)
        if not isinstance(value, list):
            continue
        parts = [
            {k: v for k, v in part.items() if k != "prompt_cache_breakpoint"}
            if isinstance(part, Mapping)
            else part
            for part in value
        ]
        if parts == value:
            continue
        if len(parts) == 1 and set(parts[0]) == {"type", "text"}:
            return {**item, key: parts[0]["text"]}
        return {**item, key: parts}
    return item


def wire(request: Recorded) -> Wire:
    body = request.json
    *conversation, tail = body["input"]
    return Wire(
        head=body.get("instructions"),
        conversation=[_unmarked(item) for item in conversation],
        tail=text_of(tail["content"]) if tail.get("role") == "developer" else None,
        tail_last=True,
    )


def row(mode: str) -> Callable[[], Row]:
    def agent(setup: Setup) -> Agent:
        return AgentsSDKAgent(setup, mode)

    return lambda: Row(agent, wire, {"role": "system", "content": INSTRUCTIONS})


ROWS = {
    "openai-agents": row("sync"),
    "openai-agents-async": row("async"),
    "openai-agents-streamed": row("streamed"),
}
