"""Per-model request budgets: :class:`Budget`, :class:`Price`, :class:`BudgetExceededError`.

A budget is checked before a request is sent (:class:`runcontext.Loop` does it with every
run's count): a request that would not fit the model's window, less the reply's reserve and a
safety margin, or that would take the session past a cap, is refused with an error saying by
how much and which part is largest; it is never sent to fail at the provider.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runcontext.budget.request_count import PARTS, RequestCount
from runcontext.budget.usage import MAX_TOKEN_COUNT, Usage

__all__ = ["Budget", "BudgetExceededError", "Price", "Spent"]

Reason = Literal["window", "session-input", "session-cost", "session-time"]


def _count(name: str, value: object, *, positive: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (1 if positive else 0):
        floor = "> 0" if positive else ">= 0"
        raise TypeError(f"{name}: expected a token count (int {floor}), got {value!r}")
    return value


def _amount(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{name}: expected a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"{name}: expected a number >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Price:
    """Prices per million tokens, in the caller's currency (runcontext has no price table:
    pass your provider's). ``cache_read`` and ``cache_write`` default to ``input``."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is not None:
                _amount(f"Price.{name}", value)

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs (an unknown output costs nothing)."""
        return self._cost(usage.input, usage.output, usage.cache_read, usage.cache_write)

    def _cost(self, input: int, output: int | None, cache_read: int, cache_write: int) -> float:
        """:meth:`cost` of the counts as they are (a recorded run's, which the transcript
        bounds by 2**53 - 1 rather than by ``MAX_TOKEN_COUNT``)."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        fresh = input - cache_read - cache_write
        tokens = fresh * self.input + cache_read * read + cache_write * write
        return (tokens + (output or 0) * self.output) / 1_000_000


@dataclass(frozen=True)
class Budget:
    """What one model's requests may use.

    ``context_window`` is the model's window in tokens; ``reserved_output`` the tokens kept
    for the reply (what you pass as ``max_tokens``); ``safety_margin`` tokens kept against a
    count's error (an ``estimated`` count can be off by a few percent: docs/BUDGET.md gives
    measured figures). A request fits when its count is at most :attr:`limit`.

    Session caps, each optional, are checked against what the session has spent so far
    (billed input where the provider reported it, else the count): ``max_session_input``
    tokens, ``max_session_cost`` at ``price`` (required with it), and ``max_session_seconds``
    of wall-clock time since the loop's first run.
    """

    context_window: int
    reserved_output: int = 0
    safety_margin: int = 0
    max_session_input: int | None = None
    max_session_cost: float | None = None
    price: Price | None = None
    max_session_seconds: float | None = None

    def __post_init__(self) -> None:
        _count("Budget.context_window", self.context_window, positive=True)
        if self.context_window > MAX_TOKEN_COUNT:
            # The limit is recorded with every run, and a count beyond the bound is not one.
            raise ValueError(
                f"Budget.context_window: {self.context_window} tokens is beyond "
                f"MAX_TOKEN_COUNT ({MAX_TOKEN_COUNT:,}); give the model's real window"
            )
        _count("Budget.reserved_output", self.reserved_output)
        _count("Budget.safety_margin", self.safety_margin)
        if self.limit <= 0:
            raise ValueError(
                f"Budget: reserved_output ({self.reserved_output}) + safety_margin "
                f"({self.safety_margin}) leave nothing of the {self.context_window}-token "
                "context window for the request"
            )
        if self.max_session_input is not None:
            _count("Budget.max_session_input", self.max_session_input, positive=True)
        if self.max_session_cost is not None:
            _amount("Budget.max_session_cost", self.max_session_cost)
            if self.price is None:
                raise ValueError(
                    "Budget: max_session_cost needs a price: Budget(..., price=Price(input=..., "
                    "output=...)) with your provider's prices per million tokens"
                )
        if self.price is not None and not isinstance(self.price, Price):
            raise TypeError(f"Budget.price: expected a Price, got {type(self.price).__name__}")
        if self.max_session_seconds is not None:
            _amount("Budget.max_session_seconds", self.max_session_seconds)

    @property
    def limit(self) -> int:
        """The most input tokens a request may have: the window less the reserves."""
        return self.context_window - self.reserved_output - self.safety_margin

    def check(self, count: RequestCount, spent: Spent | None = None) -> None:
        """Raise :class:`BudgetExceededError` if the request ``count`` counted does not fit,
        or would take ``spent`` past a session cap."""
        if count.total > self.limit:
            raise BudgetExceededError(self, count, "window", self.limit, count.total)
        if spent is None:
            return
        if self.max_session_input is not None:
            after = spent.input + count.total
            if after > self.max_session_input:
                raise BudgetExceededError(
                    self, count, "session-input", self.max_session_input, after
                )
        if self.max_session_cost is not None and self.price is not None:
            # The reply is priced at its reserve: the most it can cost.
            request = Usage(input=count.total, output=self.reserved_output)
            after_cost = spent.cost + self.price.cost(request)
            if after_cost > self.max_session_cost:
                raise BudgetExceededError(
                    self, count, "session-cost", self.max_session_cost, after_cost
                )
        if self.max_session_seconds is not None and spent.seconds > self.max_session_seconds:
            raise BudgetExceededError(
                self, count, "session-time", self.max_session_seconds, spent.seconds
            )


