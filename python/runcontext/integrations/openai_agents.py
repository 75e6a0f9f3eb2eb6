"""OpenAI Agents SDK: ``RunContextFilter`` (a ``RunConfig.call_model_input_filter``) and
``RunContextSession`` (a ``Session`` that also writes the runcontext transcript).

The filter receives a copy of each model call's input (``ModelInputData``) and returns the
request :func:`runcontext.adapters.openai_responses` makes of it: the head as
``instructions``, the agent's own instructions as the first input item (a ``system``
message), the conversation, and the tail as a final ``developer`` message (``tail_role=``);
on the models that take them (GPT-5.6 and later), an explicit ``prompt_cache_breakpoint`` on
the last conversation part that can carry one. What it returns is sent to the model and
nothing else: the SDK's ``Session`` stores the run's own items, never the filter's output. The
contract, the transcript's form and the server-managed trap are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

try:
    from agents import Agent, FunctionTool
    from agents import tracing as _tracing
    from agents.memory import OpenAIConversationsSession, OpenAIResponsesCompactionSession
    from agents.model_settings import ModelSettings
    from agents.models.default_models import get_default_model
    from agents.models.fake_id import FAKE_RESPONSES_ID
    from agents.run_config import CallModelData, ModelInputData
    from agents.run_internal import agent_tool_configuration as _sdk_run
    from openai.types.responses.response_create_params import PromptCacheOptions
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("openai-agents", "openai-agents", error)

from runcontext._checks import check_messages
from runcontext._core import RunContext
from runcontext.adapters._common import check_choice
from runcontext.adapters.openai import (
    OPENAI_RESPONSES_TAIL_ROLE,
    OPENAI_RESPONSES_TAIL_ROLES,
    _cache_choice,
    openai_responses,
)
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget
from runcontext.budget.meter import Meter
from runcontext.budget.request_count import RequestCount
from runcontext.integrations._turns import TurnContexts, check_session
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.session import Session, message_body

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
# The role of the agent's own instructions in the input: the role the SDK gives them when it
# turns them into a Chat Completions message, accepted by both APIs.
_INSTRUCTIONS_ROLE = "system"

Target = str | os.PathLike[str]
"""A transcript named by a path or a ``postgresql://`` URI, opened or created on first use."""


class ServerManagedConversationError(ValueError):
    """The model input is a server-managed conversation (``previous_response_id``,
    ``conversation_id``, ``auto_previous_response_id``, an ``OpenAIConversationsSession``).

    The server stores every input item it is sent, so each turn's tail would be written into
    the stored conversation and replayed, stale facts included. Send the whole conversation
    instead (a client-side ``Session`` such as ``SQLiteSession``, or ``result.to_input_list()``).
    """


class _Transcript:
    """The runcontext transcript of one conversation: a ``Session``, or a path or URI opened
    (or created) with the conversation of the first request that needs it."""

    def __init__(self, target: object, argument: str) -> None:
        self.session: Session | None = None
        self.target: Target | None = None
        if isinstance(target, str | os.PathLike):
            self.target = target
        else:
            self.session = check_session(target)
            if self.session is None:
                raise TypeError(
                    f"{argument}: expected a runcontext.Session, a path or a postgresql:// "
                    f"URI, got {type(target).__name__}"
                )
        self._lock = threading.Lock()

    def open(self, messages: Sequence[Mapping[str, Any]]) -> Session:
        with self._lock:
            if self.session is None:
                assert self.target is not None
                self.session = Session.open_or_create(self.target, messages)
            return self.session


