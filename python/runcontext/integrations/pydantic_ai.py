"""Pydantic AI: ``RunContextCapability`` for ``Agent(capabilities=[...])``.

Pydantic AI's extension API in the 2.x line is the *capability*
(``pydantic_ai.capabilities.AbstractCapability``). This one gives the head as the agent's
instructions (``get_instructions``; a static instruction part, so it stays in the cached
prefix) and adds the tail in ``wrap_model_request``, as a request-scoped ``SystemPromptPart``
on a *copy* of the request's last message (``dataclasses.replace``), in a new message list
handed to the handler. That list is the request's own: the run's history
(``ctx.messages``, ``result.all_messages()``) never sees the tail. ``before_model_request``
and history processors are not used: what they add is written back into the run's history.
The contract and the cache settings to choose are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        InstructionPart,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext as AgentRunContext
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("pydantic-ai", "pydantic-ai", error)

from runcontext._core import RunContext
from runcontext.integrations._turns import TurnContexts, check_session
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.session import Session

__all__ = ["RunContextCapability", "to_transcript_messages"]


# AbstractCapability is generic over the agent's deps type; this capability serves any agent.
class RunContextCapability(AbstractCapability[Any]):
    """Adds a :class:`runcontext.RunContext` to every model request of a Pydantic AI agent.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    agent run (``agent.run(...)`` is one turn; the context is keyed on ``ctx.run_id``), shared
    by every model request of the run's tool loop. ``session`` records each request's
    conversation (see :func:`to_transcript_messages`), context envelope and reply.
    """

    def __init__(self, context_or_builder: object, *, session: Session | None = None) -> None:
        self._turns = TurnContexts(context_or_builder)
        self._session = check_session(session)

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    def get_instructions(self) -> Any:
        fixed = self._turns.fixed
        if fixed is not None:
            return fixed.head_text
        return self._head

    async def _head(self, ctx: AgentRunContext[Any]) -> InstructionPart | None:
        head = (await self._turns.aget(ctx.run_id)).head_text
        # Not `dynamic`: the head is stable prose, and a static part is what the model
        # classes keep in the cached prefix.
        return None if head is None else InstructionPart(head, dynamic=False)

    async def wrap_model_request(
        self,
        ctx: AgentRunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: Any,
    ) -> ModelResponse:
        conversation = list(request_context.messages)
        messages = None
        if self._session is not None:
            # Before the model is called: a run the transcript cannot take is never paid for.
            messages = to_transcript_messages(conversation)
            await asyncio.to_thread(check_run, self._session, messages)
        context = await self._turns.aget(ctx.run_id)
        sent = request_context
        tail = context.tail_text
        if tail is not None:
            sent = dataclasses.replace(request_context, messages=_with_tail(conversation, tail))
        response: ModelResponse = await handler(sent)
        if self._session is not None:
            assert messages is not None
            await asyncio.to_thread(self._record, messages, context, sent, response)
        return response

    def _record(
        self,
        messages: list[dict[str, Any]],
        context: RunContext,
        sent: ModelRequestContext,
        response: ModelResponse,
    ) -> None:
        """Record the request; if the transcript refuses it, the error carries the reply
        (``RunNotRecordedError``)."""
        assert self._session is not None
        reply = None
        try:
            reply = to_transcript_messages([response])[0]
            self._session.record_run(messages, context, reply)
        except Exception as error:
            raise run_not_recorded(
                self._session,
                error,
                messages=messages,
                context=context,
                request=sent,
                reply=reply,
                response=response,
            ) from error


def _with_tail(messages: list[ModelMessage], tail: str) -> list[ModelMessage]:
    """The messages with the tail as a request-scoped system prompt at the end of the last
    request (a copy of it; the history's own message is left as it is)."""
    part = SystemPromptPart(tail, scope="request")
    if messages and isinstance(messages[-1], ModelRequest):
        last = messages[-1]
        return [*messages[:-1], dataclasses.replace(last, parts=[*last.parts, part])]
    return [*messages, ModelRequest(parts=[part])]


def to_transcript_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Pydantic AI messages as transcript messages: ``{"role", "kind", "parts"}``, the parts in
    their own JSON form (``ModelMessagesTypeAdapter``, ``mode="json"``), ``role`` ``"user"``
    for a request and ``"assistant"`` for a response (a transcript message needs a role).

    Only the parts, what the model is sent: the framework fills in a response's bookkeeping
    (``run_id``, ``model_id``, usage) after the model call, so the whole message would not read
    back the same from the run's history, and the conversation check would refuse the next
    request.
    """
    dumped = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    return [
        {
            "role": "user" if item["kind"] == "request" else "assistant",
            "kind": item["kind"],
            "parts": item["parts"],
        }
        for item in dumped
    ]
