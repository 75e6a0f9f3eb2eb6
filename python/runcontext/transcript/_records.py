"""What the Python side adds to the record format: caller values made canonical, the clock.

Every rule of the format itself (the lines, the chain, the strict read-back, the checks and
their order) is in the core (``runcontext_core::transcript``, bound as
``runcontext._core.Transcript``); docs/TRANSCRIPT.md is the normative text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from runcontext._core import TRANSCRIPT_VERSION, RunContext, canonical_json
from runcontext.errors import CanonicalJSONError

__all__ = [
    "TRANSCRIPT_VERSION",
    "Clock",
    "Envelope",
    "Structure",
    "message_body",
    "parse_time",
    "structure",
    "timestamp",
    "utc_now",
]

Clock = Callable[[], datetime]

# A context's structure as an envelope records it: the (position, name, digest) of each section
# and the facts. Equal structures are the same context, so it is built once.
Structure = tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, str], ...]]


# A ``run-context`` record as the core returns it, verified (``Transcript.read_line`` and
# ``read_lines``): ("run-context", number, digest, time, messages, sections, facts, tokens),
# with the sections and facts of a Structure and the record's optional ``tokens`` member (a
# dict, or None). Kept as the core's tuple: a session holds one per run, and turns it into a
# Run only when asked. Consecutive runs with the same sections (or facts) share one tuple of
# them.
Envelope = tuple[
    str,
    int,
    str,
    str,
    int,
    tuple[tuple[str, str, str], ...],
    tuple[tuple[str, str], ...],
    dict[str, Any] | None,
]


def structure(context: RunContext) -> Structure:
    return (
        tuple((s.position, s.name, s.digest) for s in context.sections),
        tuple(context.facts),
    )


def utc_now() -> datetime:
    return datetime.now(UTC)


def _format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are some."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def timestamp(clock: Clock) -> str:
    moment = clock()
    if not isinstance(moment, datetime):
        raise TypeError(f"the session clock returned {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            "the session clock returned a naive datetime; return an aware one, "
            "such as datetime.now(timezone.utc)"
        )
    return _format_time(moment)


def parse_time(text: str) -> datetime:
    """A timestamp the core has checked (``2025-01-31T09:30:00Z``) as an aware datetime."""
    return datetime.fromisoformat(text)


def message_body(message: Mapping[str, Any], argument: str) -> bytes:
    """The canonical JSON of one message; an error names ``argument`` (``messages[3]``)."""
    try:
        return canonical_json(message if type(message) is dict else dict(message))
    except CanonicalJSONError as error:
        # TypeError for a value JSON cannot hold, ValueError otherwise; the cause keeps the
        # original class and its path.
        problem = TypeError if isinstance(error, TypeError) else ValueError
        raise problem(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from error
