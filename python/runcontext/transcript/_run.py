"""The :class:`~runcontext.transcript.Run` and :class:`~runcontext.transcript.TornTail`
records, apart from the module that exports them: ``dataclasses`` imports ``inspect`` (and
with it ast, dis and tokenize), a fifth of what ``runcontext log`` cost to start (issue 13),
and the log lists the runs from their envelopes without making a ``Run`` of each.
``runcontext.transcript.session`` loads this module when either class is first asked for,
and the classes name that module as theirs (where they are documented, imported and
pickled from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from runcontext.transcript._records import Structure

if TYPE_CHECKING:
    from runcontext._core import RunContext
    from runcontext.section import Section
    from runcontext.transcript.session import _Contexts

__all__ = ["Run", "TornTail"]


@dataclass(frozen=True)
class TornTail:
    """An incomplete last record: it starts on ``line``, at byte ``offset``, ``length`` bytes."""

    line: int
    offset: int
    length: int


@dataclass(frozen=True)
class Run:
    """One recorded run.

    ``number`` counts from 1; ``time`` is the envelope's UTC timestamp; ``messages`` is how many
    conversation messages the request carried (the tail followed message ``messages - 1``);
    ``context`` is the RunContext rebuilt from the transcript, and ``context.digest == digest``
    (verified when the transcript was read). It is built the first time it is asked for and
    shared by every run with the same sections and facts; ``sections`` and ``facts`` are the
    same as the context's without building it (each section's text is one string per body,
    shared by every run that names it). ``tokens`` is the run's recorded ``tokens`` member
    (its request's counts by part, their quality, the budget limit and what was billed;
    docs/TRANSCRIPT.md), or ``None`` for a run recorded without counts.
    """

    number: int
    time: datetime
    digest: str
    messages: int
    tokens: Mapping[str, Any] | None
    _structure: Structure = field(repr=False, compare=False)
    _library: _Contexts = field(repr=False, compare=False)

    @cached_property
    def context(self) -> RunContext:
        return self._library.context(self._structure, self.number)

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """``context.sections``: the sections in render order, head first."""
        return self._library.sections(self._structure)

    @property
    def facts(self) -> tuple[tuple[str, str], ...]:
        """``context.facts``: the facts as ``(name, value)`` pairs, in order."""
        return self._structure[1]


# Where they are documented, imported and pickled from.
Run.__module__ = TornTail.__module__ = "runcontext.transcript.session"

# typing.get_type_hints and pydantic evaluate the annotations above in that module, which
# leaves these names out so that `runcontext log` starts without them; it takes them in when
# it loads this one (session._record_class). `_Contexts` is its own.
ANNOTATION_NAMES: dict[str, object] = {
    "datetime": datetime,
    "Mapping": Mapping,
    "Any": Any,
    "Structure": Structure,
}
