"""Pydantic AI: ``RunContextCapability`` for ``Agent(capabilities=[...])``.

Pydantic AI's extension API in the 2.x line is the *capability*
(``pydantic_ai.capabilities.AbstractCapability``). This one gives the head as an instruction
(``get_instructions``) and, in a ``before_model_request`` hook that runs after every other one
(the capability is ``innermost``, so after the history processors), corrects the request the
model is sent: the head first among the instructions and static (so it is the start of the
cached prefix); the tail as a request-scoped ``SystemPromptPart`` (on Gemini, or with
``tail_role="user"``, a user text part) on a *copy* of the request's last message; an OpenAI
cache breakpoint on the last conversation block (a ``CachePoint``, Pydantic AI's own
mechanism, with ``prompt_cache_options`` mode ``explicit``) on the models that take one; an
Anthropic ``anthropic_cache`` setting turned into explicit markers. The run's history
(``ctx.messages``, ``result.all_messages()``) never sees the tail or the marker. The request
is recorded, in ``wrap_model_request``, once the model answered; an edit a history processor
made (a trim, a summary, cleared tool results) is recorded before the call as a compaction or
an elision. The contract, the recorded form, the cache settings and the history processors
are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

try:
    from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
    from pydantic_ai.messages import (
        CachePoint,
        InstructionPart,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        ToolReturnPart,
        UserPromptPart,
        repair_messages,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext as AgentRunContext
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("pydantic-ai", "pydantic-ai", error)

from runcontext._core import RunContext
from runcontext.adapters._common import check_choice
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget
from runcontext.budget.meter import Meter
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import UnreadableUsageWarning, Usage, read_usage
from runcontext.integrations._turns import TurnContexts
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.errors import ConversationMismatchError
from runcontext.transcript.session import Compaction, Elision, Session

__all__ = ["RunContextCapability", "to_transcript_messages"]

SessionTarget = Session | str | os.PathLike[str]
"""What ``session=`` takes: a ``Session``, or a transcript path or ``postgresql://`` URI that is
opened, or created, on the first request."""

# The members of a part's JSON form that reach the model; the rest is the framework's
# bookkeeping (timestamps, provider details, display hints), absent from the wire.
_SENT_PART_MEMBERS = ("part_kind", "content", "tool_name", "args", "tool_call_id")

# What `tail_role=` takes (unset: by the model, as `_tail_role` says).
_TAIL_ROLES = ("system", "user")

# Pydantic AI's Anthropic setting whose top-level automatic `cache_control` lands on the last
# block (the tail), and the explicit setting that marks the last conversation block instead.
_AUTOMATIC = "anthropic_cache"
_EXPLICIT = "anthropic_cache_messages"
_ANTHROPIC_CACHE_SETTINGS = (
    _AUTOMATIC,
    _EXPLICIT,
    "anthropic_cache_instructions",
    "anthropic_cache_tool_definitions",
)
# The settings whose markers come before the conversation's (tools, then instructions).
_EARLIER_MARKERS = ("anthropic_cache_tool_definitions", "anthropic_cache_instructions")


# AbstractCapability is generic over the agent's deps type; this capability serves any agent.
class RunContextCapability(AbstractCapability[Any]):
    """Adds a :class:`runcontext.RunContext` to every model request of a Pydantic AI agent.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    agent run (``agent.run(...)`` is one turn; the context is keyed on the run's ``run_id``),
    shared by every model request of the run's tool loop.

    ``session`` records each request: the conversation as sent (:func:`to_transcript_messages`,
    after the agent's instructions), the context envelope and the reply. It is a
    ``runcontext.Session``, or a path or ``postgresql://`` URI opened (or created, with the
    first request's first message) on the first request.

    ``budget`` (a :class:`runcontext.budget.Budget`, or a mapping from model names to budgets)
    is checked with ``counter``'s count before each request is sent; ``model`` names the model
    for the count when it is not the model the agent calls (by default, its ``model_name``).

    ``tail_role`` is the tail's role: by default a request-scoped system prompt, and user text
    on Gemini; ``"user"`` sends user text to every model, for a gateway that moves system
    messages to the front (docs/PLACEMENT.md, *The tail's role*); ``"system"`` is refused on
    Gemini.
    """

    def __init__(
        self,
        context_or_builder: object,
        *,
        session: SessionTarget | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        counter: Callable[[str], int] | RequestCounter | None = None,
        model: str | None = None,
        tail_role: Literal["system", "user"] | None = None,
    ) -> None:
        if tail_role is not None:
            check_choice("tail_role", tail_role, _TAIL_ROLES)
        self._tail_role = tail_role
        self._turns = TurnContexts(context_or_builder)
        if session is not None and not isinstance(session, Session | str | os.PathLike):
            raise TypeError(
                "session: expected a runcontext.Session, a transcript path or a postgresql:// "
                f"URI, got {type(session).__name__}"
            )
        self._session: Session | None = session if isinstance(session, Session) else None
        self._target = None if isinstance(session, Session) else session
        self._opening = threading.Lock()
        # Checked now, so a wrong budget fails where the agent is built, not on its first request.
        # (A mapping of budgets by model waits for the model the agent calls.)
        if model is not None or not isinstance(budget, Mapping):
            Meter(counter, budget, model=model)
        self._meter_arguments = (counter, budget, model)
        self._meter: Meter | None = None
        # The request in flight of each run (its run_id): a run's model requests are sequential.
        self._steps: dict[str | None, _Step] = {}

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    @property
    def session(self) -> Session | None:
        """The transcript, once opened (at once for a ``Session``; on the first request for a
        path or URI)."""
        return self._session

    def get_instructions(self) -> Any:
        fixed = self._turns.fixed
        if fixed is not None:
            return fixed.head_text
        return self._head

    async def _head(self, ctx: AgentRunContext[Any]) -> InstructionPart | None:
        head = (await self._turns.aget(ctx.run_id)).head_text
        return None if head is None else InstructionPart(head)

    def get_ordering(self) -> CapabilityOrdering:
        # Innermost: this capability's `before_model_request` runs after every other one's (the
        # history processors, `ProcessHistory`), so it sees the conversation as it is sent.
        return CapabilityOrdering(position="innermost")

    async def wrap_model_request(
        self,
        ctx: AgentRunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: Any,
    ) -> ModelResponse:
        # Pydantic AI runs every `before_model_request` hook (the history processors among
        # them) inside the handler: the request is prepared, checked and corrected there
        # (`before_model_request`, below), on the conversation as the processors left it, and
        # recorded here once the model answered.
        step = _Step(await self._turns.aget(ctx.run_id), list(request_context.messages))
        self._steps[ctx.run_id] = step
        try:
            response: ModelResponse = await handler(request_context)
        finally:
            self._steps.pop(ctx.run_id, None)
        if step.meter is None or step.sent is None:
            return response  # the request was not sent through this capability's hook
        usage = _usage(response)
        if step.session is None:
            step.meter.settle(step.count, usage)
            return response
        await asyncio.to_thread(self._record, step, usage, response)
        return response

    async def before_model_request(
        self,
        ctx: AgentRunContext[Any],
        request_context: ModelRequestContext,
    ) -> ModelRequestContext:
        step = self._steps.get(ctx.run_id)
        if step is None:
            return request_context  # not inside this capability's own wrap_model_request
        context = step.context
        role = _tail_role(self._tail_role, request_context.model)  # a refusal before anything
        # What the model is sent: the conversation as the history processors left it, made
        # provider-valid by the repair Pydantic AI makes before every request (an orphaned tool
        # result dropped, a dangling call answered, adjacent requests merged).
        conversation = repair_messages(list(request_context.messages), repair_last_response=True)
        parameters = request_context.model_request_parameters
        parts = list(parameters.instruction_parts or [])
        head, instructions = _split_head(parts, context.head_text)
        messages = _instructions_message(instructions) + to_transcript_messages(conversation)
        # Before the model is called: a run the transcript cannot take, or over budget, is
        # never paid for; an edit the history processors made is recorded first.
        session = self._session
        if self._target is not None or session is not None:
            session = await asyncio.to_thread(self._open, messages)
        meter = self._metered(request_context, session)
        meter.tools = _tool_declarations(parameters)
        count = meter.count(messages, context)
        meter.check(count, messages)  # before the edit is recorded: over budget writes nothing
        if session is not None:
            await asyncio.to_thread(self._reconcile, session, messages, instructions, step.given)

        tailed = _with_tail(
            conversation,
            context.tail_text,
            _takes_breakpoints(request_context.model),
            role,
        )
        sent = dataclasses.replace(
            request_context,
            messages=tailed,
            model_request_parameters=dataclasses.replace(
                parameters, instruction_parts=[*head, *instructions]
            ),
            model_settings=_cache_settings(request_context),
        )
        step.session, step.meter, step.count = session, meter, count
        step.messages, step.sent = messages, sent
        return sent

    def _reconcile(
        self,
        session: Session,
        messages: list[dict[str, Any]],
        instructions: list[InstructionPart],
        given: list[ModelMessage],
    ) -> None:
        """Record the compaction or elision that turns the recorded conversation into
        ``messages`` (the conversation sent, as the history processors left it), then make the
        checks ``Loop`` makes. ``given`` is the conversation before the processors ran (read
        only when ``Session.reconcile`` refuses).

        The edit is ``Session.reconcile``'s. When that cannot tell where the new messages
        begin (a summariser replaced the last recorded message too), and ``given`` is the
        recorded conversation continued, and ``messages`` ends with what ``given`` added, the
        processors replaced what lies between the prefix both share and those new messages:
        that is recorded as one compaction. The agent's instructions (message 0, when there
        are any) are the seed and stay fixed: other instructions are another conversation
        (``SeedMismatchError``), never an edit. Anything else is refused
        (``ConversationMismatchError``); nothing is sent.
        """
        session.check_appendable()
        if messages[0].get("kind") == "instructions":
            session.check_seed(messages)
        edit: Compaction | Elision | None
        try:
            edit = session.reconcile(messages)
        except ConversationMismatchError:
            before = _instructions_message(instructions) + to_transcript_messages(
                repair_messages(given, repair_last_response=True)
            )
            edit = _processed(session, messages, before)
            if edit is None:
                session.check_seed(messages)  # the more precise refusal, when it applies
                raise
        counter = None if self._meter is None else self._meter.counter
        if edit is not None and counter is not None:
            # A calibrated prefix that reaches into the edited range no longer matches.
            counter.compacted(edit.start if isinstance(edit, Compaction) else min(edit.indices))
        check_run(session, messages)

    def _open(self, messages: list[dict[str, Any]]) -> Session:
        with self._opening:
            if self._session is None:
                assert self._target is not None
                self._session = Session.open_or_create(self._target, messages[:1])
            return self._session

    def _metered(self, request_context: ModelRequestContext, session: Session | None) -> Meter:
        if self._meter is None:
            counter, budget, model = self._meter_arguments
            name = model or request_context.model.model_name
            self._meter = Meter(counter, budget, model=name, session=session)
        return self._meter

    def _record(self, step: _Step, usage: Usage | None, response: ModelResponse) -> None:
        """Settle and record the request; if the transcript refuses it, the error carries the
        reply (``RunNotRecordedError``)."""
        session, meter, messages = step.session, step.meter, step.messages
        assert session is not None and meter is not None and messages is not None
        reply = None
        try:
            reply = to_transcript_messages([response])[0]
            tokens = meter.settle(step.count, usage)
            session.record_run(messages, step.context, reply, tokens=tokens)
        except Exception as error:
            raise run_not_recorded(
                session,
                error,
                messages=messages,
                context=step.context,
                request=step.sent,
                reply=reply,
                response=response,
            ) from error


@dataclasses.dataclass
class _Step:
    """One model request between ``wrap_model_request`` and the ``before_model_request`` hook
    inside it: the run's context, then what the hook prepared and sent."""

    context: RunContext
    given: list[ModelMessage]  # the conversation before the history processors ran
    session: Session | None = None
    meter: Meter | None = None
    count: RequestCount | None = None
    messages: list[dict[str, Any]] | None = None
    sent: ModelRequestContext | None = None


def _processed(
    session: Session, messages: list[dict[str, Any]], given: list[dict[str, Any]]
) -> Compaction | None:
    """The compaction a history processor made when ``Session.reconcile`` cannot tell where
    the new messages begin (the last recorded message was replaced too, or occurs twice)
    (docs/INTEGRATIONS.md, *History processors*), or ``None`` when the conversation
    sent is not one: ``given`` (before the processors) must be the recorded conversation
    continued, and ``messages`` (after them) must end with the messages ``given`` added, or
    with the one request it added merged into the request before it (Pydantic AI merges
    adjacent requests before it sends them: the replacement then ends with that request)."""
    recorded = session.messages()
    count = len(recorded)
    added = given[count:]
    if not added or given[:count] != recorded:
        return None
    if messages[len(messages) - len(added) :] == added:
        kept = len(messages) - len(added)  # messages[:kept] is the edited recorded conversation
    elif len(added) == 1 and _merged_into(added[0], messages[-1]):
        kept = len(messages)
    else:
        return None
    # The range replaced: from the end of the prefix both share to the start of the suffix
    # both share (as Session.reconcile finds it).
    start = 0
    while start < min(kept, count) and messages[start] == recorded[start]:
        start += 1
    suffix = 0
    while (
        suffix < min(kept, count) - start
        and messages[kept - 1 - suffix] == recorded[count - 1 - suffix]
    ):
        suffix += 1
    if count - suffix <= start:
        return None  # messages inserted, none replaced: no compaction records that
    replacement = messages[start : kept - suffix]
    return session.compact(
        start, count - suffix, replacement, mode="summary" if replacement else "trim"
    )


def _merged_into(added: Mapping[str, Any], last: Mapping[str, Any]) -> bool:
    """Whether the request ``added`` ends the request ``last``, which holds more parts."""
    if added.get("kind") != "request" or last.get("kind") != "request":
        return False
    parts, before = added["parts"], last["parts"]
    return len(before) > len(parts) and before[len(before) - len(parts) :] == parts


def _split_head(
    parts: list[InstructionPart], head: str | None
) -> tuple[list[InstructionPart], list[InstructionPart]]:
    """The head as a static part, and the agent's other instruction parts in their order.

    The framework lists the agent's own instructions first and marks a capability's instruction
    function dynamic; the head goes first and static instead, so it starts the cached prefix and
    a provider's instruction breakpoint (after the static parts) covers it.
    """
    if head is None:
        return [], parts
    others = list(parts)
    for index, part in enumerate(others):
        if part.content == head:
            del others[index]
            break
    return [InstructionPart(head)], others


def _instructions_message(parts: Sequence[InstructionPart]) -> list[dict[str, Any]]:
    """The agent's own instructions as the transcript records them: one ``system`` message,
    their text as the framework joins it."""
    text = InstructionPart.join(parts)
    return [] if text is None else [{"role": "system", "kind": "instructions", "content": text}]


def _takes_breakpoints(model: Any) -> bool:
    """Whether the model takes OpenAI's explicit ``prompt_cache_breakpoint`` (GPT-5.6 and
    later, by Pydantic AI's own model profile)."""
    return bool(model.profile.get("openai_supports_prompt_cache_breakpoints", False))


def _cache_settings(request_context: ModelRequestContext) -> Any:
    """The request's model settings, corrected so that no cache entry is written at the tail.

    OpenAI models with breakpoints: ``openai_prompt_cache_options`` mode ``explicit`` (the
    caller's ``ttl`` kept), so the request writes only its breakpoints and no implicit one at
    the tail. Anthropic: ``anthropic_cache`` (the top-level automatic marker, which lands on the
    tail) becomes ``anthropic_cache_messages`` with the same TTL (a marker on the last
    conversation block); the unified ``cache`` setting, which Pydantic AI maps to automatic
    caching, becomes the explicit settings it stands for; a 1-hour conversation marker after a
    5-minute tools or instructions marker becomes a 5-minute one.
    """
    settings: dict[str, Any] = dict(request_context.model_settings or {})
    model = request_context.model
    if _takes_breakpoints(model):
        options = dict(settings.get("openai_prompt_cache_options") or {})
        options.setdefault("mode", "explicit")
        settings["openai_prompt_cache_options"] = options
    if getattr(model, "system", None) == "anthropic":
        unified = settings.get("cache")
        if unified and not any(key in settings for key in _ANTHROPIC_CACHE_SETTINGS):
            retention = unified.get("retention", True) if isinstance(unified, dict) else unified
            ttl = retention if retention in ("5m", "1h") else "5m"
            settings["anthropic_cache_instructions"] = ttl
            settings.setdefault("anthropic_cache_tool_definitions", ttl)
            if not isinstance(unified, dict) or unified.get("messages", True):
                settings[_EXPLICIT] = ttl
            del settings["cache"]
        if settings.get(_AUTOMATIC):
            automatic = settings.pop(_AUTOMATIC)
            settings.setdefault(_EXPLICIT, automatic)
        if _ttl(settings.get(_EXPLICIT)) == "1h" and any(
            _ttl(settings.get(key)) == "5m" for key in _EARLIER_MARKERS
        ):
            # A 1-hour marker may not follow a 5-minute one (the API refuses the request): the
            # conversation's marker, the last, takes the shorter TTL.
            settings[_EXPLICIT] = "5m"
    return settings or None


def _ttl(setting: object) -> str | None:
    """The TTL an ``anthropic_cache*`` setting asks for (``True`` is 5 minutes)."""
    if setting is True:
        return "5m"
    return setting if setting in ("5m", "1h") else None


def _tail_role(chosen: str | None, model: Any) -> str:
    """The tail's role for ``model``: ``chosen``, or by default ``system`` (a request-scoped
    system prompt), except on Gemini, which has no system turn inside ``contents``: there a
    ``SystemPromptPart`` would be sent as a ``<system>`` block in a user turn, with Pydantic
    AI's explanation of such blocks put before the head in the system instruction. The tail
    goes as user text instead, where ``runcontext.adapters.gemini_contents`` puts it."""
    gemini = _is_gemini(model)
    if chosen == "system" and gemini:
        raise ValueError(
            "tail_role='system': Gemini has no system turn after the conversation; leave "
            "tail_role unset (user text, as runcontext.adapters.gemini_contents sends it) or "
            "pass 'user'"
        )
    return chosen or ("user" if gemini else "system")


def _with_tail(
    messages: list[ModelMessage], tail: str | None, breakpoint: bool, role: str
) -> list[ModelMessage]:
    """The messages with a ``CachePoint`` after the last conversation part (``breakpoint``),
    then the tail, a request-scoped system prompt or user text (``role``), at the end of the
    last request (a copy of it; the history's own message is left as it is)."""
    extra: list[Any] = []
    if breakpoint and messages and _markable(messages[-1]):
        # Pydantic AI moves a CachePoint that opens a user message onto the content before it
        # (the user prompt or tool result); it never lands on the tail, which comes after.
        extra.append(UserPromptPart([CachePoint()]))
    if tail is not None:
        extra.append(
            UserPromptPart(tail) if role == "user" else SystemPromptPart(tail, scope="request")
        )
    if not extra:
        return messages
    if messages and isinstance(messages[-1], ModelRequest):
        last = messages[-1]
        return [*messages[:-1], dataclasses.replace(last, parts=[*last.parts, *extra])]
    return [*messages, ModelRequest(parts=extra)]


def _is_gemini(model: Any) -> bool:
    """Whether the agent calls Pydantic AI's ``GoogleModel`` (the Gemini API, Vertex AI or a
    gateway). A ``GoogleModel`` exists only once its module is imported, so an agent on
    another provider never makes this check import google-genai."""
    google = sys.modules.get("pydantic_ai.models.google")
    return google is not None and isinstance(model, google.GoogleModel)


def _markable(message: ModelMessage) -> bool:
    """Whether ``message`` is a request whose last part is content a breakpoint may follow
    (a user prompt with content, a tool result, a retry prompt): never the model's own."""
    if not isinstance(message, ModelRequest) or not message.parts:
        return False
    part = message.parts[-1]
    if isinstance(part, UserPromptPart):
        return bool(part.content)
    return isinstance(part, ToolReturnPart | RetryPromptPart)


def _tool_declarations(parameters: Any) -> list[dict[str, Any]] | None:
    """The request's tools as the count sees them: name, description and parameter schema."""
    tools = [
        *(parameters.function_tools or []),
        *(parameters.output_tools or []),
    ]
    if not tools:
        return None
    return [
        {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        }
        for tool in tools
    ]


def _usage(response: ModelResponse) -> Usage | None:
    """What the provider billed, as Pydantic AI read it from the response (``input_tokens`` is
    the whole prompt, cache reads and writes included); ``None`` when it reported nothing, or
    something that is not a plausible bill (warned: the reply was paid for and is kept)."""
    usage = response.usage
    if not usage.has_values():
        return None
    try:
        return read_usage(
            Usage(
                input=usage.input_tokens,
                output=usage.output_tokens,
                cache_read=usage.cache_read_tokens,
                cache_write=usage.cache_write_tokens,
            )
        )
    except (TypeError, ValueError) as error:
        warnings.warn(
            f"the model answered but its billed usage could not be read ({error}); the run "
            "is recorded without it, and the counter is not calibrated by it",
            UnreadableUsageWarning,
            stacklevel=2,
        )
        return None


def to_transcript_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Pydantic AI messages as the transcript records them: per message
    ``{"role", "kind", "parts"}``, ``role`` ``"user"`` for a request and ``"assistant"`` for a
    response (a transcript message needs a role), and each part as its JSON form
    (``ModelMessagesTypeAdapter``, ``mode="json"``) keeping only what reaches the model:
    ``part_kind``, ``content``, ``tool_name``, ``args`` (as the compact JSON string the model
    classes send, ``args_as_json_str()``), ``tool_call_id``.

    The framework's bookkeeping is left out: timestamps (a message built again never has the
    same one), provider details, a response's ``run_id`` and usage, filled in after the call.
    """
    messages = list(messages)
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return [
        {
            "role": "user" if item["kind"] == "request" else "assistant",
            "kind": item["kind"],
            "parts": [
                _sent_part(part, dumped_part)
                for part, dumped_part in zip(message.parts, item["parts"], strict=True)
            ],
        }
        for message, item in zip(messages, dumped, strict=True)
    ]


def _sent_part(part: Any, dumped: Mapping[str, Any]) -> dict[str, Any]:
    sent = {key: dumped[key] for key in _SENT_PART_MEMBERS if key in dumped}
    if "args" in sent:
        # As every model class sends a call's arguments back: compact JSON of their dict,
        # whatever spacing the model returned them with.
        sent["args"] = part.args_as_json_str()
    return sent
