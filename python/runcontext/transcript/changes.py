"""What changed between two runs' contexts, and telling the model so on a resumed session.

Instruction files are re-read every build, but nothing tells the model *what changed* since
the previous run of a resumed session: a stale AGENTS.md or a stale date after resuming is
the most reported pain of long-lived agents. :func:`changed_since` is opt-in: it adds one
fact to the tail naming what differs from the transcript's last run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from runcontext._core import Compaction, Elision, RunContext, Section
from runcontext.transcript.session import Session

__all__ = ["CHANGED_FACT", "changed_since", "changes", "differences", "edit_summary"]


# The fact's name: it reads as a sentence in the tail (`- changed since the previous run: …`).
CHANGED_FACT = "changed since the previous run"


class _Parts(Protocol):
    """What :func:`changes` compares: a RunContext, or a Run (its context's parts, without
    building the context)."""

    @property
    def sections(self) -> tuple[Section, ...]: ...

    @property
    def facts(self) -> tuple[tuple[str, str], ...]: ...


def changes(previous: _Parts | None, current: _Parts) -> dict[str, dict[str, list[str]]]:
    """Names of the sections and facts added, removed and changed since ``previous``.

    Each is a RunContext or a :class:`~runcontext.transcript.Run` (whose ``sections`` and
    ``facts`` are its context's).

    A section changes when its text or its position (head or tail) does; a fact when its value
    does. Names are listed in the current context's order (removed ones in the previous one's).
    """
    before_sections = {} if previous is None else {s.name: s for s in previous.sections}
    before_facts = {} if previous is None else dict(previous.facts)
    return {
        "sections": differences(before_sections, {s.name: s for s in current.sections}),
        "facts": differences(before_facts, dict(current.facts)),
    }


def differences(before: Mapping[str, object], after: Mapping[str, object]) -> dict[str, list[str]]:
    """The names ``added``, ``removed`` and ``changed`` from ``before`` to ``after``, each a map
    from a name to what it is compared by: :func:`changes` of sections (by ``Section``, or by
    anything equal when they are, such as ``(position, digest)``) or of facts (by value)."""
    if before == after:  # nothing added, removed or changed (the common case in a log)
        return {"added": [], "removed": [], "changed": []}
    return {
        "added": [name for name in after if name not in before],
        "removed": [name for name in before if name not in after],
        "changed": [name for name in after if name in before and before[name] != after[name]],
    }


def changed_since(session: Session, context: RunContext) -> RunContext:
    """``context`` with a fact ``changed since the previous run`` naming what differs from the
    session's last recorded run: sections changed, new or gone (by name), and facts whose value
    changed (with the old value), new or gone. ``context`` itself when the session has no run
    yet or nothing changed, so an unchanged resume keeps its digest and its cache.

    The fact goes last among the facts; a context that already has a fact of that name is
    refused (``ValueError``), since which one the model should believe would be a guess.
    """
    if CHANGED_FACT in dict(context.facts):
        raise ValueError(f"context: already has a fact {CHANGED_FACT!r}")
    runs = session.runs()
    if not runs:
        return context
    previous = runs[-1].context
    found = changes(previous, context)
    was = dict(previous.facts)
    parts = [f"{name} (changed)" for name in found["sections"]["changed"]]
    parts += [f"{name} (new)" for name in found["sections"]["added"]]
    parts += [f"{name} (removed)" for name in found["sections"]["removed"]]
    parts += [f"{name} (was {was[name]})" for name in found["facts"]["changed"]]
    parts += [f"{name} (new)" for name in found["facts"]["added"]]
    parts += [f"{name} (removed)" for name in found["facts"]["removed"]]
    if not parts:
        return context
    return RunContext(
        head_sections=context.head_sections,
        facts=[*context.facts, (CHANGED_FACT, "; ".join(parts))],
        tail_sections=context.tail_sections,
    )


def edit_summary(found: Compaction | Elision) -> str:
    """A compaction or an elision in words, as ``runcontext log`` lists it: ``3 messages
    replaced (messages 1 to 3) by 1: summary, tokens 5200 → 900 (exact)``, ``2 messages
    replaced (messages 1 to 2) by nothing: hard trim``, ``1 message replaced by stubs
    (message 4)``."""
    if isinstance(found, Elision):
        count = len(found.indices)
        plural = "" if count == 1 else "s"
        positions = ", ".join(str(i) for i in found.indices)
        return f"{count} message{plural} replaced by stubs (message{plural} {positions})"
    replaced = found.replaced
    by = "nothing" if found.messages == 0 else f"{found.messages}"
    how = "summary" if found.mode == "summary" else "hard trim"
    text = (
        f"{replaced} message{'' if replaced == 1 else 's'} replaced "
        f"(messages {found.start} to {found.end - 1}) by {by}: {how}"
    )
    if found.tokens_before is not None:
        text += f", tokens {found.tokens_before} → {found.tokens_after} ({found.quality})"
    return text
