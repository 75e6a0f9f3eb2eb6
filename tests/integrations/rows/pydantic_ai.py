"""Pydantic AI's ``RunContextCapability`` as contract rows: an ``Agent`` with the agent's own
``instructions``, the ``lookup`` tool and ``OpenAIChatModel`` on ``gpt-6-luna`` (with
``thinking=False``: OpenAI refuses tools over Chat Completions while reasoning is on), its memory
the message history of each conversation (``result.all_messages()``), run with ``run_sync``,
with ``await agent.run`` and streamed with ``agent.run_stream``.

``wire`` reads a request back into the form the transcript records (docs/INTEGRATIONS.md,
*Pydantic AI*): the head is the first system message; the agent's instructions the system
message after it; each user or tool message a request part, grouped as the framework groups
them; each assistant message a response; the tail the last message. Cache breakpoints are
markers for the cache, not content: a text part that carries one is read as its text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from contract import INSTRUCTIONS, LOOKUP_RESULT, Agent, Outcome, Row, Setup, Wire, text_of
from fakeserver import Recorded
from frameworks import require

MODEL = "gpt-6-luna"


class PydanticAgent:
    def __init__(self, setup: Setup, mode: str) -> None:
        require("pydantic_ai", "pydantic-ai")
        from pydantic_ai import Agent as PydanticAIAgent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        from runcontext.integrations.pydantic_ai import RunContextCapability

        self.mode = mode
        provider = OpenAIProvider(base_url=setup.server.url + "/v1", api_key="sk-fake")
        capability = RunContextCapability(
            setup.context, session=setup.session, budget=setup.budget, counter=setup.counter
        )
        self.agent: Any = PydanticAIAgent(
            OpenAIChatModel(MODEL, provider=provider),
            instructions=INSTRUCTIONS,
            capabilities=[capability],
            model_settings={"thinking": False},
        )

        @self.agent.tool_plain
        def lookup(ticket: str) -> str:
            """Look a ticket up."""
            return LOOKUP_RESULT

        self.histories: dict[str, list[Any]] = {}

    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        history = self.histories.get(conversation)
        result: Any
        if self.mode == "stream":
            result = asyncio.run(self._stream(question, history))
        elif self.mode == "async":
            result = asyncio.run(self.agent.run(question, message_history=history))
        else:
            result = self.agent.run_sync(question, message_history=history)
        self.histories[conversation] = result.all_messages()
        stored = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
        return Outcome(result, stored)

    async def _stream(self, question: str, history: Any) -> Any:
        async with self.agent.run_stream(question, message_history=history) as result:
            await result.get_output()
        return result


def _content(message: Mapping[str, Any]) -> Any:
    """A message's content with cache markers read away: a single text part is its text."""
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
        return content[0]["text"]
    return content


def _conversation(messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    recorded: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> tool name
    request: list[dict[str, Any]] | None = None
    for message in messages:
        role = message["role"]
        if role == "system":
            recorded.append(
                {"role": "system", "kind": "instructions", "content": _content(message)}
            )
            request = None
            continue
        if role == "assistant":
            parts: list[dict[str, Any]] = []
            if message.get("content"):
                parts.append({"part_kind": "text", "content": _content(message)})
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(
                    {
                        "part_kind": "tool-call",
                        "tool_name": call["function"]["name"],
                        "args": call["function"]["arguments"],
                        "tool_call_id": call["id"],
                    }
                )
            recorded.append({"role": "assistant", "kind": "response", "parts": parts})
            request = None
            continue
        if request is None:
            request = []
            recorded.append({"role": "user", "kind": "request", "parts": request})
        if role == "tool":
            request.append(
                {
                    "part_kind": "tool-return",
                    "tool_name": names[message["tool_call_id"]],
                    "content": _content(message),
                    "tool_call_id": message["tool_call_id"],
                }
            )
        else:
            request.append({"part_kind": "user-prompt", "content": _content(message)})
    return recorded


def wire(request: Recorded) -> Wire:
    head, *conversation, tail = request.json["messages"]
    return Wire(
        head=text_of(head["content"]) if head["role"] == "system" else None,
        conversation=_conversation(conversation),
        tail=text_of(tail["content"]) if tail["role"] == "system" else None,
        tail_last=True,
    )


def row(mode: str) -> Callable[[], Row]:
    def agent(setup: Setup) -> Agent:
        return PydanticAgent(setup, mode)

    seed = {"role": "system", "kind": "instructions", "content": INSTRUCTIONS}
    return lambda: Row(agent, wire, seed)


ROWS = {
    "pydantic-ai": row("sync"),
    "pydantic-ai-async": row("async"),
    "pydantic-ai-stream": row("stream"),
}
