"""The base class of the stream accumulators of :mod:`runcontext.adapters.streams`.

It lives apart from them so that :func:`runcontext.budget.read_usage` can recognise an
accumulator that has seen no usage yet (and say so) without importing the adapters, which
themselves read usage with :mod:`runcontext.budget.usage`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["Accumulator"]


class Accumulator:
    """Collects a streamed response's events into the message they make up."""

    def add(self, event: Any) -> Any:
        """Take in one event and return it."""
        raise NotImplementedError

    def feed(self, stream: Any) -> Iterator[Any]:
        """Yield each event of ``stream`` after adding it."""
        for event in stream:
            yield self.add(event)
