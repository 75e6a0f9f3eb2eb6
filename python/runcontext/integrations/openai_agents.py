"""OpenAI Agents SDK: ``RunContextFilter`` (a ``RunConfig.call_model_input_filter``) and
``RunContextSession`` (a ``Session`` that also writes the runcontext transcript).

The filter receives a copy of each model call's input (``ModelInputData``): it puts the head
before the agent's ``instructions`` and appends the tail as a ``developer`` message after the
input items, as :func:`runcontext.adapters.openai_responses` does. What it returns is sent to
the model and nothing else: the SDK's ``Session`` stores the run's own items, never the
filter's output. The contract and the server-managed trap are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

try:
    from agents.memory import OpenAIConversationsSession
    from agents.run_config import CallModelData, ModelInputData
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("openai-agents", "openai-agents", error)

from runcontext._core import RunContext
from runcontext.integrations._turns import TurnContexts, check_session, user_turn_key
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.session import Session

__all__ = ["RunContextFilter", "RunContextSession", "ServerManagedConversationError"]

# Responses input items that call a tool, and those that answer a call by its call_id.
_TOOL_CALLS = frozenset({"function_call", "custom_tool_call", "computer_call", "local_shell_call"})
_TOOL_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
    }
)


class ServerManagedConversationError(ValueError):
    """The model input is a server-managed conversation (``previous_response_id``,
    ``conversation_id``, ``auto_previous_response_id``, an ``OpenAIConversationsSession``).

    The server stores every input item it is sent, so each turn's tail would be written into
    the stored conversation and replayed, stale facts included. Send the whole conversation
    instead (a client-side ``Session`` such as ``SQLiteSession``, or ``result.to_input_list()``).
    """


class RunContextFilter:
    """A ``call_model_input_filter`` that adds a :class:`runcontext.RunContext` to each call.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    agent turn: a turn is keyed on the last ``user`` item of the input (its position and
    digest) and on the run's context object, so the calls of one turn's tool loop share one
    context. ``session`` (a ``runcontext.Session``, or the ``RunContextSession`` whose transcript
    to use) records each model call's input and context envelope.
    """

    def __init__(
        self, context_or_builder: object, *, session: Session | RunContextSession | None = None
    ) -> None:
        self._turns = TurnContexts(context_or_builder)
        self._agents_session = session if isinstance(session, RunContextSession) else None
        if isinstance(session, RunContextSession):
            session = session.transcript
        self._session = check_session(session)

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    # The SDK awaits an awaitable result, so one async filter serves Runner.run,
    # Runner.run_sync and Runner.run_streamed alike.
    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = data.model_data.input
        _check_client_managed(items)
        scope = None if data.context is None else id(data.context)
        context = await self._turns.aget(user_turn_key(_mappings(items), scope))
        if self._session is not None:
            await asyncio.to_thread(self._record, list(items), context)
        if self._agents_session is not None:
            self._agents_session._context = context
        head, tail = context.head_text, context.tail_text
        instructions = data.model_data.instructions
        if head is not None:
            instructions = head if not instructions else f"{head}\n\n{instructions}"
        sent = list(items)
        if tail is not None:
            sent.append({"role": "developer", "content": tail})
        return ModelInputData(input=sent, instructions=instructions)

    def _record(self, items: list[Any], context: RunContext) -> None:
        # Before the model is called (a filter sees no reply): the same checks as every
        # integration, then the input and the envelope are written.
        assert self._session is not None
        check_run(self._session, items)
        self._session.record_run(items, context)


class RunContextSession:
    """An SDK ``Session`` that stores items in ``inner_session`` and in ``transcript`` too.

    The SDK saves each turn's input and generated items to its session; this one forwards
    them to ``inner_session`` and appends to the runcontext ``transcript`` the items it does not
    hold yet (the last reply of a turn, which no model call's input shows). With
    ``RunContextFilter(..., session=this)`` the transcript also gets each model call's context
    envelope, so ``runcontext log`` answers what the agent was told.
    """

    def __init__(self, inner_session: Any, transcript: Session) -> None:
        if isinstance(inner_session, OpenAIConversationsSession):
            raise ServerManagedConversationError(
                "inner_session: an OpenAIConversationsSession keeps the conversation on the "
                "server, which would store every turn's runcontext tail; use a client-side "
                "session such as agents.SQLiteSession"
            )
        checked = check_session(transcript)
        if checked is None:
            raise TypeError("transcript: expected a runcontext.Session, got None")
        self.inner = inner_session
        self.transcript = checked
        self.session_id: str = inner_session.session_id
        self.session_settings: Any = getattr(inner_session, "session_settings", None)
        # The context of the last model call, set by a RunContextFilter given this session.
        self._context: RunContext | None = None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self.inner.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        # A transcript that cannot take an append refuses before the SDK's session changes.
        await asyncio.to_thread(self.transcript.check_appendable)
        await self.inner.add_items(items)
        stored = await self.inner.get_items()
        await asyncio.to_thread(self._append_new, stored, items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()

    def _append_new(self, stored: Sequence[Any], items: list[Any]) -> None:
        # The transcript is append-only: items the SDK pops or clears stay recorded, and a
        # conversation that no longer continues the transcript is refused by record_run.
        recorded = self.transcript.message_count
        if len(stored) <= recorded:
            return
        try:
            self.transcript.append_messages(list(stored[recorded:]))
        except Exception as error:
            # The items are in the inner session; the error carries them too, the last (the
            # turn's reply, when the SDK saves a turn's output) as the outcome's reply.
            reply = stored[-1] if isinstance(stored[-1], Mapping) else None
            raise run_not_recorded(
                self.transcript,
                error,
                messages=list(stored if reply is None else stored[:-1]),
                context=self._context or RunContext(),
                request=None,
                reply=reply,
                response=items,
            ) from error


def _mappings(items: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [item if isinstance(item, Mapping) else {} for item in items]


def _check_client_managed(items: Sequence[Any]) -> None:
    """Refuse an input that only continues a conversation stored on the server.

    ``CallModelData`` does not say whether the run uses ``previous_response_id`` or a
    conversation id; what shows is that such a run sends only the new items, so a tool's
    output arrives without the call it answers (a stateless request that did that would be
    refused by the API).
    """
    calls: set[Hashable] = set()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in _TOOL_CALLS:
            calls.add(item.get("call_id"))
        elif kind in _TOOL_OUTPUTS and item.get("call_id") not in calls:
            raise ServerManagedConversationError(
                f"the model input has a {kind} for call {item.get('call_id')!r} without the "
                "call itself: the conversation is stored on the server "
                "(previous_response_id, conversation_id or auto_previous_response_id), "
                "which would store every turn's runcontext tail; run without them and pass "
                "the whole conversation (a client-side Session, or result.to_input_list())"
            )
