"""The run loop: build the request with the context, call the backend, record the run.

``loop.run(messages, context=...)`` keeps the context out of the conversation: the request is
built by the loop's adapter (``[head, *messages, tail]`` by default, or an SDK request body from
:mod:`runcontext.adapters`), the outcome's conversation is ``[*messages, reply]``, and the
session (if any) records the conversation plus one ``run-context`` envelope per run.

Everything that can fail without the backend is checked before it is called (the session can
append, the conversation continues the transcript, the request is counted and fits its budget,
the adapter accepts the messages), so a request is never spent on a run that cannot be
recorded, nor sent to fail at the provider for its size (docs/BUDGET.md).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runcontext._checks import check_context, check_messages
from runcontext._core import RunContext
from runcontext._splice import splice, spliced
from runcontext.adapters.caching import CacheWarning, provider_of, uncached_reason
from runcontext.adapters.openai import openai_prompt_caching
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget, BudgetExceededError, Spent
from runcontext.budget.meter import Meter
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import UnreadableUsageWarning, Usage, read_usage
from runcontext.transcript import (
    AsyncSession,
    Compaction,
    Elision,
    Run,
    RunNotRecordedError,
    Session,
)

__all__ = ["MAX_COMPACTIONS", "Adapter", "Backend", "Counter", "Loop", "RunOutcome"]

MAX_COMPACTIONS = 3
"""How many times one run asks ``on_over_budget`` for a smaller conversation."""

Adapter = Callable[[Sequence[Mapping[str, Any]], RunContext], Any]
"""Builds the request from the conversation and the run's context: :func:`runcontext.splice`
(the default), or an adapter from :mod:`runcontext.adapters` with its options bound, e.g.
``functools.partial(runcontext.adapters.anthropic_messages, cache=True)``."""

Backend = Callable[[Any], Any]
"""Takes the request the adapter built and returns the reply message (a mapping with a
``role``), or, for :meth:`Loop.arun`, an awaitable of it. Adapt your SDK's response to a
message dict inside it."""

Counter = Callable[[str], int]
"""Counts the tokens of a text, e.g. :func:`runcontext.tokenizers.tiktoken_counter`."""

Compactor = Callable[[BudgetExceededError], Sequence[Mapping[str, Any]] | None]
"""Given the refusal of a request over its window, returns a smaller conversation to try
instead (``error.messages`` is the one that did not fit), or ``None`` to give up."""


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced.

    ``messages`` is the conversation: the messages sent (the caller's, or what
    ``on_over_budget`` made of them) plus the reply, never the context. ``request`` is what the
    backend was given (the adapter's output). ``context_tokens`` is the head plus tail token
    count by the loop's counter, or ``None`` without one; ``count`` the whole request's count
    by part with its quality, or ``None`` without a counter. ``response`` is what the backend
    returned (the SDK's response when the loop has a ``reply`` converter, else the reply) and
    ``usage`` what it billed, read from it, or ``None``. ``run`` is the recorded run, or
    ``None`` without a session. ``uncached`` says why the provider caches nothing of this
    request, when the loop can tell: its stable prefix (tools, head and conversation, by the
    count) is below the minimum cacheable length of the loop's ``model``
    (:func:`runcontext.adapters.uncached_reason`), the common reason a short session shows
    no cache reads; ``None`` otherwise.
    """

    messages: list[Any]
    request: Any
    reply: Mapping[str, Any]
    context_digest: str
    context_tokens: int | None
    run: Run | None
    count: RequestCount | None = None
    usage: Usage | None = None
    response: Any = None
    uncached: str | None = None


@dataclass(frozen=True)
class _Prepared:
    messages: Sequence[Mapping[str, Any]]
    context: RunContext
    request: Any
    count: RequestCount | None
    uncached: str | None = None
    # With a session: the (tokens before, tokens after, quality) of the compaction the run
    # records in the same append, when on_over_budget shrank the conversation; else None.
    edit_counts: tuple[int, int, Literal["exact", "calibrated", "estimated"]] | None = None

    @property
    def tokens(self) -> int | None:
        return None if self.count is None else self.count.context


@dataclass(frozen=True)
class _Answered:
    response: Any
    reply: Mapping[str, Any]
    usage: Usage | None


