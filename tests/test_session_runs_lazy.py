"""Runs read back: each context is built only when asked for, and a run's sections and facts are
its context's without building it (what `runcontext log` lists from)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from runcontext import RunContext
from runcontext.transcript import Session
from runcontext.transcript.changes import changes

SEED = {"role": "system", "content": "You are careful."}
AGENTS = "Keep the build green.\n" * 50


def clock() -> object:
    ticks = iter(range(1_000_000))
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    return lambda: start + timedelta(seconds=next(ticks))


CONTEXTS = [
    RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-01")]),
    RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-02")]),
    RunContext(
        head_sections=[("AGENTS.md", AGENTS), ("tools", "grep, sed")],
        facts=[("date", "2026-12-02"), ("branch", "main")],
        tail_sections=[("notes", "Nothing urgent.")],
    ),
    RunContext(),
    RunContext(tail_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-03")]),
    RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-01")]),
]


def written(path: Path) -> None:
    conversation: list[dict[str, str]] = [SEED]
    with Session.create(path, conversation, clock=clock()) as session:  # type: ignore[arg-type]
        for i, context in enumerate(CONTEXTS):
            conversation.append({"role": "user", "content": f"step {i}"})
            reply = {"role": "assistant", "content": "ok"}
            session.record_run(conversation, context, reply)
            conversation.append(reply)


def test_sections_and_facts_are_the_contexts_and_no_context_is_built_for_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    written(path)
    with Session.open(path) as session:
        runs = session.runs()
        assert [(run.sections, run.facts) for run in runs] == [
            (c.sections, c.facts) for c in CONTEXTS
        ]
        assert [changes(runs[i - 1] if i else None, run) for i, run in enumerate(runs)] == [
            changes(CONTEXTS[i - 1] if i else None, c) for i, c in enumerate(CONTEXTS)
        ]
        assert [run.context.digest for run in runs] == [run.digest for run in runs]
        assert [run.context for run in runs] == CONTEXTS


def test_a_section_body_is_one_string_shared_by_every_run(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    written(path)
    with Session.open(path) as session:
        runs = session.runs()
    texts = [s.text for run in runs for s in run.sections if s.name == "AGENTS.md"]
    assert len(texts) == 5 and all(text is texts[0] for text in texts)
    assert texts[0] == AGENTS.rstrip()


def test_runs_are_the_same_objects_on_every_call_and_usable_after_close(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    written(path)
    session = Session.open(path)
    first = session.runs()
    again = session.runs()
    assert first == again and first is not again  # a fresh list of the same runs
    assert all(a is b for a, b in zip(first, again, strict=True))
    session.close()
    assert first[2].context == CONTEXTS[2]  # built after close, from what was read
    assert "context" not in repr(first[2]) and "number=3" in repr(first[2])


def test_a_run_recorded_by_this_session_keeps_the_context_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    written(path)
    context = RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-09")])
    with Session.open(path) as session:
        conversation = session.messages()
        run = session.record_run(conversation, context)
        assert run.context is context
        assert session.runs()[-1].context is context
        assert run.sections == context.sections and run.facts == context.facts
    with Session.open(path) as reopened:
        assert reopened.runs()[-1].context == context
