"""Google ADK (Agent Development Kit): ``RunContextPlugin``, a plugin for an ADK ``Runner``.

Before each model call (``before_model_callback``) the plugin puts the head first in the
request's system instruction, where ADK keeps an agent's ``static_instruction`` and
``instruction``, and appends the tail as the last ``user`` content of that request's
``contents``. ADK builds ``contents`` afresh from the session's events for every model call, so
the tail is in no event and in no later request. One context serves every model call of an
ADK *invocation* (one ``Runner.run``: the user's message and the tool loop it starts); the
next invocation builds a new one.

With ``session=``, the call is counted and checked against the budget and the transcript
before the model is called, and the run is recorded when the model has answered
(``after_model_callback``). The contract, the recorded form and the caching notes are in
docs/INTEGRATIONS.md, *Google ADK*.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.flows.llm_flows.functions import remove_client_function_call_id
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import _common, _transformers, models, types
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("google-adk", "google-adk", error)

from runcontext._core import RunContext
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget
from runcontext.budget.meter import Meter
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import UnreadableUsageWarning, Usage, read_usage
from runcontext.integrations._turns import TurnContexts
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.session import Session
from runcontext.transcript.store import TranscriptStore

__all__ = ["SYSTEM_ROLE", "RunContextPlugin", "wire_content"]

SYSTEM_ROLE = "system"
"""The role the transcript gives the request's own system instruction (Gemini's
``systemInstruction`` has no role of its own; ADK sends it as ``user``)."""

SessionTarget = Session | str | os.PathLike[str] | TranscriptStore


def wire_content(content: types.Content | Mapping[str, Any]) -> dict[str, Any]:
    """A ``Content`` as google-genai puts it in a Gemini API request body: the SDK's own
    conversion (camelCase members, nested models as the SDK dumps them, bytes as URL-safe
    base64), so that the transcript holds what was sent."""
    converted = _common.convert_to_dict(models._Content_to_mldev(content))
    encoded: dict[str, Any] = _common.encode_unserializable_types(converted)
    return encoded


@dataclass(frozen=True)
class _Call:
    """One model call between its two callbacks."""

    messages: list[dict[str, Any]]  # the conversation as recorded: system message, contents
    context: RunContext
    count: RequestCount | None
    request: dict[str, Any]  # what went on the wire: system instruction and contents


class RunContextPlugin(BasePlugin):
    """Adds a :class:`runcontext.RunContext` to every model call of an ADK ``Runner``.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per ADK
    invocation. ``session`` (a :class:`runcontext.Session`, or a path or ``postgresql://`` URI
    opened or created on the first model call) records each call: the request's system
    instruction (after the head) and ``contents`` (before the tail) as sent, the context, the
    reply and the ``tokens`` record. ``counter`` (a ``Callable[[str], int]`` or a
    :class:`runcontext.budget.RequestCounter`) counts each call before it is sent and
    ``budget`` (a :class:`runcontext.budget.Budget`, or a mapping from model names to budgets
    with ``model=``) refuses one that does not fit, as :class:`runcontext.Loop` does;
    ``model`` names the model for the count and the budget (the request's own model
    otherwise).

    ADK wraps an exception a plugin raises in ``RuntimeError("Error in plugin 'runcontext'
    …")``: the runcontext error (``BudgetExceededError``, ``SeedMismatchError``,
    ``RunNotRecordedError`` …) is its ``__cause__``.
    """

    def __init__(
        self,
        context_or_builder: object,
        *,
        session: SessionTarget | None = None,
        counter: Callable[[str], int] | RequestCounter | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        model: str | None = None,
        name: str = "runcontext",
    ) -> None:
        super().__init__(name=name)
        self._turns = TurnContexts(context_or_builder)
        if session is not None and not isinstance(
            session, Session | str | os.PathLike | TranscriptStore
        ):
            raise TypeError(
                "session: expected a runcontext.Session, a transcript path or a "
                f"postgresql:// URI, or None; got {type(session).__name__}"
            )
        self._target: SessionTarget | None = session
        self._session: Session | None = session if isinstance(session, Session) else None
        self._meter = Meter(counter, budget, model=model, session=self._session)
        self._model = model
        self._calls: dict[tuple[str, str], _Call] = {}
        self._lock = threading.Lock()

    @property
    def session(self) -> Session | None:
        """The transcript, once opened (a path or URI is opened on the first model call)."""
        return self._session

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        context = await self._turns.aget(("adk", callback_context.invocation_id))
        config = llm_request.config
        own = _system_parts(config.system_instruction)
        messages: list[dict[str, Any]] = []
        if own:
            parts = wire_content(types.Content(parts=own))["parts"]
            messages.append({"role": SYSTEM_ROLE, "parts": parts})
        messages += [wire_content(content) for content in llm_request.contents]
        if self._session is None and self._target is not None:
            await asyncio.to_thread(self._open, messages)
        # Everything that could refuse the run, before the model is called.
        self._meter.model = self._model or llm_request.model or None
        self._meter.tools = _wire_tools(config.tools)
        count = self._meter.count(messages, context)
        self._meter.check(count, messages)
        if self._session is not None:
            await asyncio.to_thread(check_run, self._session, messages)
        head, tail = context.head_text, context.tail_text
        if head is not None:
            config.system_instruction = types.Content(parts=[types.Part(text=head), *own])
        if tail is not None:
            llm_request.contents.append(types.Content(role="user", parts=[types.Part(text=tail)]))
        request: dict[str, Any] = {"contents": [*messages[1 if own else 0 :]]}
        if config.system_instruction is not None:
            request["system_instruction"] = wire_content(
                _transformers.t_content(config.system_instruction)
            )
        if tail is not None:
            request["contents"].append(wire_content(llm_request.contents[-1]))
        with self._lock:
            self._calls[_key(callback_context)] = _Call(messages, context, count, request)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if llm_response.partial:
            return None  # a streamed chunk: the aggregated response follows
        with self._lock:
            call = self._calls.pop(_key(callback_context), None)
        if call is None:
            return None  # a response no request of this plugin's was sent for
        reply = None if llm_response.content is None else _sent_back(llm_response.content)
        usage = _usage(llm_response)
        if self._session is None:
            self._meter.settle(call.count, usage)
            return None
        try:
            tokens = self._meter.settle(call.count, usage)
            await asyncio.to_thread(
                self._session.record_run, call.messages, call.context, reply, tokens=tokens
            )
        except Exception as error:
            raise run_not_recorded(
                self._session,
                error,
                messages=call.messages,
                context=call.context,
                request=call.request,
                reply=reply,
                response=llm_response,
            ) from error
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        with self._lock:
            self._calls.pop(_key(callback_context), None)  # nothing was answered to record
        return None

    def _open(self, messages: list[dict[str, Any]]) -> None:
        with self._lock:
            if self._session is not None:
                return
            assert self._target is not None and not isinstance(self._target, Session)
            self._session = Session.open_or_create(self._target, messages)
            self._meter.session = self._session


def _sent_back(content: types.Content) -> dict[str, Any]:
    """The reply as ADK sends it back in the next request's ``contents``: without the ids ADK
    gives function calls on the client (``adk-…``, which it strips before sending)."""
    copy = content.model_copy(deep=True)
    remove_client_function_call_id(copy)
    return wire_content(copy)


def _key(callback_context: CallbackContext) -> tuple[str, str]:
    # The agents of one invocation (a ParallelAgent's run at once) each make their own calls.
    return (callback_context.invocation_id, callback_context.agent_name)


def _system_parts(instruction: object) -> list[types.Part]:
    """The parts of a request's system instruction (a string, a Content, a Part, a list)."""
    if instruction is None:
        return []
    content = _transformers.t_content(instruction)
    return list(content.parts or [])


def _wire_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [_common.convert_to_dict(tool) for tool in tools]


def _usage(response: LlmResponse) -> Usage | None:
    """What the model billed, or ``None`` (with a warning, as the loop gives) when the
    response carries none that can be read: the reply was paid for and is kept."""
    if response.usage_metadata is None:
        return None
    try:
        return read_usage(response)
    except (TypeError, ValueError) as error:
        warnings.warn(
            f"the model answered but its billed usage could not be read ({error}); the run is "
            "recorded without it, and the counter is not calibrated by it",
            UnreadableUsageWarning,
            stacklevel=2,
        )
        return None
