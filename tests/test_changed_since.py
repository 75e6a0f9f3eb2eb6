"""changed_since: a resumed session tells the model what changed since its previous run."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import RunContext, Session
from runcontext.transcript import changed_since
from runcontext.transcript.changes import CHANGED_FACT

SEED = {"role": "system", "content": "seed"}


def _context(agents: str, date: str, **more: str) -> RunContext:
    return RunContext(
        head_sections=[("AGENTS.md", agents)],
        facts=[("date", date), *more.items()],
    )


def test_nothing_recorded_or_nothing_changed_leaves_the_context_as_it_is(tmp_path: Path) -> None:
    monday = _context("Keep it green.", "2026-11-30")
    with Session.create(tmp_path / "t.jsonl", [SEED]) as session:
        assert changed_since(session, monday) is monday  # no run yet
        session.record_run([SEED], monday)
        assert changed_since(session, _context("Keep it green.", "2026-11-30")).digest == (
            monday.digest
        )


def test_a_resumed_session_is_told_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        session.record_run([SEED], _context("Keep it green.", "2026-11-30", branch="main"))
    with Session.open(path) as resumed:  # a day later, AGENTS.md edited, the branch gone
        told = changed_since(resumed, _context("Keep it green. Never force-push.", "2026-12-01"))
    assert told.facts[-1] == (
        CHANGED_FACT,
        "AGENTS.md (changed); date (was 2026-11-30); branch (removed)",
    )
    assert told.tail_text is not None
    assert "- changed since the previous run: AGENTS.md (changed); date (was 2026-11-30)" in (
        told.tail_text
    )


def test_a_context_that_already_has_the_fact_is_refused(tmp_path: Path) -> None:
    with (
        Session.create(tmp_path / "t.jsonl", [SEED]) as session,
        pytest.raises(ValueError, match="already has a fact"),
    ):
        changed_since(session, RunContext(facts=[(CHANGED_FACT, "x")]))
