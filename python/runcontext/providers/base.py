"""The provider contract: what a provider is and what it may return.

A provider has a ``name``, a ``revision`` and a ``collect(deadline)`` method, plain or
``async``, that returns a :class:`Contribution` (or ``None`` for nothing). ``deadline`` is
an absolute :func:`time.monotonic` value: a provider that starts a subprocess or a read that
can block uses the time left as its own timeout. The contract has no error path: whatever a
provider raises, returns or fails to return in time, the builder turns into a
:class:`Diagnostic` and the run goes on without that provider's output.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

__all__ = ["Contribution", "Diagnostic", "Pairs", "Provider"]

Pairs = Sequence[tuple[str, str | None]]


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one provider adds to a run.

    ``facts`` render as ``- name: value`` lines in the tail; ``head`` sections in the head
    message (stable prose, cache-friendly); ``tail`` sections after the facts. Names follow
    the RunContext rules (non-empty, no control characters, no outer white space) and must
    not collide with another provider's. ``diagnostics`` are ``(kind, message)`` notes the
    provider wants the caller to see, e.g. ``("truncated", "...")``; they never fail the run.
    """

    facts: Pairs = ()
    head: Pairs = ()
    tail: Pairs = ()
    diagnostics: Sequence[tuple[str, str]] = ()


class Diagnostic(NamedTuple):
    """Why something a provider produced is missing or changed in this run.

    ``kind`` is one of ``timeout``, ``error``, ``invalid``, ``too-large``, ``duplicate``,
    ``redacted``, or a kind the provider reported itself (``truncated``, ``unreadable``, …).
    Messages never contain the redacted text.
    """

    provider: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.provider}: {self.kind}: {self.message}"


@runtime_checkable
class Provider(Protocol):
    """Anything with a ``name``, a ``revision`` and ``collect(deadline)``.

    ``revision`` names the provider's behaviour (code version and options that change its
    output): it enters the builder's revision and so every request fingerprint. Bump it
    whenever the provider's output for the same environment could change.

    Optionally, ``max_output_bytes`` (a positive int) says how many UTF-8 bytes of names and
    values the provider may return when that is more than the builder's ``max_bytes``; the
    builder then bounds this provider by it instead. ``InstructionsProvider`` declares one
    so a large instructions budget is not refused as too large.
    """

    @property
    def name(self) -> str:
        """A unique name within a builder; diagnostics are keyed by it."""
        ...

    @property
    def revision(self) -> str:
        """A non-empty version string; a provider without one is refused by the builder."""
        ...

    def collect(self, deadline: float) -> Contribution | Awaitable[Contribution | None] | None:
        """Collect what is true now; finish before ``deadline`` (``time.monotonic()``)."""
        ...
