"""LangChain v1 agents: ``RunContextMiddleware`` for ``create_agent(middleware=[...])``.

The head becomes the first system message (the agent's own system message follows it) and the
tail goes after the conversation, both through ``request.override(...)`` inside
``wrap_model_call``: what a ``wrap_model_call`` middleware hands to its handler is sent to the
model and never written back to the agent's state, its checkpoints or its message list
(``before_model`` would write it there). ``before_agent`` marks each agent run with a new id,
so a run's model calls share one context and the next run builds a new one. What
``SummarizationMiddleware`` and ``ContextEditingMiddleware`` (listed before this one) do to
the conversation is recorded as compactions and elisions before each call. The contract, the
placement decisions and the middleware order are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
import warnings
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ContextEditingMiddleware,
        ModelRequest,
        ModelResponse,
    )
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        convert_to_openai_messages,
    )
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("langchain (v1)", "langchain", error)

from runcontext._core import RunContext, digest
from runcontext.adapters._common import check_choice
from runcontext.adapters.anthropic import (
    ANTHROPIC_MAX_BREAKPOINTS,
    _breakpoints_in,
    _conversation_breakpoint,
)
from runcontext.adapters.openai import _chat_breakpoint, openai_prompt_caching
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget
from runcontext.budget.meter import Meter
from runcontext.budget.usage import UnreadableUsageWarning, Usage
from runcontext.integrations._turns import TurnContexts
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.errors import ConversationMismatchError
from runcontext.transcript.session import Compaction, Session

__all__ = ["MiddlewareOrderWarning", "RunContextMiddleware"]

# The class name of langchain-anthropic's caching middleware, looked up by name so that this
# module works without langchain-anthropic installed.
_CACHING_MIDDLEWARE = "AnthropicPromptCachingMiddleware"
# How many functions the order check looks through in the handler chain (it follows closures
# of the framework's composed handlers, never arbitrary objects).
_ORDER_CHECK_LIMIT = 200
# The private state key ``before_agent`` sets to a new id at the start of every agent run.
_RUN_KEY = "runcontext_run"
# The breakpoint runcontext places for OpenAI models that take one (docs/PLACEMENT.md).
_OPENAI_BREAKPOINT = {"mode": "explicit"}
# Cache instructions in content blocks: not content, so never part of the recorded message.
_CACHE_MARKERS = ("cache_control", "prompt_cache_breakpoint")
# What `tail_role=` takes (unset: by the model, as `_with_context` says).
_TAIL_ROLES = ("system", "user")


class MiddlewareOrderWarning(UserWarning):
    """``RunContextMiddleware`` runs outside ``AnthropicPromptCachingMiddleware``.

    The caching middleware then asks for automatic caching after the tail was added, and the
    API puts that breakpoint on the last block: the tail, which changes every turn. List the
    caching middleware first: ``middleware=[AnthropicPromptCachingMiddleware(),
    RunContextMiddleware(...)]``.
    """


# The agent's model is typed `Any` throughout: AgentMiddleware is generic over state, context
# and response types that a middleware serving every agent cannot name.
class _RunState(AgentState):
    """The agent's state plus the id of the run (private: never in the input or the output)."""

    runcontext_run: NotRequired[Annotated[str, PrivateStateAttr]]


