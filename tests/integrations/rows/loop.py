"""``Loop``, the hand-written loop, as the contract's first row: OpenAI Chat Completions through
the official SDK, the default adapter (``[head, *conversation, tail]``), the caller's own system
message first in the conversation, and the tool loop written out as a user writes it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from runcontext import Loop, RunContext, Session
from runcontext.adapters.replies import openai_chat_reply

from contract import INSTRUCTIONS, LOOKUP_RESULT, Agent, Outcome, Row, Setup, Wire, text_of
from fakeserver import Recorded

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a ticket up.",
            "parameters": {
                "type": "object",
                "properties": {"ticket": {"type": "string"}},
                "required": ["ticket"],
            },
        },
    }
]


class LoopAgent:
    def __init__(self, setup: Setup, asynchronous: bool) -> None:
        from openai import AsyncOpenAI, OpenAI

        self.setup = setup
        self.asynchronous = asynchronous
        url = setup.server.url + "/v1"
        self.client = OpenAI(base_url=url, api_key="sk-fake", max_retries=0)
        self.aclient = AsyncOpenAI(base_url=url, api_key="sk-fake", max_retries=0)
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.loop: Loop | None = None

    def _loop(self, messages: list[dict[str, Any]]) -> Loop:
        if self.loop is None:
            session = self.setup.session
            if isinstance(session, str):
                session = Session.open_or_create(session, messages)
            backend: Callable[[Any], Any]
            if self.asynchronous:
                backend = lambda body: self.aclient.chat.completions.create(  # noqa: E731
                    model="gpt-4.1", messages=body, tools=TOOLS
                )
            else:
                backend = lambda body: self.client.chat.completions.create(  # noqa: E731
                    model="gpt-4.1", messages=body, tools=TOOLS
                )
            self.loop = Loop(
                backend,
                session=session,
                counter=self.setup.counter,
                budget=self.setup.budget,
                reply=openai_chat_reply,
            )
        return self.loop

    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        messages = self.conversations.setdefault(
            conversation, [{"role": "system", "content": INSTRUCTIONS}]
        )
        messages.append({"role": "user", "content": question})
        context, _ = self.setup.context.build()  # one context for the whole agent turn
        while True:
            reply = self._run(messages, context)
            if not reply.get("tool_calls"):
                return Outcome(reply, list(messages))
            for call in reply["tool_calls"]:
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": LOOKUP_RESULT}
                )

    async def _arun(self, loop: Loop, messages: list[dict[str, Any]], context: RunContext) -> Any:
        from openai import AsyncOpenAI

        # An async client belongs to the event loop it first ran in: one per asyncio.run.
        url = self.setup.server.url + "/v1"
        self.aclient = AsyncOpenAI(base_url=url, api_key="sk-fake", max_retries=0)
        return await loop.arun(messages, context=context)

    def _run(self, messages: list[dict[str, Any]], context: RunContext) -> dict[str, Any]:
        loop = self._loop(messages)
        if self.asynchronous:
            outcome = asyncio.run(self._arun(loop, messages, context))
        else:
            outcome = loop.run(messages, context=context)
        messages[:] = outcome.messages
        return dict(outcome.reply)


def wire(request: Recorded) -> Wire:
    messages = request.json["messages"]
    head, *conversation, tail = messages
    return Wire(
        head=text_of(head["content"]) if head["role"] == "system" else None,
        conversation=conversation,
        tail=text_of(tail["content"]),
        tail_last=True,
    )


def row(asynchronous: bool) -> Callable[[], Row]:
    def agent(setup: Setup) -> Agent:
        return LoopAgent(setup, asynchronous)

    return lambda: Row(agent, wire, {"role": "system", "content": INSTRUCTIONS})


ROWS = {"loop": row(asynchronous=False), "loop-async": row(asynchronous=True)}
