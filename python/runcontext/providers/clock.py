"""``clock``: today's date, and optionally the time and zone, as tail facts.

A model knows nothing of "now"; the date is the one fact nearly every agent needs. Time and
zone are off by default because they change every run (the date changes once a day, so a
context built at 09:00 and at 17:00 has the same digest).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from runcontext.providers.base import Contribution

__all__ = ["ClockProvider"]


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _local_now() -> datetime:
    return datetime.now().astimezone()


class ClockProvider:
    """Facts ``date`` (``2025-03-07 (Friday)``), optionally ``time`` and ``timezone``.

    ``now`` is the clock, injectable so tests are deterministic; it must return an aware
    datetime when ``zone`` is on (a naive one renders the zone as ``unknown``).
    """

    name = "clock"

    def __init__(
        self,
        *,
        time: bool = False,
        zone: bool = False,
        now: Callable[[], datetime] = _local_now,
    ) -> None:
        self._time = time
        self._zone = zone
        self._now = now
        options = "".join(flag for flag, on in (("+time", time), ("+zone", zone)) if on)
        self.revision = f"clock/1{options}"

    def collect(self, deadline: float) -> Contribution:
        now = self._now()
        # The weekday from a fixed table, not strftime's %A, which follows the locale.
        day = f"{now:%Y-%m-%d} ({_WEEKDAYS[now.weekday()]})"
        facts: list[tuple[str, str | None]] = [("date", day)]
        if self._time:
            facts.append(("time", now.strftime("%H:%M")))
        if self._zone:
            facts.append(("timezone", _zone(now)))
        return Contribution(facts=facts)


def _zone(now: datetime) -> str:
    offset = now.utcoffset()
    if offset is None:
        return "unknown"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    hours, minutes = divmod(abs(minutes), 60)
    utc = f"UTC{sign}{hours:02d}:{minutes:02d}"
    name = now.tzname()
    return utc if not name or name in (utc, "UTC") else f"{name} ({utc})"
