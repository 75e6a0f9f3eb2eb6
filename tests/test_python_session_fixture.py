"""tests/data/python-session.jsonl is what runcontext's Python Session writes for a fixed
conversation and clock; rust/core/tests/transcript_vectors.rs verifies it with the core alone.
This test keeps the file identical to what the Session writes today."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runcontext import RunContext, Session

FIXTURE = Path(__file__).parent / "data" / "python-session.jsonl"


def write(path: Path) -> None:
    ticks = iter(range(100))
    clock = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=next(ticks))  # noqa: E731
    conversation = [{"role": "system", "content": "You are a careful agent."}]
    with Session.create(path, conversation, clock=clock) as session:
        for day, (ask, reply) in enumerate([("Fix the test.", "Fixed."), ("Docs?", "Done.")]):
            conversation.append({"role": "user", "content": ask})
            context = RunContext(
                head_sections=[("AGENTS.md", "Keep the build green.")],
                facts=[("date", f"2026-12-0{day + 1}"), ("branch", "main")],
            )
            session.record_run(conversation, context, {"role": "assistant", "content": reply})
            conversation.append({"role": "assistant", "content": reply})


def test_the_fixture_is_what_the_session_writes(tmp_path: Path) -> None:
    fresh = tmp_path / "t.jsonl"
    write(fresh)
    assert fresh.read_bytes() == FIXTURE.read_bytes(), (
        "the Session writes other bytes; regenerate: python tests/test_python_session_fixture.py"
    )


if __name__ == "__main__":
    FIXTURE.unlink(missing_ok=True)
    write(FIXTURE)
    sys.exit(0)