class RunContextMiddleware(AgentMiddleware):
    """Adds a :class:`runcontext.RunContext` to every model call of a LangChain agent.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    agent run (``invoke``/``ainvoke``/``stream``: ``before_agent`` marks each run). ``session``
    (a ``Session``, a transcript path or a ``postgresql://`` URI, opened or created on the first
    request) records each model call's conversation, context envelope and reply. ``budget`` and
    ``counter`` (and ``model``, the name counted for, when not the agent's model's) refuse a
    request over budget before it is sent. Place it *after* ``AnthropicPromptCachingMiddleware``
    in ``middleware=[...]``.

    ``tail_role`` is the tail message's role: by default a ``SystemMessage`` for OpenAI models
    and a ``HumanMessage`` for the others (which refuse a system message after the
    conversation); ``"user"`` sends a ``HumanMessage`` to every model, for a gateway that moves
    system messages to the front (docs/PLACEMENT.md, *The tail's role*); ``"system"`` is for
    OpenAI models only.
    """

    state_schema = _RunState

    def __init__(
        self,
        context_or_builder: object,
        *,
        session: Session | str | os.PathLike[str] | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        counter: Callable[[str], int] | RequestCounter | None = None,
        model: str | None = None,
        tail_role: Literal["system", "user"] | None = None,
    ) -> None:
        super().__init__()
        if tail_role is not None:
            check_choice("tail_role", tail_role, _TAIL_ROLES)
        self._tail_role = tail_role
        self._turns = TurnContexts(context_or_builder)
        self._session: Session | None = None
        self._target: str | os.PathLike[str] | None = None
        if isinstance(session, Session):
            self._session = session
        elif isinstance(session, str | os.PathLike):
            self._target = session
        elif session is not None:
            raise TypeError(
                "session: expected a runcontext.Session, a transcript path or a postgresql:// "
                f"URI, or None, got {type(session).__name__}"
            )
        self._meter_arguments = (counter, budget, model)
        self._meter: Meter | None = None
        if model is not None or not isinstance(budget, Mapping):
            # Checks the arguments now; a budget per model waits for the agent's model name.
            self._meter = Meter(counter, budget, model=model, session=self._session)
        self._lock = threading.Lock()
        self._order_checked = False
        # Whether a ContextEditingMiddleware runs inside this one (found on the first call).
        self._editor_inside: bool | None = None

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    @property
    def session(self) -> Session | None:
        """The transcript (``None`` until the first request when a path or URI was given)."""
        return self._session

    def close(self) -> None:
        """Close the transcript this middleware opened from a path or URI (a ``Session`` you
        passed stays yours to close)."""
        if self._target is not None and self._session is not None:
            self._session.close()

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        # A new run of the agent: its model calls share one context, the next run builds anew.
        return {_RUN_KEY: uuid.uuid4().hex}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {_RUN_KEY: uuid.uuid4().hex}

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> Any:
        self._check_order(request, handler)
        context = self._turns.get(_turn_key(request))
        sent = _with_context(request, context, self._tail_role)  # a refusal before anything
        messages = _transcript_messages(_conversation(request))
        session = self._open(messages)  # first: the budget counts what it already records
        meter = self._meter_for(request)
        count = meter.count(messages, context)
        meter.check(count, messages)  # before the call: nothing is sent over budget
        if session is not None:
            self._check_editors(handler)
            # Before the model is called: the edit the framework made is recorded (or refused)
            # and a run the transcript cannot take is never paid for.
            _record_edit(session, meter, request, messages, context, count)
            check_run(session, messages)
        response = handler(sent)
        _finish(session, meter, count, messages, context, sent, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        self._check_order(request, handler)
        context = await self._turns.aget(_turn_key(request))
        sent = _with_context(request, context, self._tail_role)
        messages = _transcript_messages(_conversation(request))
        session = await asyncio.to_thread(self._open, messages)  # first, as in wrap_model_call
        meter = self._meter_for(request)
        count = meter.count(messages, context)
        meter.check(count, messages)
        if session is not None:
            self._check_editors(handler)
            await asyncio.to_thread(_record_edit, session, meter, request, messages, context, count)
            await asyncio.to_thread(check_run, session, messages)
        response = await handler(sent)
        await asyncio.to_thread(_finish, session, meter, count, messages, context, sent, response)
        return response

    def _open(self, messages: list[dict[str, Any]]) -> Session | None:
        """The transcript; from a path or URI, opened or created on the first request."""
        if self._session is None and self._target is not None:
            with self._lock:
                if self._session is None:
                    self._session = Session.open_or_create(self._target, messages)
                    if self._meter is not None:
                        self._meter.session = self._session
        return self._session

    def _meter_for(self, request: Any) -> Meter:
        meter = self._meter
        if meter is None:
            with self._lock:
                if self._meter is None:
                    counter, budget, _ = self._meter_arguments
                    name = _model_name(request.model)
                    self._meter = Meter(counter, budget, model=name, session=self._session)
                meter = self._meter
        if meter.counter is not None:
            meter.tools = _tool_declarations(request.tools)
        return meter

    def _check_editors(self, handler: Callable[..., Any]) -> None:
        """Refuse, before the call, a ``ContextEditingMiddleware`` inside this one: it edits
        the request after this middleware has read it, so the transcript would record full
        tool results where the model was sent placeholders."""
        if self._editor_inside is None:
            self._editor_inside = _inner_middleware(handler, ContextEditingMiddleware)
        if self._editor_inside:
            raise ValueError(
                "RunContextMiddleware runs outside ContextEditingMiddleware, which edits the "
                "request after RunContextMiddleware has read it, so the transcript cannot "
                "record what the model is sent; list the editing middleware first: "
                "middleware=[ContextEditingMiddleware(...), RunContextMiddleware(...)]"
            )

    def _check_order(self, request: Any, handler: Callable[..., Any]) -> None:
        """Warn once if the caching middleware runs inside this one (see MiddlewareOrderWarning).

        Inside it, this middleware sees the top-level ``cache_control`` it set and moves it off
        the tail; outside it, it cannot, so it looks for the caching middleware in the handler
        chain it was given.
        """
        if self._order_checked or "cache_control" in request.model_settings:
            return
        self._order_checked = True
        # The caching middleware does nothing for other models, so its place does not matter.
        if _is_anthropic_chat(request.model) and _inner_middleware(handler, _CACHING_MIDDLEWARE):
            warnings.warn(
                "RunContextMiddleware runs outside AnthropicPromptCachingMiddleware, so the "
                "automatic cache breakpoint lands on the runcontext tail, which changes every "
                "turn, and the conversation is never read back from cache (only the tools and "
                "the system prompt are); list the caching "
                "middleware first: middleware=[AnthropicPromptCachingMiddleware(), "
                "RunContextMiddleware(...)]",
                MiddlewareOrderWarning,
                stacklevel=3,
            )


def _turn_key(request: Any) -> Hashable:
    """The run the request belongs to: the id ``before_agent`` gave it; for a request that
    did not come through the agent's graph (built by hand), the last ``HumanMessage``."""
    state = getattr(request, "state", None)
    run = state.get(_RUN_KEY) if isinstance(state, Mapping) else None
    if isinstance(run, str):
        return ("run", run)
    messages: Sequence[BaseMessage] = request.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            identity = message.id or digest({"content": message.content})
            return ("message", index, identity)
    return ("message", -1, None)


def _conversation(request: Any) -> list[Any]:
    """What the model is told besides the context: the agent's system message, then the
    messages."""
    system = request.system_message
    return list(request.messages) if system is None else [system, *request.messages]


def _model_name(model: Any) -> str | None:
    for attribute in ("model_name", "model"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None


def _tool_declarations(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The request's tools as OpenAI function declarations, for the count."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    declarations: list[dict[str, Any]] = []
    for tool in tools:
        try:
            declarations.append(convert_to_openai_tool(tool))
        except (TypeError, ValueError):
            continue  # a provider's built-in tool (a dict of its own shape): not counted
    return declarations


def _is_anthropic_chat(model: Any) -> bool:
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError:
        return False
    return isinstance(model, ChatAnthropic)


def _is_openai_chat(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return False
    return isinstance(model, BaseChatOpenAI)


def _with_context(request: Any, context: RunContext, tail_role: str | None) -> Any:
    """The request with the head first, the tail after the conversation (a ``tail_role``
    message), and the cache breakpoints where the provider can read them back."""
    overrides: dict[str, Any] = {}
    head, tail = context.head_text, context.tail_text
    system = request.system_message
    messages = list(request.messages)
    settings = request.model_settings
    if "cache_control" in settings:
        # AnthropicPromptCachingMiddleware (outside this one) asked for automatic caching,
        # whose breakpoint the API puts on the last block: the tail. Put explicit ones where
        # runcontext.adapters.anthropic_messages puts them instead: on the last conversation
        # block, then on the head when the system message has none, within the budget.
        settings = dict(settings)
        marker = settings.pop("cache_control")
        in_system = _system_breakpoints(system)
        messages, used = _mark_conversation(messages, marker, request.tools, in_system)
        head_marker = marker if in_system == 0 and used < ANTHROPIC_MAX_BREAKPOINTS else None
        overrides["model_settings"] = settings
    else:
        head_marker = None
        if _is_openai_chat(request.model) and openai_prompt_caching(
            _model_name(request.model) or ""
        ):
            messages = _mark_openai(messages)
            if "prompt_cache_options" not in settings and not getattr(
                request.model, "prompt_cache_options", None
            ):
                # Explicit mode: the request writes only the breakpoint placed here, never an
                # implicit one that may land on the tail (docs/PLACEMENT.md).
                overrides["model_settings"] = {
                    **settings,
                    "prompt_cache_options": {"mode": "explicit"},
                }
    if head is not None:
        # The head is the first system message; the agent's own system message follows it,
        # as the first message of the conversation (chat models merge leading system
        # messages: Anthropic's `system` blocks, in this order).
        overrides["system_message"] = _head_message(head, head_marker)
        if system is not None:
            messages.insert(0, system)
    if tail is not None:
        # ChatAnthropic refuses a system message after the conversation ("multiple
        # non-consecutive system messages"), and so do most chat models; OpenAI Chat takes
        # one, which is where runcontext.adapters.openai_chat puts the tail.
        openai = _is_openai_chat(request.model)
        if tail_role == "system" and not openai:
            raise ValueError(
                "tail_role='system': only OpenAI models take a system message after the "
                f"conversation, and this agent's model is {type(request.model).__name__}; "
                "leave tail_role unset (a HumanMessage) or pass 'user'"
            )
        if tail_role == "system" or (tail_role is None and openai):
            messages.append(SystemMessage(content=tail))
        else:
            messages.append(HumanMessage(content=[{"type": "text", "text": tail}]))
    overrides["messages"] = messages
    return request.override(**overrides)


def _head_message(head: str, marker: Any = None) -> SystemMessage:
    """The head as a system message (one marked text block when ``marker`` is given)."""
    if marker is None:
        return SystemMessage(content=head)
    return SystemMessage(content=[{"type": "text", "text": head, "cache_control": dict(marker)}])


_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _mark_openai(messages: list[Any]) -> list[Any]:
    """The messages with an explicit ``prompt_cache_breakpoint`` on the last content part that
    can carry one (never assistant content), placed by ``runcontext.adapters.openai``'s rule;
    langchain-openai sends a content block's ``prompt_cache_breakpoint`` as it is, on Chat
    Completions and on the Responses API alike."""
    views = [
        {"role": getattr(m, "role", None) or _ROLES.get(m.type, m.type), "content": m.content}
        for m in messages
    ]
    found = _chat_breakpoint(views, _OPENAI_BREAKPOINT)
    if found is None:
        return messages
    index, marked = found
    marked_messages = list(messages)
    marked_messages[index] = messages[index].model_copy(update={"content": marked["content"]})
    return marked_messages


def _system_breakpoints(system: SystemMessage | None) -> int:
    if system is None or isinstance(system.content, str):
        return 0
    return sum(_breakpoints_in(block) for block in system.content if isinstance(block, dict))


def _mark_conversation(
    messages: list[Any], marker: Any, tools: Sequence[Any], used: int
) -> tuple[list[Any], int]:
    """Put ``marker`` on the last block of the conversation that can carry one, within the
    API's budget of four breakpoints (``used`` by the system message, plus the tools' and the
    conversation's own); return the messages and the breakpoints now in use."""
    for tool in tools:
        extras = tool if isinstance(tool, dict) else getattr(tool, "extras", None)
        if isinstance(extras, dict) and extras.get("cache_control") is not None:
            used += 1
    views = [{"role": "message", "content": message.content} for message in messages]
    for view in views:
        if not isinstance(view["content"], str):
            used += sum(_breakpoints_in(b) for b in view["content"] if isinstance(b, dict))
    if used >= ANTHROPIC_MAX_BREAKPOINTS:
        return messages, used
    found = _conversation_breakpoint(views, len(views))
    if found is None:
        return messages, used
    index, marked = found
    # The adapter's marker is {"type": "ephemeral"}; carry the caching middleware's own (its
    # ttl) instead, on the one block the adapter marked: the block that is not the caller's.
    original = messages[index].content
    theirs = () if isinstance(original, str) else tuple(map(id, original))
    content = [
        block if id(block) in theirs else {**block, "cache_control": dict(marker)}
        for block in marked["content"]
    ]
    marked_messages = list(messages)
    marked_messages[index] = messages[index].model_copy(update={"content": content})
    return marked_messages, used + 1


def _inner_middleware(handler: Callable[..., Any], kind: type | str) -> bool:
    """Whether a middleware of class ``kind`` (a class, or a class name for one whose package
    may be missing) is in the handler chain below this one.

    The agent composes middleware into closures (``inner(req, handler)``), wrapped by
    ``traceable`` (``__wrapped__``) around bound methods (``__self__``); follow exactly those.
    """
    pending: list[Any] = [handler]
    seen: set[int] = set()
    while pending and len(seen) < _ORDER_CHECK_LIMIT:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        owner = getattr(item, "__self__", None)
        if owner is not None and (
            type(owner).__name__ == kind if isinstance(kind, str) else isinstance(owner, kind)
        ):
            return True
        for attribute in ("__wrapped__", "__func__", "func"):
            inner = getattr(item, attribute, None)
            if callable(inner):
                pending.append(inner)
        for cell in getattr(item, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if callable(value) and not isinstance(value, type):
                pending.append(value)
    return False


def _openai_dict() -> Callable[[Any], dict[str, Any]] | None:
    try:
        from langchain_openai.chat_models.base import _convert_message_to_dict
    except ImportError:  # pragma: no cover - the extra installs langchain-openai
        return None
    convert: Callable[[Any], dict[str, Any]] = _convert_message_to_dict
    return convert


def _transcript_messages(conversation: Sequence[Any]) -> list[dict[str, Any]]:
    """The conversation as it is sent to OpenAI Chat Completions: langchain-openai's own
    conversion of each message, without cache markers (docs/INTEGRATIONS.md, *LangChain*)."""
    convert = _openai_dict()
    if convert is None:
        converted: list[dict[str, Any]] = convert_to_openai_messages(list(conversation))
    else:
        converted = [convert(message) for message in conversation]
    return [_without_markers(message) for message in converted]


def _without_markers(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(part, dict) and any(key in part for key in _CACHE_MARKERS) for part in content
    ):
        return message
    parts = [
        {k: v for k, v in part.items() if k not in _CACHE_MARKERS}
        if isinstance(part, dict)
        else part
        for part in content
    ]
    return {**message, "content": parts}


def _usage(response: Any) -> Usage | None:
    """What the provider billed, as LangChain reports it on the reply (``usage_metadata``:
    ``input_tokens`` counts cache reads and writes, as runcontext's ``Usage.input`` does)."""
    replies = _reply_messages(response)
    metadata = getattr(replies[-1], "usage_metadata", None) if replies else None
    if not metadata:
        return None
    try:
        details = metadata.get("input_token_details") or {}
        return Usage(
            input=metadata["input_tokens"],
            output=metadata.get("output_tokens"),
            cache_read=details.get("cache_read", 0) or 0,
            cache_write=details.get("cache_creation", 0) or 0,
        )
    except (KeyError, TypeError, ValueError) as error:
        warnings.warn(
            f"the model answered but its billed usage could not be read ({error}); the run is "
            "recorded without it, and the counter is not calibrated by it",
            UnreadableUsageWarning,
            stacklevel=2,
        )
        return None


def _record_edit(
    session: Session,
    meter: Meter,
    request: Any,
    messages: list[dict[str, Any]],
    context: RunContext,
    count: Any,
) -> None:
    """Record, before the model is called, the compaction (``SummarizationMiddleware``) or
    elision (``ContextEditingMiddleware``) that turns the recorded conversation into
    ``messages``, comparing the whole conversation (``Session.reconcile``); refuse any other
    change (``ConversationMismatchError``, ``SeedMismatchError``) so that nothing is sent.

    An edit is taken only with the mark its middleware leaves on the messages it wrote (a
    summary's ``additional_kwargs["lc_source"]``, a cleared message's
    ``response_metadata["context_editing"]``), so a different conversation is still refused.
    With a counter, a compaction carries the conversation's counts before and after, and the
    counter forgets the calibrated prefixes the edit replaced."""
    summarised = edited = False
    for message in request.messages:
        summarised |= message.additional_kwargs.get("lc_source") == "summarization"
        edited |= "context_editing" in message.response_metadata
    try:
        session.check_conversation(messages)  # the seed, the length, the last message
        refusal = None
    except ConversationMismatchError as error:  # and SeedMismatchError
        refusal = error
    if refusal is not None and not summarised:
        raise _explained(refusal)
    recorded = session.messages()
    if messages[: len(recorded)] == recorded:
        return  # the recorded conversation, continued
    if refusal is None and not edited:
        index = next(i for i, m in enumerate(recorded) if messages[i] != m)
        raise _explained(
            ConversationMismatchError(
                f"messages[{index}] differs from the recorded message {index}, and no "
                "SummarizationMiddleware or ContextEditingMiddleware made the change",
                path=session.path,
                line=None,
                index=index,
            )
        )
    before = after = quality = None
    counted = meter.count(recorded, context)
    if counted is not None and count is not None:
        before, after, quality = counted.conversation, count.conversation, count.quality
    try:
        edit = session.reconcile(
            messages, tokens_before=before, tokens_after=after, quality=quality
        )
    except ConversationMismatchError as error:
        raise _explained(refusal or error) from error
    if edit is not None and meter.counter is not None:
        meter.counter.compacted(edit.start if isinstance(edit, Compaction) else min(edit.indices))


def _explained(error: ConversationMismatchError) -> ConversationMismatchError:
    error.add_note(
        "nothing was sent; with LangChain the usual causes are an agent that does not "
        "remember the conversation (no checkpointer, or another thread), a "
        "SummarizationMiddleware whose keep= summarised the agent's last reply too (keep more "
        "messages than one agent turn adds), or a middleware that changed the conversation "
        "without a SummarizationMiddleware or ContextEditingMiddleware mark (docs/"
        "INTEGRATIONS.md, LangChain, *Compaction and context editing*)"
    )
    return error


def _finish(
    session: Session | None,
    meter: Meter,
    count: Any,
    messages: list[dict[str, Any]],
    context: RunContext,
    sent: Any,
    response: Any,
) -> None:
    """Settle the bill and record the model call: the conversation, the context's envelope,
    the reply and its tokens; if the transcript refuses it, the error carries the reply
    (``RunNotRecordedError``)."""
    if session is None:
        meter.settle(count, _usage(response))
        return
    reply = None
    try:
        replies = _reply_messages(response)
        reply = _transcript_messages(replies[:1])[0] if replies else None
        tokens = meter.settle(count, _usage(response))
        session.record_run(messages, context, reply, tokens=tokens)
    except Exception as error:
        raise run_not_recorded(
            session,
            error,
            messages=messages,
            context=context,
            request=sent,
            reply=reply,
            response=response,
        ) from error


def _reply_messages(response: Any) -> list[Any]:
    if isinstance(response, AIMessage):
        return [response]
    model_response = getattr(response, "model_response", response)
    result = getattr(model_response, "result", None) or []
    return [message for message in result if isinstance(message, AIMessage)]
