"""What the Python side adds to the record format: caller values made canonical, the clock.

Every rule of the format itself (the lines, the chain, the strict read-back, the checks and
their order) is in the core (``runcontext_core::transcript``, bound as
``runcontext._core.Transcript``); docs/TRANSCRIPT.md is the normative text.
"""

from __future__ import annotations

# _collections_abc, loaded at start-up, is where collections.abc takes Callable from.
from _collections_abc import Callable
from functools import cache

from runcontext._core import TRANSCRIPT_VERSION, canonical_json
from runcontext.errors import CanonicalJSONError

TYPE_CHECKING = False  # not typing's: `runcontext log` lists a transcript without typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime, tzinfo
    from typing import Any

__all__ = [
    "TRANSCRIPT_VERSION",
    "Clock",
    "message_body",
    "parse_time",
    "timestamp",
    "utc_now",
]

# The names in quotes are not imported at run time (datetime is imported on first use).
Clock = Callable[[], "datetime"]


@cache
def _datetime() -> tuple[type[datetime], tzinfo]:
    """The datetime class and UTC, imported on first use: listing a transcript (``runcontext
    log``) handles its timestamps as the strings the core checked, and importing datetime was a
    twentieth of what the listing's imports cost (issue 13). Cached: an import statement per
    run would cost more than parsing the timestamp."""
    from datetime import UTC, datetime

    return datetime, UTC


def utc_now() -> datetime:
    datetime, utc = _datetime()
    return datetime.now(utc)


def _format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are some."""
    utc = moment.astimezone(_datetime()[1]).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def timestamp(clock: Clock) -> str:
    moment = clock()
    if not isinstance(moment, _datetime()[0]):
        raise TypeError(f"the session clock returned {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            "the session clock returned a naive datetime; return an aware one, "
            "such as datetime.now(timezone.utc)"
        )
    return _format_time(moment)


def parse_time(text: str) -> datetime:
    """A timestamp the core has checked (``2025-01-31T09:30:00Z``) as an aware datetime."""
    return _datetime()[0].fromisoformat(text)


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
