"""What a request costs before it is sent: counts, calibration from billed usage, budgets.

* :class:`RequestCounter` counts a request (``count_request``) by part (head, conversation,
  tail, tools) with a local counter, calibrated by what the provider billed for the previous
  request (``calibrate``); every :class:`RequestCount` says its quality.
* :class:`Usage` is what a provider billed, read from its response; every count is at most
  :data:`MAX_TOKEN_COUNT`.
* :class:`Budget` is a model's window, reserves and session caps, checked by
  :class:`runcontext.Loop` before each call; a request that does not fit raises
  :class:`BudgetExceededError`.

docs/BUDGET.md is the specification.
"""

from __future__ import annotations

from runcontext.budget.calibration import (
    CALIBRATION_VERSION,
    MAX_CALIBRATED_SHAPES,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    RequestCounter,
)
from runcontext.budget.limits import Budget, BudgetExceededError, Price, Spent
from runcontext.budget.request_count import PARTS, QUALITIES, Quality, RequestCount
from runcontext.budget.usage import (
    MAX_TOKEN_COUNT,
    UnreadableUsageWarning,
    Usage,
    anthropic_usage,
    gemini_usage,
    openai_chat_usage,
    openai_responses_usage,
    read_usage,
)

__all__ = [
    "CALIBRATION_VERSION",
    "MAX_CALIBRATED_SHAPES",
    "MAX_TOKEN_COUNT",
    "MESSAGE_OVERHEAD",
    "PARTS",
    "QUALITIES",
    "REQUEST_OVERHEAD",
    "Budget",
    "BudgetExceededError",
    "Price",
    "Quality",
    "RequestCount",
    "RequestCounter",
    "Spent",
    "UnreadableUsageWarning",
    "Usage",
    "anthropic_usage",
    "gemini_usage",
    "openai_chat_usage",
    "openai_responses_usage",
    "read_usage",
]
