"""Google ADK as contract rows: an ``LlmAgent`` with ADK's own ``instruction`` and the tool
``lookup``, a ``Gemini`` model pointed at the fake server, one ``Runner`` (with an in-memory
ADK session service) serving every conversation, and ``RunContextPlugin`` among the runner's
plugins. ``google-adk`` calls ``Runner.run`` (generateContent); ``google-adk-async`` awaits
``Runner.run_async`` with server-sent-event streaming (streamGenerateContent).

ADK wraps an exception a plugin raises in ``RuntimeError``; a user who wants runcontext's own
error catches that and reads its ``__cause__``, as :meth:`AdkAgent.ask` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from contract import INSTRUCTIONS, LOOKUP_RESULT, Agent, Outcome, Row, Setup, Wire, text_of
from fakeserver import Recorded

APP, USER, NAME = "contract", "user", "agent"
# ADK adds the agent's identity to its instruction: the system instruction as ADK sends it.
SYSTEM = f'{INSTRUCTIONS}\n\nYou are an agent. Your internal name is "{NAME}".'


def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return LOOKUP_RESULT


class AdkAgent:
    def __init__(self, setup: Setup, asynchronous: bool) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.apps import App
        from google.adk.models import Gemini
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        from runcontext.integrations.google_adk import RunContextPlugin

        self.asynchronous = asynchronous
        self.plugin = RunContextPlugin(
            setup.context, session=setup.session, budget=setup.budget, counter=setup.counter
        )
        agent = LlmAgent(
            name=NAME,
            model=Gemini(
                model="gemini-2.5-flash",
                base_url=setup.server.url,
                client_kwargs={"api_key": "fake-key"},
            ),
            instruction=INSTRUCTIONS,
            tools=[lookup],
        )
        self.sessions = InMemorySessionService()  # type: ignore[no-untyped-call]
        app = App(name=APP, root_agent=agent, plugins=[self.plugin])
        self.runner = Runner(app=app, session_service=self.sessions)

    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        try:
            return self._ask(question, conversation)
        except RuntimeError as error:
            if str(error).startswith("Error in plugin 'runcontext'") and error.__cause__:
                raise error.__cause__  # noqa: B904 - the plugin's own error, as it was raised
            raise

    def _ask(self, question: str, conversation: str) -> Outcome:
        from google.adk.agents.run_config import RunConfig, StreamingMode
        from google.genai import types

        if asyncio.run(self._session(conversation)) is None:
            asyncio.run(
                self.sessions.create_session(app_name=APP, user_id=USER, session_id=conversation)
            )
        message = types.Content(role="user", parts=[types.Part(text=question)])
        if self.asynchronous:

            async def run() -> list[Any]:
                config = RunConfig(streaming_mode=StreamingMode.SSE)
                return [
                    event
                    async for event in self.runner.run_async(
                        user_id=USER,
                        session_id=conversation,
                        new_message=message,
                        run_config=config,
                    )
                ]

            events = asyncio.run(run())
        else:
            events = list(
                self.runner.run(user_id=USER, session_id=conversation, new_message=message)
            )
        session = asyncio.run(self._session(conversation))
        history = [event.model_dump(mode="json", exclude_none=True) for event in session.events]
        return Outcome(events, history)

    async def _session(self, conversation: str) -> Any:
        return await self.sessions.get_session(app_name=APP, user_id=USER, session_id=conversation)


def wire(request: Recorded) -> Wire:
    body = request.json
    head, *own = body["systemInstruction"]["parts"]
    *contents, tail = body["contents"]
    conversation: list[Mapping[str, Any]] = [{"role": "system", "parts": own}, *contents]
    return Wire(
        head=text_of([head]),
        conversation=conversation,
        tail=text_of(tail["parts"]) if tail["role"] == "user" and len(tail["parts"]) == 1 else None,
        tail_last=True,  # the tail is the last content: nothing follows it in the body
    )


def row(asynchronous: bool) -> Callable[[], Row]:
    def agent(setup: Setup) -> Agent:
        return AdkAgent(setup, asynchronous)

    return lambda: Row(agent, wire, {"role": "system", "parts": [{"text": SYSTEM}]})


ROWS = {"google-adk": row(asynchronous=False), "google-adk-async": row(asynchronous=True)}
