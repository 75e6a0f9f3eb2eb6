"""LangChain v1 agents: ``RunContextMiddleware`` for ``create_agent(middleware=[...])``.

The head goes into the request's system message, the tail after the conversation, both
through ``request.override(...)`` inside ``wrap_model_call``: what a ``wrap_model_call``
middleware hands to its handler is sent to the model and never written back to the agent's
state, its checkpoints or its message list (``before_model`` would write it there). The
contract and the placement decisions are in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
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
from runcontext.adapters.anthropic import (
    ANTHROPIC_MAX_BREAKPOINTS,
    _breakpoints_in,
    _conversation_breakpoint,
)
from runcontext.integrations._turns import TurnContexts, check_session
from runcontext.loop import check_run, run_not_recorded
from runcontext.transcript.session import Session

__all__ = ["MiddlewareOrderWarning", "RunContextMiddleware"]

# The class name of langchain-anthropic's caching middleware, looked up by name so that this
# module works without langchain-anthropic installed.
_CACHING_MIDDLEWARE = "AnthropicPromptCachingMiddleware"
# How many functions the order check looks through in the handler chain (it follows closures
# of the framework's composed handlers, never arbitrary objects).
_ORDER_CHECK_LIMIT = 200


class MiddlewareOrderWarning(UserWarning):
    """``RunContextMiddleware`` runs outside ``AnthropicPromptCachingMiddleware``.

    The caching middleware then asks for automatic caching after the tail was added, and the
    API puts that breakpoint on the last block: the tail, which changes every turn. List the
    caching middleware first: ``middleware=[AnthropicPromptCachingMiddleware(),
    RunContextMiddleware(...)]``.
    """


# The agent's model is typed `Any` throughout: AgentMiddleware is generic over state, context
# and response types that a middleware serving every agent cannot name.
class RunContextMiddleware(AgentMiddleware):
    """Adds a :class:`runcontext.RunContext` to every model call of a LangChain agent.

    ``context_or_builder`` is a fixed ``RunContext`` or a ``ContextBuilder`` built once per
    agent turn (a turn is keyed on the last ``HumanMessage``: its id, or its position and
    content). ``session`` records each model call's conversation, context envelope and reply.
    Place it *after* ``AnthropicPromptCachingMiddleware`` in ``middleware=[...]``.
    """

    def __init__(self, context_or_builder: object, *, session: Session | None = None) -> None:
        super().__init__()
        self._turns = TurnContexts(context_or_builder)
        self._session = check_session(session)
        self._order_checked = False

    @property
    def diagnostics(self) -> tuple[Any, ...]:
        """The builder's diagnostics for the last context it built."""
        return self._turns.diagnostics

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> Any:
        self._check_order(request, handler)
        messages = None
        if self._session is not None:
            # Before the model is called: a run the transcript cannot take is never paid for.
            messages = _transcript_messages(request.messages)
            check_run(self._session, messages)
        context = self._turns.get(_turn_key(request))
        sent = _with_context(request, context)
        response = handler(sent)
        if self._session is not None:
            assert messages is not None
            _record(self._session, messages, context, sent, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        self._check_order(request, handler)
        messages = None
        if self._session is not None:
            messages = _transcript_messages(request.messages)
            await asyncio.to_thread(check_run, self._session, messages)
        context = await self._turns.aget(_turn_key(request))
        sent = _with_context(request, context)
        response = await handler(sent)
        if self._session is not None:
            assert messages is not None
            await asyncio.to_thread(_record, self._session, messages, context, sent, response)
        return response

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
        if _is_anthropic_chat(request.model) and _inner_caching_middleware(handler):
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
    messages: Sequence[BaseMessage] = request.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            # add_messages gives every message in the agent's state a uuid; a request built by
            # hand may have none, and then its position and content identify the turn.
            identity = message.id or digest({"content": message.content})
            return (index, identity)
    return (-1, None)


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


def _with_context(request: Any, context: RunContext) -> Any:
    """The request with the head in the system message and the tail after the conversation."""
    overrides: dict[str, Any] = {}
    head, tail = context.head_text, context.tail_text
    if head is not None:
        overrides["system_message"] = _with_head(request.system_message, head)
    messages = list(request.messages)
    settings = request.model_settings
    if "cache_control" in settings:
        # AnthropicPromptCachingMiddleware (outside this one) asked for automatic caching,
        # whose breakpoint the API puts on the last block: the tail. Put explicit ones where
        # runcontext.adapters.anthropic_messages puts them instead: on the last conversation
        # block, then on the head when the system message has none, within the budget.
        settings = dict(settings)
        marker = settings.pop("cache_control")
        system = overrides.get("system_message", request.system_message)
        in_system = _system_breakpoints(system)
        messages, used = _mark_conversation(messages, marker, request.tools, in_system)
        if head is not None and in_system == 0 and used < ANTHROPIC_MAX_BREAKPOINTS:
            overrides["system_message"] = _with_head(request.system_message, head, marker)
        overrides["model_settings"] = settings
    if tail is not None:
        # ChatAnthropic refuses a system message after the conversation ("multiple
        # non-consecutive system messages"), and so do most chat models; OpenAI Chat takes
        # one, which is where runcontext.adapters.openai_chat puts the tail.
        if _is_openai_chat(request.model):
            messages.append(SystemMessage(content=tail))
        else:
            messages.append(HumanMessage(content=[{"type": "text", "text": tail}]))
    overrides["messages"] = messages
    return request.override(**overrides)


def _with_head(system: SystemMessage | None, head: str, marker: Any = None) -> SystemMessage:
    """The system message with the head first (a marked text block when ``marker`` is given)."""
    block: dict[str, Any] = {"type": "text", "text": head}
    if marker is not None:
        block["cache_control"] = dict(marker)
    content = None if system is None else system.content
    if content is None or (isinstance(content, str) and not content.strip()):
        return SystemMessage(content=head if marker is None else [block])
    if isinstance(content, str):
        return SystemMessage(content=[block, {"type": "text", "text": content}])
    return SystemMessage(content=[block, *content])


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


def _inner_caching_middleware(handler: Callable[..., Any]) -> bool:
    """Whether an ``AnthropicPromptCachingMiddleware`` is in the handler chain below this one.

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
        if owner is not None and type(owner).__name__ == _CACHING_MIDDLEWARE:
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


def _transcript_messages(conversation: Sequence[Any]) -> list[dict[str, Any]]:
    """The conversation as the agent holds it, in OpenAI chat form (never the context)."""
    messages: list[dict[str, Any]] = convert_to_openai_messages(list(conversation))
    return messages


def _record(
    session: Session, messages: list[dict[str, Any]], context: RunContext, sent: Any, response: Any
) -> None:
    """Record one model call: the conversation, the context's envelope, and the model's reply;
    if the transcript refuses it, the error carries the reply (``RunNotRecordedError``)."""
    reply = None
    try:
        replies = _reply_messages(response)
        reply = convert_to_openai_messages(replies[0]) if replies else None
        session.record_run(messages, context, reply)
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