class RunContextFilter:
    """A ``call_model_input_filter`` that adds a :class:`runcontext.RunContext` to each call.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    SDK run (each ``Runner.run``, ``run_sync`` or ``run_streamed``): every model call of the
    run's tool loop gets the same context, and the next run a new one. ``session`` (a
    ``runcontext.Session``, a path or ``postgresql://`` URI opened or created on the first
    request, or the ``RunContextSession`` whose transcript to use) records each model call's
    conversation and context envelope before the call.

    ``counter`` and ``budget`` count every request and refuse one over budget before it is
    sent (:class:`runcontext.budget.BudgetExceededError`), as :class:`runcontext.Loop` does.
    ``model`` names the model when the agent does not (a ``RunConfig(model=...)``): it picks
    the budget from a mapping, the count's tokenizer calibration, and whether the request
    carries a cache breakpoint. ``cache`` (``"explicit"``, ``"implicit"`` or ``"off"``) and
    ``ttl`` are :func:`runcontext.adapters.openai_responses`'s; by default a breakpoint is
    placed on the models from GPT-5.6 on, and :meth:`model_settings` gives the
    ``prompt_cache_options`` that go with it. ``tail_role`` is the tail message's role
    (``"developer"``, ``"system"`` or ``"user"``: ``"user"`` behind a gateway that moves
    instruction messages to the front; docs/PLACEMENT.md, *The tail's role*).
    """

    def __init__(
        self,
        context_or_builder: object,
        *,
        session: Session | RunContextSession | Target | None = None,
        counter: Callable[[str], int] | RequestCounter | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        model: str | None = None,
        cache: str | None = None,
        ttl: str | None = None,
        tail_role: str = OPENAI_RESPONSES_TAIL_ROLE,
    ) -> None:
        check_choice("tail_role", tail_role, OPENAI_RESPONSES_TAIL_ROLES)
        self._tail_role = tail_role
        self._turns = TurnContexts(context_or_builder)
        self._agents_session: RunContextSession | None = None
        self._transcript: _Transcript | None = None
        if isinstance(session, RunContextSession):
            self._agents_session = session
            self._transcript = session._transcript
            session._bound = True
        elif session is not None:
            self._transcript = _Transcript(session, "session")
        if model is not None and (not isinstance(model, str) or not model):
            raise TypeError(f"model: expected a non-empty model name, got {model!r}")
        _cache_choice(model, cache, False, ttl)  # checks cache and ttl now, not at a request
        self._model = model
        self._cache = cache
        self._ttl = ttl
        self._meter = Meter(counter, budget, model=model)

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    @property
    def session(self) -> Session | None:
        """The transcript the filter records to, once it is open."""
        return None if self._transcript is None else self._transcript.session

    def model_settings(self, model: str | Agent[Any] | None = None) -> ModelSettings:
        """The ``ModelSettings`` that go with the filter's breakpoints: ``prompt_cache_options``
        ``{"mode": ...}`` on the models that take them, empty settings on the others.

        ``model`` is the model's name or the agent (its model's name); without it, the filter's
        ``model=``, else the SDK's default model. By default the mode is ``"explicit"`` from
        GPT-5.6 on, so a request writes only the breakpoint the filter places. Pass the result
        as ``RunConfig(model_settings=...)`` or an agent's ``model_settings``: a filter cannot
        set request options itself.
        """
        if isinstance(model, Agent):
            model = _model_name(model.model)
        mode, _ = _cache_choice(
            model or self._model or get_default_model(), self._cache, False, self._ttl
        )
        if mode == "off":
            return ModelSettings()
        return ModelSettings(prompt_cache_options=cast(PromptCacheOptions, {"mode": mode}))

    # The SDK awaits an awaitable result, so one async filter serves Runner.run,
    # Runner.run_sync and Runner.run_streamed alike.
    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        _check_client_managed(items)
        context = await self._turns.aget(_run_key())
        instructions = data.model_data.instructions
        prefix: list[Mapping[str, Any]] = (
            [{"role": _INSTRUCTIONS_ROLE, "content": instructions}] if instructions else []
        )
        model = self._model or _model_name(data.agent.model)
        request = openai_responses(
            [*prefix, *items],
            context,
            tail_role=self._tail_role,
            model=model,
            cache=self._cache,
            ttl=self._ttl,
        )
        conversation: list[Mapping[str, Any]] = [*prefix, *map(_as_sent, items)]
        self._meter.tools = _declarations(data.agent)
        count = self._meter.count(conversation, context)
        if self._transcript is not None:
            await asyncio.to_thread(self._record, conversation, context, count)
        else:
            self._meter.check(count, conversation)  # before anything is sent
            self._meter.settle(count, None)
        if self._agents_session is not None:
            self._agents_session._context = context
            self._agents_session._prefix = prefix
        return ModelInputData(input=request["input"], instructions=request.get("instructions"))

    def _record(
        self,
        conversation: list[Mapping[str, Any]],
        context: RunContext,
        count: RequestCount | None,
    ) -> None:
        # Before the model is called (a filter sees no reply): the same checks as every
        # integration, then the conversation, the envelope and the count are written.
        assert self._transcript is not None
        session = self._transcript.open(conversation)
        # The budget counts what the transcript already records (a resumed session), before
        # anything is written or sent.
        self._meter.session = session
        self._meter.check(count, conversation)
        # The whole conversation is compared with the recorded one: an edit anywhere in it is
        # recorded (a compaction or an elision, in the same append as the run) or refused,
        # before the model is called.
        session.check_appendable()
        session.check_seed(conversation)
        check_run(session, conversation, edits="record")
        tokens = self._meter.settle(count, None)
        session.record_run(conversation, context, tokens=tokens, edits="record")


