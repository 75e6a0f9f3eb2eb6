"""What a request costs before it is sent: counts, calibration from billed usage, budgets.

(Being built: see docs/BUDGET.md.)
"""

from __future__ import annotations

from runcontext.budget.counts import PARTS, QUALITIES, Quality, RequestCount
from runcontext.budget.usage import (
    Usage,
    anthropic_usage,
    openai_chat_usage,
    openai_responses_usage,
    read_usage,
)

__all__ = [
    "PARTS",
    "QUALITIES",
    "Quality",
    "RequestCount",
    "Usage",
    "anthropic_usage",
    "openai_chat_usage",
    "openai_responses_usage",
    "read_usage",
]