class Loop:
    """Runs a conversation against ``backend`` with a fresh context each run.

    ``adapter(messages, context)`` builds the request the backend gets (:func:`runcontext.splice`
    by default); ``session`` records every run (see :class:`runcontext.Session`).

    ``counter`` (a ``Callable[[str], int]`` or a :class:`runcontext.budget.RequestCounter`)
    counts every request before it is sent: the head and tail once per context digest, the
    conversation calibrated by what the provider billed for the previous request
    (docs/BUDGET.md). ``model`` names the model the backend calls and ``tools`` the tool
    declarations it sends, for the count. ``budget`` (a :class:`runcontext.budget.Budget`, or
    a mapping from model names to budgets) is checked with the count before the backend is
    called; ``on_over_budget`` may return a smaller conversation to try instead.

    ``reply`` converts what the backend returns into the reply message when the backend
    returns the SDK's response as it is (``reply=runcontext.adapters.replies.openai_chat_reply``);
    the billed usage is then read from the response (:func:`runcontext.budget.read_usage`).
    """

    def __init__(
        self,
        backend: Backend,
        session: Session | AsyncSession | None = None,
        counter: Counter | RequestCounter | None = None,
        adapter: Adapter = splice,
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        on_over_budget: Compactor | None = None,
        reply: Callable[[Any], Mapping[str, Any]] | None = None,
    ) -> None:
        if not callable(backend):
            raise TypeError(f"backend: expected a callable, got {type(backend).__name__}")
        if isinstance(session, AsyncSession):
            session = session.session  # arun already appends in a worker thread
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"session: expected a Session, got {type(session).__name__}")
        if not callable(adapter):
            raise TypeError(
                f"adapter: expected a callable such as runcontext.splice or "
                f"runcontext.adapters.openai_chat, got {type(adapter).__name__}"
            )
        meter = Meter(counter, budget, model=model, tools=tools, session=session)
        if on_over_budget is not None and not callable(on_over_budget):
            raise TypeError(
                f"on_over_budget: expected a callable, got {type(on_over_budget).__name__}"
            )
        if reply is not None and not callable(reply):
            raise TypeError(f"reply: expected a callable, got {type(reply).__name__}")
        if adapter is splice and model is not None and openai_prompt_caching(model):
            warnings.warn(
                CacheWarning(
                    f"Loop(model={model!r}) with the default adapter: runcontext.splice sends no "
                    f"prompt_cache_breakpoint, and {model!r} reads its prompt cache only at a "
                    "breakpoint, so the provider's implicit one may land on the tail and read "
                    "nothing; pass adapter=functools.partial(runcontext.adapters.openai_chat, "
                    f"model={model!r}) (docs/PLACEMENT.md)"
                ),
                stacklevel=2,
            )
        self.backend = backend
        self.session = session
        self._meter = meter  # the one budget gate: count, check, settle (budget/meter.py)
        self.counter: RequestCounter | None = meter.counter
        self.adapter = adapter
        self.model = model
        self.tools = tools
        self.budget: Budget | None = meter.budget
        self.on_over_budget = on_over_budget
        self.reply = reply

    def run(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """Build the request, call the backend, record the run; the caller's list is not
        mutated."""
        prepared = self._prepare(messages, context)
        response = self.backend(prepared.request)
        if inspect.isawaitable(response):
            if inspect.iscoroutine(response):
                response.close()  # never awaited: close it rather than leak a warning
            raise TypeError("the backend returned an awaitable; use `await loop.arun(...)`")
        answered = self._answered_or_kept(prepared, response)
        if self.session is None:
            self._tokens(prepared, answered)  # calibrates and accounts
            return _outcome(prepared, answered, None)
        try:
            tokens = self._tokens(prepared, answered)
            run = self.session.record_run(
                prepared.messages,
                prepared.context,
                answered.reply,
                tokens=tokens,
                edits="refuse" if prepared.edit_counts is None else "record",
                edit_counts=prepared.edit_counts,
            )
        except Exception as error:
            raise _not_recorded(self.session, _outcome(prepared, answered, None), error) from error
        return _outcome(prepared, answered, run)

    async def arun(
        self, messages: Sequence[Mapping[str, Any]], *, context: RunContext | None = None
    ) -> RunOutcome:
        """As :meth:`run`, awaiting the backend (which may also be a plain callable).

        The transcript append runs in a worker thread, so waiting for the file lock never
        blocks the event loop.
        """
        import asyncio  # imported by async code only, as in runcontext.transcript.async_session

        prepared = self._prepare(messages, context)
        response = self.backend(prepared.request)
        if inspect.isawaitable(response):
            response = await response
        answered = self._answered_or_kept(prepared, response)
        if self.session is None:
            self._tokens(prepared, answered)  # calibrates and accounts
            return _outcome(prepared, answered, None)
        try:
            tokens = self._tokens(prepared, answered)
            run = await asyncio.to_thread(
                self.session.record_run,
                prepared.messages,
                prepared.context,
                answered.reply,
                tokens=tokens,
                edits="refuse" if prepared.edit_counts is None else "record",
                edit_counts=prepared.edit_counts,
            )
        except Exception as error:
            raise _not_recorded(self.session, _outcome(prepared, answered, None), error) from error
        return _outcome(prepared, answered, run)

    def context_tokens(self, context: RunContext) -> int | None:
        """Tokens of ``context``'s head plus tail text by the counter, cached by digest."""
        if self.counter is None:
            return None
        head, tail = self.counter.count_context(context)
        return head + tail

    def count_request(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext | None = None
    ) -> RequestCount | None:
        """The count the next run would make of ``messages`` with ``context``, or ``None``
        without a counter (it is not checked against the budget)."""
        if self.counter is None:
            return None
        check_messages(messages, items=True)
        return self._meter.count(messages, context)

    def spent(self) -> Spent:
        """What the session has used so far: billed input (or the count, for runs billed
        nothing), its cost at the budget's price, and seconds since this loop's first run.
        A resumed session's recorded runs count."""
        return self._meter.spent()

    def _prepare(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext | None
    ) -> _Prepared:
        """Everything before the backend call, so that a failure costs no request.

        With a session, the messages it records are not checked again (they were when they
        were recorded; the session's own checks compare message 0 and the last recorded one):
        a run costs the new messages, not the conversation (docs/TRANSCRIPT.md, *The run
        loop*)."""
        recorded = 0 if self.session is None else self.session.message_count
        check_messages(messages, items=True, start=max(recorded - 1, 0))
        context = check_context(context) or RunContext()
        count = self._checked_count(messages, context)
        first: RequestCount | None = None  # the count before on_over_budget shrank it
        if count is not None and self.budget is not None:
            for _ in range(MAX_COMPACTIONS):
                try:
                    self._meter.check(count, messages)
                    break
                except BudgetExceededError as error:
                    if error.reason != "window" or self.on_over_budget is None:
                        raise
                    smaller = self.on_over_budget(error)
                    if smaller is None:
                        raise
                    check_messages(smaller, items=True)
                    recount = self._checked_count(smaller, context)
                    assert recount is not None
                    if recount.total >= count.total:
                        refusal = BudgetExceededError(
                            error.budget, recount, "window", error.limit, recount.total, smaller
                        )
                        refusal.add_note(
                            f"on_over_budget returned a conversation of {recount.total:,} "
                            f"tokens, not fewer than the {count.total:,} it was given"
                        )
                        raise refusal from error
                    first = first or count
                    messages, count = smaller, recount
            else:
                self._meter.check(count, messages)  # the last compaction's count: no more tries
        edit_counts = None
        if first is not None and count is not None:
            edit_counts = (first.conversation, count.conversation, count.quality)
        if self.session is not None:
            # A shrunk conversation is checked as the run will record it: with the compaction
            # that the same append writes first, so neither is written without the other.
            edit = check_run(
                self.session, messages, edits="refuse" if edit_counts is None else "record"
            )
            if edit is not None and isinstance(self.counter, RequestCounter):
                self.counter.compacted(
                    edit.start if isinstance(edit, Compaction) else min(edit.indices)
                )
        self._meter.check(None, messages)  # starts the session's clock on the first run
        return _Prepared(
            messages=messages,
            context=context,
            # The default adapter, without checking each message again.
            request=(
                spliced(messages, context)
                if self.adapter is splice
                else self.adapter(messages, context)
            ),
            count=count,
            uncached=self._uncached(count),
            edit_counts=edit_counts,
        )

    def _uncached(self, count: RequestCount | None) -> str | None:
        """Why the provider of the loop's model caches nothing of a request of ``count``, if
        the prefix is below the model's minimum (known only with a counter and a model)."""
        if count is None or self.model is None:
            return None
        provider = provider_of(self.model)
        if provider is None:
            return None
        return uncached_reason(provider, self.model, count.head + count.conversation + count.tools)

    def _checked_count(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext
    ) -> RequestCount | None:
        return self._meter.count(messages, context)

    def _answered_or_kept(self, prepared: _Prepared, response: Any) -> _Answered:
        """:meth:`_answered`; with a session, a reply that is not a message (from the backend
        or the ``reply`` converter) raises :class:`RunNotRecordedError` carrying the response,
        which was paid for."""
        try:
            return self._answered(response)
        except Exception as error:
            if self.session is None:
                raise
            raise run_not_recorded(
                self.session,
                error,
                messages=prepared.messages,
                context=prepared.context,
                request=prepared.request,
                reply=None,
                response=response,
            ) from error

    def _answered(self, response: Any) -> _Answered:
        """The reply and billed usage of what the backend returned; never raises for a usage
        it cannot read (the reply is what was paid for)."""
        if self.reply is None:
            return _Answered(response=response, reply=_reply(response), usage=None)
        reply = _reply(self.reply(response))
        try:
            usage = read_usage(response)
        except (TypeError, ValueError) as error:
            # None, malformed or implausible (beyond MAX_TOKEN_COUNT): the reply was paid for
            # and is kept; the usage is left out of the record and of the calibration.
            warnings.warn(
                f"the backend answered but its billed usage could not be read ({error}); the "
                "run is recorded without it, and the counter is not calibrated by it",
                UnreadableUsageWarning,
                stacklevel=4,  # the caller of run(): run, _answered_or_kept, _answered
            )
            usage = None
        return _Answered(response=response, reply=reply, usage=usage)

    def _tokens(self, prepared: _Prepared, answered: _Answered) -> dict[str, Any] | None:
        """Learn from the billing, account for the run, and make its ``tokens`` record."""
        return self._meter.settle(prepared.count, answered.usage)


def _outcome(prepared: _Prepared, answered: _Answered, run: Run | None) -> RunOutcome:
    return RunOutcome(
        messages=[*prepared.messages, answered.reply],
        request=prepared.request,
        reply=answered.reply,
        context_digest=prepared.context.digest,
        context_tokens=prepared.tokens,
        run=run,
        count=prepared.count,
        usage=answered.usage,
        response=answered.response,
        uncached=prepared.uncached,
    )


def check_run(
    session: Session,
    messages: Sequence[Mapping[str, Any]],
    edits: Literal["refuse", "record"] = "refuse",
) -> Compaction | Elision | None:
    """Raise, without writing, what :meth:`Session.record_run` would raise for ``messages``
    before any reply is known: the checks made before a model is called, by :class:`Loop` and
    by every integration (docs/INTEGRATIONS.md, *Nothing paid is lost*).

    :meth:`Session.record_run` makes them again under its lock; another writer could still
    append in between, but a run this process can tell is unrecordable is refused now. The
    store is read only where that is local (:meth:`Session.check_run`): over PostgreSQL the
    checks cost no round trip.
    """
    # closed, read-only, a torn last line; the seed, the length, the last recorded message;
    # every new message has a record form; with edits="record", as after the edit it plans
    return session.check_run(messages, edits=edits)


def run_not_recorded(
    session: Session,
    error: Exception,
    *,
    messages: Sequence[Any],
    context: RunContext,
    request: Any,
    reply: Mapping[str, Any] | None,
    response: Any,
) -> RunNotRecordedError:
    """The error for a run the model answered but the transcript did not take: its outcome
    carries the reply (``reply``, the transcript form; ``response``, what the model returned)
    and the ``request`` that was sent; raise it ``from error``. A reply without a transcript
    form is ``{}`` in the outcome, and only ``response`` has it."""
    outcome = RunOutcome(
        messages=[*messages] if reply is None else [*messages, reply],
        request=request,
        reply={} if reply is None else reply,
        context_digest=context.digest,
        context_tokens=None,
        run=None,
        response=response,
    )
    return _not_recorded(session, outcome, error)


def _not_recorded(session: Session, outcome: RunOutcome, error: Exception) -> RunNotRecordedError:
    return RunNotRecordedError(
        f"the backend answered but the run could not be recorded ({type(error).__name__}: "
        f"{error}); the reply and the request are in this error's outcome "
        "(error.outcome.messages ends with the reply)",
        path=session.path,
        outcome=outcome,
    )


def _reply(reply: object) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping) or ("role" not in reply and "type" not in reply):
        raise TypeError(
            "the backend must return the reply as a message mapping with a 'role' (or, for a "
            "Responses item, a 'type'; convert the SDK's response inside the backend), got "
            f"{type(reply).__name__}"
        )
    return reply