class RunContextSession:
    """An SDK ``Session`` that stores items in ``inner_session`` and in ``transcript`` too.

    The SDK saves each turn's input and generated items to its session; this one forwards
    them to ``inner_session`` and appends to the runcontext ``transcript`` (a
    ``runcontext.Session``, or a path or ``postgresql://`` URI opened or created on first use)
    the items it does not hold yet: the last reply of a turn, which no model call's input shows.
    With ``RunContextFilter(..., session=this)`` the transcript also gets each model call's
    conversation (the agent's instructions first) and context envelope, so ``runcontext log``
    answers what the agent was told.
    """

    def __init__(self, inner_session: Any, transcript: Session | Target) -> None:
        if isinstance(inner_session, OpenAIConversationsSession):
            raise ServerManagedConversationError(
                "inner_session: an OpenAIConversationsSession keeps the conversation on the "
                "server, which would store every turn's runcontext tail; use a client-side "
                "session such as agents.SQLiteSession"
            )
        if (
            isinstance(inner_session, OpenAIResponsesCompactionSession)
            and inner_session.compaction_mode == "previous_response_id"
        ):
            raise ServerManagedConversationError(
                "inner_session: an OpenAIResponsesCompactionSession with "
                "compaction_mode='previous_response_id' summarises the conversation the "
                "server stored, which holds every turn's runcontext head and tail; use "
                "compaction_mode='input' (or 'auto', which this session runs as 'input')"
            )
        self._transcript = _Transcript(transcript, "transcript")
        self.inner = inner_session
        self.session_id: str = inner_session.session_id
        self.session_settings: Any = getattr(inner_session, "session_settings", None)
        # Set by a RunContextFilter given this session: it opens the transcript and records
        # each call's conversation, which starts with `_prefix` (the agent's instructions)
        # before the items this session stores; `_context` is the last call's context.
        self._bound = False
        self._prefix: list[Mapping[str, Any]] | None = None
        self._context: RunContext | None = None

    @property
    def transcript(self) -> Session | None:
        """The runcontext transcript, once it is open (a path is opened on first use)."""
        return self._transcript.session

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self.inner.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        transcript = self._transcript.session
        if transcript is not None:
            # A transcript that cannot take an append refuses before the SDK's session changes.
            await asyncio.to_thread(transcript.check_appendable)
        await self.inner.add_items(items)
        prefix = [] if not self._bound else self._prefix
        if prefix is None:
            return  # the filter has not run yet: it records the conversation on its first call
        stored = [_as_sent(item) for item in await self.inner.get_items()]
        await asyncio.to_thread(self._append_new, prefix, stored, items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def run_compaction(self, args: Mapping[str, Any] | None = None) -> None:
        """Compact the inner session when it can (an ``OpenAIResponsesCompactionSession``),
        and record in the transcript what the compaction replaced: one ``compaction`` record
        whose messages are the items the SDK sends from now on.

        The SDK calls this after a turn is saved (it finds the method, so the inner session's
        compaction keeps working through this one). The inner session compacts its whole
        stored history (this method takes no run ``wrapper``), and not while a tool
        call waits for its output. The compaction request is
        always made in ``"input"`` mode, with the stored items: ``"previous_response_id"``
        would summarise what the server stored, the runcontext head and tail included, and is
        refused (:class:`ServerManagedConversationError`).
        """
        compact = getattr(self.inner, "run_compaction", None)
        if not callable(compact):
            return
        chosen = dict(args or {})
        if chosen.get("compaction_mode") == "previous_response_id":
            raise ServerManagedConversationError(
                "run_compaction: compaction_mode='previous_response_id' summarises the "
                "conversation the server stored, which holds every turn's runcontext head "
                "and tail; use compaction_mode='input'"
            )
        chosen["compaction_mode"] = "input"
        transcript = self._transcript.session
        if transcript is not None:
            # Nothing is paid for that the transcript cannot take: refuse before the call.
            await asyncio.to_thread(transcript.check_appendable)
        before = [_as_sent(item) for item in await self.inner.get_items()]
        if _pending_calls(before):
            return  # a tool call still waits for its output: compact once it has it
        # Without the run's wrapper: the compaction session's automatic path matches its
        # stored items to the turn's request, which the filter changed (the cache
        # breakpoint), and would then skip every compaction.
        await compact(chosen)
        after = [_as_sent(item) for item in await self.inner.get_items()]
        if after == before or transcript is None:
            return  # not compacted; or no transcript yet: it opens with the compacted items
        prefix = (self._prefix or []) if self._bound else []
        await asyncio.to_thread(_record_compaction, transcript, [*prefix, *after])

    # The SDK defers a compaction while a turn's tool outputs are pending, and forces it at
    # the next save; these pass its questions on to the inner session.
    async def _defer_compaction(self, response_id: str, store: bool | None = None) -> None:
        defer = getattr(self.inner, "_defer_compaction", None)
        if callable(defer):
            await defer(response_id, store)

    def _get_deferred_compaction_response_id(self) -> str | None:
        deferred = getattr(self.inner, "_get_deferred_compaction_response_id", None)
        return deferred() if callable(deferred) else None

    async def clear_session(self) -> None:
        await self.inner.clear_session()

    def _append_new(
        self, prefix: list[Mapping[str, Any]], stored: list[Any], items: list[Any]
    ) -> None:
        # The transcript is append-only: items the SDK pops or clears stay recorded, and a
        # conversation that no longer continues the transcript is refused by record_run.
        conversation = [*prefix, *stored]
        if self._transcript.session is None:
            if not conversation:
                return
            self._transcript.open(conversation)
            return
        transcript = self._transcript.session
        recorded = transcript.message_count
        if len(conversation) <= recorded:
            return
        try:
            transcript.append_messages(conversation[recorded:])
        except Exception as error:
            # The items are in the inner session; the error carries them too, the last (the
            # turn's reply, when the SDK saves a turn's output) as the outcome's reply.
            last = conversation[-1]
            reply = last if isinstance(last, Mapping) else None
            raise run_not_recorded(
                transcript,
                error,
                messages=conversation if reply is None else conversation[:-1],
                context=self._context or RunContext(),
                request=None,
                reply=reply,
                response=items,
            ) from error


def _record_compaction(transcript: Session, conversation: list[Mapping[str, Any]]) -> None:
    """Record the compaction that turns the transcript's current conversation into
    ``conversation`` (the agent's instructions, then the items the SDK session now holds):
    the range between the messages both start with and those both end with, replaced by what
    ``conversation`` holds there (``"summary"``; ``"trim"`` when it holds nothing)."""
    check_messages(conversation, items=True)
    given = [message_body(message, f"conversation[{i}]") for i, message in enumerate(conversation)]
    count = transcript.message_count
    recorded = [message_body(message, "recorded") for message in transcript.messages()]
    start = 0
    while start < min(count, len(given)) and given[start] == recorded[start]:
        start += 1
    common = 0
    while common < min(count, len(given)) - start and given[-1 - common] == recorded[-1 - common]:
        common += 1
    end = count - common
    if end <= start:
        # Nothing of the transcript replaced (the session only grew): the filter records the
        # new items with the next model call.
        return
    replacement = conversation[start : len(conversation) - common]
    transcript.compact(start, end, replacement, mode="summary" if replacement else "trim")


# The context variable the SDK sets to a new object for the length of each run (read by
# _run_key); None on an SDK without it.
_RUN_VARIABLE: ContextVar[object | None] | None = getattr(_sdk_run, "_current_run", None)


class _Run:
    """A key that is one SDK run: equal only to itself, and holding the run's object so that
    its ``id()`` cannot be reused while the key is kept."""

    __slots__ = ("owner",)

    def __init__(self, owner: object) -> None:
        self.owner = owner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Run) and other.owner is self.owner

    def __hash__(self) -> int:
        return id(self.owner)


