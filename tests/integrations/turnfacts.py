"""A provider whose fact changes on every build, so a new turn shows a new value."""

from __future__ import annotations

from runcontext import ContextBuilder
from runcontext.providers import Contribution

HEAD = "You are a careful agent."


class Clock:
    name = "clock"
    revision = "clock/test"

    def __init__(self) -> None:
        self.builds = 0

    def collect(self, deadline: float) -> Contribution:
        self.builds += 1
        return Contribution(facts=[("build", str(self.builds))])


def builder(clock: Clock) -> ContextBuilder:
    return ContextBuilder([clock], head_sections=[("identity", HEAD)])
