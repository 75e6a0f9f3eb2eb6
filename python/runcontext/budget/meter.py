"""One budget gate for every caller that sends requests: count a request before it is sent,
refuse it if it does not fit, and settle it with what the provider billed.

``Loop`` and every integration hold a :class:`Meter`, so a budget means the same wherever it is
enforced: the same count (:class:`RequestCounter`, calibrated by the previous bill), the same
session caps over the same spend (a resumed session's recorded runs count), and the same
``tokens`` record in the transcript (docs/BUDGET.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runcontext._core import RunContext
from runcontext.budget.calibration import RequestCounter
from runcontext.budget.limits import Budget, BudgetExceededError, Spent
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import Usage
from runcontext.transcript.session import Session

__all__ = ["UNNAMED_MODEL", "Meter", "recorded_spent"]

UNNAMED_MODEL = "(unnamed model)"
"""The calibration key of requests whose model is not named."""


class Meter:
    """Counts, checks and settles the requests of one session.

    ``counter`` is a ``Callable[[str], int]`` or a :class:`RequestCounter`; ``budget`` a
    :class:`Budget`, or a mapping from model names to budgets (``model`` picks one). A budget
    needs a counter. ``session``, when given, is the transcript whose recorded runs the session
    caps count from.
    """

    def __init__(
        self,
        counter: Callable[[str], int] | RequestCounter | None = None,
        budget: Budget | Mapping[str, Budget] | None = None,
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        session: Session | None = None,
    ) -> None:
        if counter is not None and not isinstance(counter, RequestCounter):
            if not callable(counter):
                raise TypeError(f"counter: expected a callable, got {type(counter).__name__}")
            counter = RequestCounter(counter)
        if model is not None and (not isinstance(model, str) or not model):
            raise TypeError(f"model: expected a non-empty model name, got {model!r}")
        if isinstance(budget, Mapping):
            if model is None or model not in budget:
                raise ValueError(
                    f"budget: no Budget for the model {model!r} among {sorted(budget)!r}; "
                    "name the model (model=...) and give it a budget"
                )
            budget = budget[model]
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget: expected a Budget, got {type(budget).__name__}")
        if budget is not None and counter is None:
            raise ValueError(
                "budget: a budget needs a counter to count requests with "
                "(counter=runcontext.tokenizers.tiktoken_counter(), budget=...)"
            )
        self.counter: RequestCounter | None = counter
        self.budget: Budget | None = budget
        self.model = model
        self.tools = tools
        self._session = session
        self._spent: Spent | None = None  # what the session used; read from it on first need
        self._started: float | None = None  # time.monotonic() of the first request checked

    @property
    def session(self) -> Session | None:
        """The transcript whose recorded runs the session caps count from."""
        return self._session

    @session.setter
    def session(self, session: Session | None) -> None:
        # An integration opens its transcript on the first request: what it recorded before
        # (a resumed session) counts from then on, so the spend is read again.
        if session is not self._session:
            self._session = session
            self._spent = None

    def count(
        self, messages: Sequence[Mapping[str, Any]], context: RunContext | None
    ) -> RequestCount | None:
        """The request's count, or ``None`` without a counter."""
        if self.counter is None:
            return None
        return self.counter.count_request(
            messages, context, model=self.model or UNNAMED_MODEL, tools=self.tools
        )

    def check(self, count: RequestCount | None, messages: Sequence[Mapping[str, Any]]) -> None:
        """Raise :class:`BudgetExceededError` (its ``messages`` set) if ``count`` does not fit
        the budget or would take the session past a cap; nothing without a budget."""
        if count is not None and self.budget is not None:
            try:
                self.budget.check(count, self.spent())
            except BudgetExceededError as error:
                error.messages = messages
                raise
        if self._started is None:
            self._started = time.monotonic()

    def spent(self) -> Spent:
        """What the session has used so far: billed input (or the count, for runs billed
        nothing), its cost at the budget's price, and seconds since the first request."""
        if self._spent is None:
            self._spent = recorded_spent(self._session, self.budget)
        seconds = 0.0 if self._started is None else time.monotonic() - self._started
        return Spent(input=self._spent.input, cost=self._spent.cost, seconds=seconds)

    def settle(self, count: RequestCount | None, usage: Usage | None) -> dict[str, Any] | None:
        """Learn from the bill, account for the request, and return the run's ``tokens`` record
        (``None`` when nothing was counted)."""
        if count is None:
            return None
        if usage is not None and self.counter is not None:
            self.counter.calibrate(count, usage)
        spent = self.spent()
        used = usage or Usage(input=count.total)
        price = None if self.budget is None else self.budget.price
        self._spent = Spent(
            input=spent.input + used.input,
            cost=spent.cost + (0.0 if price is None else price.cost(used)),
        )
        limit = None if self.budget is None else self.budget.limit
        return count.record(usage, limit=limit)


def recorded_spent(session: Session | None, budget: Budget | None) -> Spent:
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
