"""Meter, the budget gate Loop and the integrations share: the count, the refusal before a
request is sent, the session caps over a resumed transcript's recorded runs, the settled record."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import RunContext, Session
from runcontext.budget import Budget, BudgetExceededError, Usage
from runcontext.budget.meter import Meter

CONTEXT = RunContext(head_sections=[("identity", "You are careful.")], facts=[("date", "today")])
QUESTION = [{"role": "user", "content": "Is T-1 open?"}]


def test_a_request_over_the_window_is_refused_with_its_messages() -> None:
    meter = Meter(len, Budget(context_window=40))
    count = meter.count(QUESTION, CONTEXT)
    assert count is not None and count.total > 40
    with pytest.raises(BudgetExceededError, match="over its limit of 40") as info:
        meter.check(count, QUESTION)
    assert info.value.reason == "window" and info.value.messages == QUESTION


def test_without_a_counter_nothing_is_counted_or_checked() -> None:
    meter = Meter()
    assert meter.count(QUESTION, CONTEXT) is None
    meter.check(None, QUESTION)
    assert meter.settle(None, Usage(input=5)) is None


def test_a_budget_needs_a_counter_and_a_named_model_for_a_mapping() -> None:
    with pytest.raises(ValueError, match="a budget needs a counter"):
        Meter(None, Budget(context_window=100))
    with pytest.raises(ValueError, match=r"no Budget for the model 'gpt-6-luna'"):
        Meter(len, {"claude-sonnet-5-5": Budget(context_window=100)}, model="gpt-6-luna")


def test_session_caps_count_a_resumed_transcripts_runs(tmp_path: Path) -> None:
    budget = Budget(context_window=100_000, max_session_input=1_000)
    with Session.create(tmp_path / "t.jsonl", QUESTION) as session:
        first = Meter(len, budget, session=session)
        count = first.count(QUESTION, CONTEXT)
        first.check(count, QUESTION)
        tokens = first.settle(count, Usage(input=900))
        assert tokens is not None and tokens["billed"]["input"] == 900
        reply = {"role": "assistant", "content": "yes"}
        session.record_run(QUESTION, CONTEXT, reply, tokens=tokens)
    with Session.open(tmp_path / "t.jsonl") as session:
        resumed = Meter(len, budget, session=session)  # reads the recorded 900 tokens
        assert resumed.spent().input == 900
        count = resumed.count(QUESTION, CONTEXT)
        with pytest.raises(BudgetExceededError, match="session") as info:
            resumed.check(count, QUESTION)
        assert info.value.reason == "session-input"


def test_a_session_given_later_counts_what_it_records(tmp_path: Path) -> None:
    budget = Budget(context_window=100_000, max_session_input=1_000)
    with Session.create(tmp_path / "t.jsonl", QUESTION) as session:
        tokens = {"head": 1, "conversation": 1, "tail": 1, "tools": 0, "quality": "exact"}
        tokens["billed"] = {"input": 950, "cache_read": 0, "cache_write": 0}  # type: ignore[assignment]
        session.record_run(
            QUESTION, CONTEXT, {"role": "assistant", "content": "yes"}, tokens=tokens
        )
        meter = Meter(len, budget)  # an integration opens its transcript on the first request
        assert meter.spent().input == 0
        meter.session = session
        assert meter.spent().input == 950
