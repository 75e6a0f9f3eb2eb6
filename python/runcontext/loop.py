"""The run loop: splice the context into the request, call the backend, record the run.

``loop.run(messages, context=...)`` keeps the context out of the conversation: the request is
``[head, *messages, tail]``, the outcome's conversation is ``[*messages, reply]``, and the
session (if any) records the conversation plus one ``run-context`` envelope per run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runcontext._core import RunContext
from runcontext._splice import check_messages, splice
from runcontext.session import Run, Session

__all__ = ["Backend", "Counter", "Loop", "RunOutcome"]

Backend = Callable[[list[Any]], Any]
"""Takes the spliced request (a list of message mappings) and returns the reply message (a
mapping with a ``role``), or, for :meth:`Loop.arun`, an awaitable of it. Adapt your SDK's
response to a message dict inside it."""

Counter = Callable[[str], int]
"""Counts the tokens of a text, e.g. :func:`runcontext.counters.tiktoken_counter`."""


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced.

    ``messages`` is the conversation: the caller's messages plus the reply, never the context.
    ``request`` is what the backend was given. ``context_tokens`` is the head plus tail token
    count by the loop's counter, or ``None`` without one. ``run`` is the recorded run, or
    ``None`` without a session.
    """

    messages: list[Any]
    request: list[Any]
    reply: Mapping[str, Any]
    context_digest: str
    context_tokens: int | None
    run: Run | None


class Loop:
    """Runs a conversation against ``backend`` with a fresh context each run.

    ``session`` records every run (see :class:`runcontext.Session`); ``counter`` weighs the
    context's head and tail text once per distinct context digest.
    """

    def __init__(
        self,
        backend: Backend,
        session: Session | None = None,
        counter: Counter | None = None,
    ) -> None:
        if not callable(backend):
            raise TypeError(f"backend: expected a callable, got {type(backend).__name__}")
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"session: expected a Session, got {type(session).__name__}")
        if counter is not None and not callable(counter):
            raise TypeError(f"counter: expected a callable, got {type(counter).__name__}")
        self.backend = backend
        self.session = session
        self.counter = counter
        self._token_counts: dict[str, int] = {}  # context digest -> head + tail tokens

    def run(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """Splice, call the backend, record the run; the caller's list is not mutated."""
        context, request = self._prepare(messages, context)
        reply = self.backend(request)
        if inspect.isawaitable(reply):
            if inspect.iscoroutine(reply):
                reply.close()  # never awaited: close it rather than leak a warning
            raise TypeError("the backend returned an awaitable; use `await loop.arun(...)`")
        run = None
        if self.session is not None:
            run = self.session.record_run(messages, context, _reply(reply))
        return self._outcome(messages, context, request, _reply(reply), run)

    async def arun(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """As :meth:`run`, awaiting the backend (which may also be a plain callable).

        The transcript append runs in a worker thread, so waiting for the file lock never
        blocks the event loop.
        """
        context, request = self._prepare(messages, context)
        reply = self.backend(request)
        if inspect.isawaitable(reply):
            reply = await reply
        run = None
        if self.session is not None:
            run = await asyncio.to_thread(self.session.record_run, messages, context, _reply(reply))
        return self._outcome(messages, context, request, _reply(reply), run)

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
    ) -> tuple[RunContext, list[Any]]:
        check_messages(messages)
        if context is None:
            context = RunContext()
        elif not isinstance(context, RunContext):
            raise TypeError(f"context: expected a RunContext or None, got {type(context).__name__}")
        if self.session is not None:
            # Refuse before spending a request, not after.
            self.session.check_seed(messages)
            if len(messages) < self.session.message_count:
                raise ValueError(
                    f"messages: the conversation has {len(messages)} messages but the "
                    f"transcript already records {self.session.message_count}; pass the whole "
                    "conversation (a transcript is append-only)"
                )
        return context, splice(messages, context)

    def _outcome(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext,
        request: list[Any],
        reply: Mapping[str, Any],
        run: Run | None,
    ) -> RunOutcome:
        return RunOutcome(
            messages=[*messages, reply],
            request=request,
            reply=reply,
            context_digest=context.digest,
            context_tokens=self.context_tokens(context),
            run=run,
        )


def _reply(reply: object) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping) or "role" not in reply:
        raise TypeError(
            "the backend must return the reply as a message mapping with a 'role' (convert "
            f"the SDK's response inside the backend), got {type(reply).__name__}"
        )
    return reply
