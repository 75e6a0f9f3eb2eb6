"""The integration contract, written once: what every integration of runcontext with an agent
framework (and ``Loop``, the hand-written loop) promises. ``test_contract.py`` checks it for
every *row*; a row is a module in ``rows/`` whose ``ROWS`` maps names to :class:`Row`, so the
next integration is a new module there, not a new set of tests.

A row drives its framework the way a user would (the framework's own agent, memory and tool
loop, pointed at the fake server) and tells the tests what went on the wire (:class:`Wire`).
Every agent a row builds has one tool, ``lookup(ticket: str) -> str`` answering
:data:`LOOKUP_RESULT`, and the framework's own instructions :data:`INSTRUCTIONS`; its context
comes from :class:`Setup` (a builder whose ``build`` fact counts the builds, so a request shows
which build it carries).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runcontext import ContextBuilder, Session
from runcontext.budget import Budget

from fakeserver import FakeServer, Recorded
from turnfacts import HEAD, Clock, builder

__all__ = [
    "HEAD",
    "INSTRUCTIONS",
    "LOOKUP_RESULT",
    "Agent",
    "Clock",
    "Outcome",
    "Row",
    "Setup",
    "Wire",
    "builder",
    "text_of",
]

INSTRUCTIONS = "Answer in one short sentence."
"""The framework's own system prompt / instructions: it is part of what the model is told, so
the transcript must record it."""

LOOKUP_RESULT = "T-1 is open."


@dataclass(frozen=True)
class Setup:
    """What an integration is built with."""

    server: FakeServer
    context: ContextBuilder
    session: Session | str | None = None  # a Session, or a transcript path to open or create
    budget: Budget | None = None
    counter: Callable[[str], int] | None = None  # given with ``budget``


@dataclass(frozen=True)
class Outcome:
    result: object  # what the framework's run returned
    history: Any  # the framework's own stored history of the conversation after the run, as data


class Agent(Protocol):
    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        """One agent run with ``question`` as the user's input: it continues the framework's
        own memory of ``conversation`` (a thread, a message history, an SDK session); a new
        name starts a new conversation. Every call goes through the same integration object,
        as a long-lived service's would."""
        ...


@dataclass(frozen=True)
class Wire:
    """One request as the model received it, as a row reads it."""

    head: str | None  # the head's text, where the request carries it
    conversation: list[Mapping[str, Any]]  # what came between head and tail, in the shape the
    # transcript records it (byte-equal, or the mapping the row's docs state)
    tail: str | None  # the tail's text; the tests check nothing follows it
    tail_last: bool  # whether the tail is the request's last content


@dataclass(frozen=True)
class Row:
    agent: Callable[[Setup], Agent]
    wire: Callable[[Recorded], Wire]
    seed: Mapping[str, Any]  # the message a transcript of this row's conversations starts with


def text_of(content: object) -> str:
    """The text of a message's ``content``: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    raise AssertionError(f"not message content: {content!r}")
