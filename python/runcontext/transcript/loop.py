"""The run loop: build the request with the context, call the backend, record the run.

``loop.run(messages, context=...)`` keeps the context out of the conversation: the request is
built by the loop's adapter (``[head, *messages, tail]`` by default, or an SDK request body from
:mod:`runcontext.adapters`), the outcome's conversation is ``[*messages, reply]``, and the
session (if any) records the conversation plus one ``run-context`` envelope per run.

Everything that can fail without the backend is checked before it is called (the session can
append, the conversation continues the transcript, the counter weighs the context, the adapter
accepts the messages), so a request is never spent on a run that cannot be recorded.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runcontext._core import RunContext
from runcontext._splice import check_context, check_messages, splice
from runcontext.transcript.async_session import AsyncSession
from runcontext.transcript.errors import RunNotRecordedError
from runcontext.transcript.session import Run, Session

__all__ = ["Adapter", "Backend", "Counter", "Loop", "RunOutcome"]

Adapter = Callable[[Sequence[Mapping[str, Any]], RunContext], Any]
"""Builds the request from the conversation and the run's context: :func:`runcontext.splice`
(the default), or an adapter from :mod:`runcontext.adapters` with its options bound, e.g.
``functools.partial(runcontext.adapters.anthropic_messages, cache=True)``."""

Backend = Callable[[Any], Any]
"""Takes the request the adapter built and returns the reply message (a mapping with a
``role``), or, for :meth:`Loop.arun`, an awaitable of it. Adapt your SDK's response to a
message dict inside it."""

Counter = Callable[[str], int]
"""Counts the tokens of a text, e.g. :func:`runcontext.counters.tiktoken_counter`."""


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced.

    ``messages`` is the conversation: the caller's messages plus the reply, never the context.
    ``request`` is what the backend was given (the adapter's output). ``context_tokens`` is the
    head plus tail token count by the loop's counter, or ``None`` without one. ``run`` is the
    recorded run, or ``None`` without a session.
    """

    messages: list[Any]
    request: Any
    reply: Mapping[str, Any]
    context_digest: str
    context_tokens: int | None
    run: Run | None


@dataclass(frozen=True)
class _Prepared:
    context: RunContext
    request: Any
    tokens: int | None


class Loop:
    """Runs a conversation against ``backend`` with a fresh context each run.

    ``adapter(messages, context)`` builds the request the backend gets (:func:`runcontext.splice`
    by default); ``session`` records every run (see :class:`runcontext.Session`); ``counter``
    weighs the context's head and tail text once per distinct context digest.
    """

    def __init__(
        self,
        backend: Backend,
        session: Session | AsyncSession | None = None,
        counter: Counter | None = None,
        adapter: Adapter = splice,
    ) -> None:
        if not callable(backend):
            raise TypeError(f"backend: expected a callable, got {type(backend).__name__}")
        if isinstance(session, AsyncSession):
            session = session.session  # arun already appends in a worker thread
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"session: expected a Session, got {type(session).__name__}")
        if counter is not None and not callable(counter):
            raise TypeError(f"counter: expected a callable, got {type(counter).__name__}")
        if not callable(adapter):
            raise TypeError(
                f"adapter: expected a callable such as runcontext.splice or "
                f"runcontext.adapters.openai_chat, got {type(adapter).__name__}"
            )
        self.backend = backend
        self.session = session
        self.counter = counter
        self.adapter = adapter
        self._token_counts: dict[str, int] = {}  # context digest -> head + tail tokens

    def run(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """Build the request, call the backend, record the run; the caller's list is not
        mutated."""
        prepared = self._prepare(messages, context)
        reply = self.backend(prepared.request)
        if inspect.isawaitable(reply):
            if inspect.iscoroutine(reply):
                reply.close()  # never awaited: close it rather than leak a warning
            raise TypeError("the backend returned an awaitable; use `await loop.arun(...)`")
        reply = _reply(reply)
        run = None
        if self.session is not None:
            try:
                run = self.session.record_run(messages, prepared.context, reply)
            except Exception as error:
                raise _not_recorded(self.session, messages, prepared, reply, error) from error
        return _outcome(messages, prepared, reply, run)

    async def arun(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """As :meth:`run`, awaiting the backend (which may also be a plain callable).

        The transcript append runs in a worker thread, so waiting for the file lock never
        blocks the event loop.
        """
        import asyncio  # on first use: `import runcontext` stays cheap

        prepared = self._prepare(messages, context)
        reply = self.backend(prepared.request)
        if inspect.isawaitable(reply):
            reply = await reply
        reply = _reply(reply)
        run = None
        if self.session is not None:
            try:
                run = await asyncio.to_thread(
                    self.session.record_run, messages, prepared.context, reply
                )
            except Exception as error:
                raise _not_recorded(self.session, messages, prepared, reply, error) from error
        return _outcome(messages, prepared, reply, run)

    def context_tokens(self, context: RunContext) -> int | None:
        """Tokens of ``context``'s head plus tail text by the counter, cached by digest."""
        if self.counter is None:
            return None
        cached = self._token_counts.get(context.digest)
        if cached is not None:
            return cached
        total = 0
        for text in (context.head_text, context.tail_text):
            if text is None:
                continue
            count = self.counter(text)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise TypeError(f"counter: expected a token count (int >= 0), got {count!r}")
            total += count
        self._token_counts[context.digest] = total
        return total

    def _prepare(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext | None
    ) -> _Prepared:
        """Everything before the backend call, so that a failure costs no request."""
        check_messages(messages, items=True)
        context = check_context(context) or RunContext()
        if self.session is not None:
            # The checks record_run makes again under its lock; another writer could still
            # append in between, but a run this process can tell is unrecordable is refused now.
            self.session.check_appendable()  # closed, read-only, or a torn last line
            self.session.check_conversation(messages)  # seed, length, last recorded message
            self.session.check_recordable(messages)  # every new message has a record form
        tokens = self.context_tokens(context)
        return _Prepared(context=context, request=self.adapter(messages, context), tokens=tokens)


def _outcome(
    messages: Sequence[Mapping[str, Any]],
    prepared: _Prepared,
    reply: Mapping[str, Any],
    run: Run | None,
) -> RunOutcome:
    return RunOutcome(
        messages=[*messages, reply],
        request=prepared.request,
        reply=reply,
        context_digest=prepared.context.digest,
        context_tokens=prepared.tokens,
        run=run,
    )


def _not_recorded(
    session: Session,
    messages: Sequence[Mapping[str, Any]],
    prepared: _Prepared,
    reply: Mapping[str, Any],
    error: Exception,
) -> RunNotRecordedError:
    return RunNotRecordedError(
        f"the backend answered but the run could not be recorded ({type(error).__name__}: "
        f"{error}); the reply and the request are in this error's outcome "
        "(error.outcome.messages ends with the reply)",
        path=session.path,
        outcome=_outcome(messages, prepared, reply, None),
    )


def _reply(reply: object) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping) or ("role" not in reply and "type" not in reply):
        raise TypeError(
            "the backend must return the reply as a message mapping with a 'role' (or, for a "
            "Responses item, a 'type'; convert the SDK's response inside the backend), got "
            f"{type(reply).__name__}"
        )
    return reply
