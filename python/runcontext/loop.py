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
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runcontext._checks import check_context, check_messages
from runcontext._core import RunContext
from runcontext._splice import splice, spliced
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget, BudgetExceededError, Spent
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import UnreadableUsageWarning, Usage, read_usage
from runcontext.transcript import AsyncSession, Compaction, Run, RunNotRecordedError, Session

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
    ``None`` without a session.
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


@dataclass(frozen=True)
class _Prepared:
    messages: Sequence[Mapping[str, Any]]
    context: RunContext
    request: Any
    count: RequestCount | None

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
        if counter is not None and not isinstance(counter, RequestCounter):
            if not callable(counter):
                raise TypeError(f"counter: expected a callable, got {type(counter).__name__}")
            counter = RequestCounter(counter)
        if not callable(adapter):
            raise TypeError(
                f"adapter: expected a callable such as runcontext.splice or "
                f"runcontext.adapters.openai_chat, got {type(adapter).__name__}"
            )
        if model is not None and (not isinstance(model, str) or not model):
            raise TypeError(f"model: expected a non-empty model name, got {model!r}")
        if isinstance(budget, Mapping):
            if model is None or model not in budget:
                raise ValueError(
                    f"budget: no Budget for the model {model!r} among {sorted(budget)!r}; "
                    "name the loop's model (Loop(..., model=...)) and give it a budget"
                )
            budget = budget[model]
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget: expected a Budget, got {type(budget).__name__}")
        if budget is not None and counter is None:
            raise ValueError(
                "budget: a budget needs a counter to count requests with "
                "(Loop(..., counter=runcontext.tokenizers.tiktoken_counter(), budget=...))"
            )
        if on_over_budget is not None and not callable(on_over_budget):
            raise TypeError(
                f"on_over_budget: expected a callable, got {type(on_over_budget).__name__}"
            )
        if reply is not None and not callable(reply):
            raise TypeError(f"reply: expected a callable, got {type(reply).__name__}")
        self.backend = backend
        self.session = session
        self.counter: RequestCounter | None = counter
        self.adapter = adapter
        self.model = model
        self.tools = tools
        self.budget: Budget | None = budget
        self.on_over_budget = on_over_budget
        self.reply = reply
        self._spent: Spent | None = None  # what the session used; read from it on first need
        self._started: float | None = None  # time.monotonic() of this loop's first run

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
                prepared.messages, prepared.context, answered.reply, tokens=tokens
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
        return self.counter.count_request(
            messages, context, model=self.model or _UNNAMED, tools=self.tools
        )

    def spent(self) -> Spent:
        """What the session has used so far: billed input (or the count, for runs billed
        nothing), its cost at the budget's price, and seconds since this loop's first run.
        A resumed session's recorded runs count."""
        if self._spent is None:
            self._spent = _recorded_spent(self.session, self.budget)
        seconds = 0.0 if self._started is None else time.monotonic() - self._started
        return Spent(input=self._spent.input, cost=self._spent.cost, seconds=seconds)

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
        if count is not None and self.budget is not None:
            for _ in range(MAX_COMPACTIONS):
                try:
                    self.budget.check(count, self.spent())
                    break
                except BudgetExceededError as error:
                    error.messages = messages
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
                    if self.session is not None:
                        self._record_compaction(smaller, count, recount)
                    messages, count = smaller, recount
            else:
                try:  # the last compaction's count: no more tries
                    self.budget.check(count, self.spent())
                except BudgetExceededError as error:
                    error.messages = messages
                    raise
        if self.session is not None:
            check_run(self.session, messages)
        if self._started is None:
            self._started = time.monotonic()
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
        )

    def _record_compaction(
        self, smaller: Sequence[Mapping[str, Any]], before: RequestCount, after: RequestCount
    ) -> None:
        """Record, before anything is sent, the compaction or elision that turns the recorded
        conversation into the one ``on_over_budget`` returned (``Session.reconcile``), with the
        conversation's counts before and after, so the transcript continues; and forget the
        calibrated prefixes it replaced."""
        assert self.session is not None
        edit = self.session.reconcile(
            smaller,
            tokens_before=before.conversation,
            tokens_after=after.conversation,
            quality=after.quality,
        )
        if edit is not None and isinstance(self.counter, RequestCounter):
            start = edit.start if isinstance(edit, Compaction) else min(edit.indices)
            self.counter.compacted(start)

    def _checked_count(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext
    ) -> RequestCount | None:
        if self.counter is None:
            return None
        return self.counter.count_request(
            messages, context, model=self.model or _UNNAMED, tools=self.tools
        )

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
        count = prepared.count
        if count is None:
            return None
        if answered.usage is not None and self.counter is not None:
            self.counter.calibrate(count, answered.usage)
        spent = self.spent()
        used = answered.usage or Usage(input=count.total)
        price = None if self.budget is None else self.budget.price
        self._spent = Spent(
            input=spent.input + used.input,
            cost=spent.cost + (0.0 if price is None else price.cost(used)),
        )
        limit = None if self.budget is None else self.budget.limit
        return count.record(answered.usage, limit=limit)


_UNNAMED = "(unnamed model)"  # the calibration key of a loop that names no model


def _recorded_spent(session: Session | None, budget: Budget | None) -> Spent:
    """The input and cost of a session's recorded runs (a resumed session's budget counts
    them)."""
    if session is None or budget is None:
        return Spent()
    if budget.max_session_input is None and budget.max_session_cost is None:
        return Spent()  # nothing to check them against: do not read every run
    total, cost = 0, 0.0
    for run in session.runs():
        tokens = run.tokens
        if tokens is None:
            continue
        # The counts as recorded (the transcript bounds them by 2**53 - 1, not by
        # MAX_TOKEN_COUNT: a run recorded elsewhere is summed, never refused).
        billed = tokens.get("billed")
        if billed is not None:
            prompt, output = billed["input"], billed.get("output")
            read, written = billed["cache_read"], billed["cache_write"]
        else:
            parts = ("head", "conversation", "tail", "tools")
            prompt, output, read, written = sum(tokens[p] for p in parts), None, 0, 0
        total += prompt
        if budget.price is not None:
            cost += budget.price._cost(prompt, output, read, written)
    return Spent(input=total, cost=cost)


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
    )


def check_run(session: Session, messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise, without writing, what :meth:`Session.record_run` would raise for ``messages``
    before any reply is known: the checks made before a model is called, by :class:`Loop` and
    by every integration (docs/INTEGRATIONS.md, *Nothing paid is lost*).

    :meth:`Session.record_run` makes them again under its lock; another writer could still
    append in between, but a run this process can tell is unrecordable is refused now. The
    store is read only where that is local (:meth:`Session.check_run`): over PostgreSQL the
    checks cost no round trip.
    """
    # closed, read-only, a torn last line; the seed, the length, the last recorded message;
    # every new message has a record form
    session.check_run(messages)


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