def _run_key() -> Hashable:
    """The SDK run the current model call belongs to.

    ``CallModelData`` names no run, so this reads what the SDK sets for the length of each
    ``Runner.run``/``run_sync``/``run_streamed``: a fresh object in a context variable (the
    agent-tool configuration of the run), seen by every model call of the run and by no other
    run, nested runs (an agent used as a tool) included. An SDK without it falls back to the
    current trace, one per run unless the caller groups runs in one ``trace()``.
    """
    owner = _RUN_VARIABLE.get() if _RUN_VARIABLE is not None else None
    if owner is None:
        owner = _tracing.get_current_trace()
    if owner is None:
        owner = object()  # outside any run: a context of its own
    return _Run(owner)


def _declarations(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The agent's function tools as the Responses API declares them, for the request count
    (hosted tools are declared by type alone and left out)."""
    return [
        {
            "name": tool.name,
            "parameters": tool.params_json_schema,
            "strict": tool.strict_json_schema,
            "type": "function",
            "description": tool.description,
        }
        for tool in agent.tools
        if isinstance(tool, FunctionTool)
    ]


def _model_name(model: object) -> str | None:
    """The name of an agent's model: a string, a model object's ``model``, or the SDK's
    default model when the agent names none."""
    if model is None:
        return get_default_model()
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None


def _as_sent(item: Any) -> Any:
    """An input item as the SDK's OpenAI models send it, which is how the transcript records
    it: without the SDK's own bookkeeping, which no OpenAI request carries. That is the
    placeholder ``id`` of the items a Chat Completions model returned (``"__fake_id__"``) and
    ``provider_data`` (the provider and response an item came from): the Responses model
    removes both before sending, and Chat Completions messages have neither."""
    if isinstance(item, Mapping) and (
        item.get("id") == FAKE_RESPONSES_ID or "provider_data" in item
    ):
        return {
            key: value
            for key, value in item.items()
            if key != "provider_data" and (key != "id" or value != FAKE_RESPONSES_ID)
        }
    return item


def _pending_calls(items: Sequence[Any]) -> bool:
    """Whether a tool call in ``items`` has no output yet (an approval the run waits for)."""
    calls: set[Hashable] = set()
    for item in items:
        if isinstance(item, Mapping):
            kind = item.get("type")
            if kind in _TOOL_CALLS:
                calls.add(item.get("call_id"))
            elif kind in _TOOL_OUTPUTS:
                calls.discard(item.get("call_id"))
    return bool(calls)


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
