"""Loop with a session: a conversation ``on_over_budget`` shrank is recorded as a compaction
and the same transcript continues (docs/BUDGET.md, *Compaction*), and the counter forgets
the calibrated prefixes the compaction replaced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runcontext import RunContext
from runcontext.budget import Budget, BudgetExceededError, RequestCounter
from runcontext.loop import Loop
from runcontext.transcript import Compaction, Session

SYSTEM = {"role": "system", "content": "Be brief."}
USER = {"role": "user", "content": "Fix the flaky test in the loop module please now."}
REPLY = {"role": "assistant", "content": "Done: it was a race on the lock in the loop."}
USER2 = {"role": "user", "content": "Now the docs."}
REPLY2 = {"role": "assistant", "content": "Docs done."}
USER3 = {"role": "user", "content": "Release."}
SUMMARY = {"role": "user", "content": "Summary: fixed a race."}
CTX = RunContext(facts=[("date", "2026-12-01")])


def words(text: str) -> int:
    return len(text.split())


class Backend:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return {"role": "assistant", "content": "ok"}


def test_a_hook_compaction_is_recorded_and_the_transcript_continues(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    counter = RequestCounter(words)
    session = Session.create(path, [SYSTEM, USER])
    session.record_run([SYSTEM, USER], CTX, REPLY)
    session.record_run([SYSTEM, USER, REPLY, USER2], CTX, REPLY2)
    long = [SYSTEM, USER, REPLY, USER2, REPLY2, USER3]
    short = [SYSTEM, SUMMARY, REPLY2, USER3]
    limit = counter.count_request(short, CTX, model="m").total

    def compact(error: BudgetExceededError) -> Sequence[Mapping[str, Any]] | None:
        return short

    backend = Backend()
    loop = Loop(
        backend,
        session,
        counter=counter,
        model="m",
        budget=Budget(context_window=limit),
        on_over_budget=compact,
    )
    before = counter.count_request(long, CTX, model="m")
    outcome = loop.run(long, context=CTX)
    assert outcome.messages == [*short, {"role": "assistant", "content": "ok"}]
    [compaction] = session.edits()
    assert isinstance(compaction, Compaction)
    assert (compaction.start, compaction.end, compaction.mode) == (1, 4, "summary")
    assert (compaction.tokens_before, compaction.tokens_after) == (
        before.conversation,
        outcome.count.conversation if outcome.count else None,
    )
    assert session.messages_at(3) == short
    assert session.messages_at(2) == [SYSTEM, USER, REPLY, USER2]
    session.close()
    with Session.open(path) as reopened:
        assert reopened.messages() == [*short, {"role": "assistant", "content": "ok"}]


def test_a_compaction_forgets_the_prefixes_it_replaced() -> None:
    counter = RequestCounter(words)
    conversation = [SYSTEM, USER, REPLY]
    count = counter.count_request(conversation, CTX, model="m")
    counter.calibrate(count, 100)
    assert counter.count_request(conversation, CTX, model="m").quality == "exact"
    counter.compacted(1)
    assert counter.count_request(conversation, CTX, model="m").quality == "estimated"
