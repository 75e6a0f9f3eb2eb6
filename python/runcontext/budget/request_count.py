"""Input-token counts of one request, by part, with their quality: :class:`RequestCount`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from runcontext.budget.usage import Usage, check_token_count

__all__ = ["PARTS", "QUALITIES", "Quality", "RequestCount"]

Quality = Literal["exact", "calibrated", "estimated"]
"""``exact``: this very request (same model, head, conversation, tail and tools) was billed
before, and the total is the billed count. ``calibrated``: the total is a billed count of the
longest known prefix plus the counter's estimate of what was appended and of the tail.
``estimated``: the counter's estimate of every part, nothing billed matched."""

QUALITIES: tuple[Quality, ...] = ("exact", "calibrated", "estimated")
PARTS = ("head", "conversation", "tail", "tools")


@dataclass(frozen=True)
class RequestCount:
    """Input tokens of one request: ``head + conversation + tail + tools == total``.

    The head, tail and tools are the counter's counts (each priced once per digest); the
    conversation is the rest of the total, so that a calibrated total's difference from the
    counter's estimate is carried by the conversation, the part that was billed.
    """

    model: str
    head: int
    conversation: int
    tail: int
    tools: int
    quality: Quality
    # How the count was reached, for calibrate(); not part of the value.
    shape: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Each part and their sum within MAX_TOKEN_COUNT, so that record() is recordable.
        for part in PARTS:
            check_token_count(getattr(self, part), f"RequestCount.{part}")
        check_token_count(self.total, "RequestCount: head + conversation + tail + tools")

    @property
    def total(self) -> int:
        return self.head + self.conversation + self.tail + self.tools

    @property
    def context(self) -> int:
        """The tokens runcontext adds: the head plus the tail."""
        return self.head + self.tail

    def largest(self) -> str:
        """The name of the largest part (the first of head, conversation, tail, tools on a
        tie)."""
        return max(PARTS, key=lambda part: (getattr(self, part), -PARTS.index(part)))

    def record(self, usage: Usage | None = None, *, limit: int | None = None) -> dict[str, Any]:
        """The run's ``tokens`` member for the transcript (docs/TRANSCRIPT.md): this count,
        the budget ``limit`` it was checked against, and ``usage``, what was billed."""
        tokens: dict[str, Any] = {
            "head": self.head,
            "conversation": self.conversation,
            "tail": self.tail,
            "tools": self.tools,
            "quality": self.quality,
        }
        if limit is not None:
            tokens["limit"] = limit
        if usage is not None:
            billed = {
                "input": usage.input,
                "cache_read": usage.cache_read,
                "cache_write": usage.cache_write,
            }
            if usage.output is not None:
                billed["output"] = usage.output
            tokens["billed"] = billed
        return tokens
