"""Moments and ages as the command line takes them: ``--since``/``--until`` (an ISO date or
date-time, UTC unless it names an offset; for the fleet commands also an age, ``30d``, meaning
that long ago) and ``--older-than`` (an age). docs/TRANSCRIPT.md (*runcontext log*, *Questions
across sessions*, *Retention*) states the forms."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

__all__ = ["age", "moment"]

# An age: a whole number and a unit (seconds, minutes, hours, days, weeks).
_AGE = re.compile(r"(\d{1,9})([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def moment(option: str, text: str, *, end: bool, ages: bool = False) -> datetime:
    """An ISO date (the whole day, UTC: its start, or with ``end`` its last microsecond) or
    date-time (UTC when it names no offset); with ``ages``, also an age (``30d``: that long
    before now)."""
    if ages and _AGE.fullmatch(text):
        return datetime.now(UTC) - age(option, text)
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1, microseconds=-1) if end else start
        parsed = datetime.fromisoformat(text)
    except ValueError:
        also = " or an age (30d, 12h)" if ages else ""
        raise ValueError(
            f"{option} {text!r}: expected an ISO date (2026-12-01) or date-time "
            f"(2026-12-01T09:30:00Z){also}"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def age(option: str, text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w``: a whole number and one unit."""
    found = _AGE.fullmatch(text)
    if found is None:
        raise ValueError(
            f"{option} {text!r}: expected an age, a whole number and a unit: 45s, 90m, 12h, "
            "30d or 2w"
        )
    return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})