@dataclass(frozen=True)
class Spent:
    """What a session has used so far: input tokens, cost at the budget's price, and
    seconds since its first run."""

    input: int = 0
    cost: float = 0.0
    seconds: float = 0.0


class BudgetExceededError(ValueError):
    """A request does not fit its budget; it was not sent.

    ``reason`` is ``"window"`` (the request is larger than :attr:`Budget.limit`),
    ``"session-input"``, ``"session-cost"`` or ``"session-time"`` (a session cap);
    ``limit`` and ``value`` are the cap and what the request would make of it, ``over`` the
    difference; ``count`` is the request's :class:`RequestCount` and ``largest`` its largest
    part. ``messages`` is the conversation that was counted (set by the loop).
    """

    def __init__(
        self,
        budget: Budget,
        count: RequestCount,
        reason: Reason,
        limit: float,
        value: float,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.budget = budget
        self.count = count
        self.reason: Reason = reason
        self.limit = limit
        self.value = value
        self.over = value - limit
        self.largest = count.largest()
        self.messages = messages
        super().__init__(self._message())

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its parts (pickle would call __init__ with the message alone).
        arguments = (self.budget, self.count, self.reason, self.limit, self.value, self.messages)
        return (type(self), arguments, self.__dict__)

    def _message(self) -> str:
        count = self.count
        parts = ", ".join(f"{part} {getattr(count, part):,}" for part in PARTS)
        where = f"{count.model}'s budget"
        if self.reason == "window":
            budget = self.budget
            return (
                f"the request to {count.model} is {count.total:,} tokens ({count.quality}), "
                f"{self.over:,} over its limit of {self.limit:,} (a {budget.context_window:,}-"
                f"token window less {budget.reserved_output:,} reserved for the reply and a "
                f"{budget.safety_margin:,}-token margin); the largest part is the "
                f"{self.largest} ({getattr(count, self.largest):,} tokens: {parts}). It was "
                "not sent: drop or compact history (Loop(on_over_budget=...)), shorten the "
                "context, or choose a model with a larger window"
            )
        if self.reason == "session-input":
            return (
                f"the request ({count.total:,} tokens, {count.quality}) would bring the "
                f"session's input to {self.value:,} tokens, {self.over:,} over {where} cap of "
                f"{self.limit:,} (max_session_input); it was not sent ({parts})"
            )
        if self.reason == "session-cost":
            return (
                f"the request ({count.total:,} tokens, {count.quality}, its reply priced at "
                f"the {self.budget.reserved_output:,} reserved tokens) could bring the "
                f"session's cost to {self.value:.4f}, over {where} cap of {self.limit:.4f} "
                "(max_session_cost); it was not sent"
            )
        return (
            f"the session has run {self.value:.1f} s, past {where} cap of {self.limit:.1f} s "
            "(max_session_seconds); the request was not sent"
        )
