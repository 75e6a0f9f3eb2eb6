"""The session clock and the records' timestamps (``2025-01-31T09:30:00Z``).

Every rule of the format itself (the lines, the chain, the strict read-back, the checks and
their order, the timestamp's form on read) is in the core (``runcontext_core::transcript``,
bound as ``runcontext._core.Transcript``); docs/TRANSCRIPT.md is the normative text. This
module turns the caller's clock into the text a record holds, and that text back into a
``datetime``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "format_time", "parse_time", "timestamp", "utc_now"]

Clock = Callable[[], datetime]
"""What a session asks for the time of each record: an aware ``datetime``."""


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are some."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def timestamp(clock: Clock) -> str:
    """The time ``clock`` gives, as a record holds it; a clear error for a clock that does not
    return an aware ``datetime``."""
    moment = clock()
    if not isinstance(moment, datetime):
        raise TypeError(f"the session clock returned {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            "the session clock returned a naive datetime; return an aware one, "
            "such as datetime.now(timezone.utc)"
        )
    return format_time(moment)


def parse_time(text: str) -> datetime:
    """A timestamp the core has checked (``2025-01-31T09:30:00Z``) as an aware datetime."""
    return datetime.fromisoformat(text)
