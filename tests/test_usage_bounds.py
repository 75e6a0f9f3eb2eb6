"""Every token count is bounded where it enters (MAX_TOKEN_COUNT): an implausible bill is read
as unreadable, never calibrated and never recorded, so it cannot fail a paid run, this one or
the next; a count beyond the bound is refused before the backend is called."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runcontext import Loop, Session
from runcontext.budget import (
    MAX_TOKEN_COUNT,
    Budget,
    BudgetExceededError,
    RequestCount,
    RequestCounter,
    UnreadableUsageWarning,
    Usage,
    anthropic_usage,
    openai_chat_usage,
    openai_responses_usage,
    read_usage,
)

SEED = {"role": "system", "content": "You are a careful coding agent."}
ANSWER = {"role": "assistant", "content": "ok"}
TRANSCRIPT_MAX = 2**53 - 1


def words(text: str) -> int:
    return len(text.split())


def chat(prompt: int, output: int = 5) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": output}
    return {"object": "chat.completion", "usage": usage}


def responses(prompt: int) -> dict[str, Any]:
    return {"object": "response", "status": "completed", "usage": {"input_tokens": prompt}}


def anthropic(uncached: int, read: int = 0, written: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": 5,
    }
    return {"type": "message", "usage": usage}


# The second of three runs is billed this (the first and third are billed normally), and the
# member the warning names.
BAD_BILLS = {
    "chat-10**30": (chat(10**30), r"prompt_tokens: 10{30} tokens is beyond MAX_TOKEN_COUNT"),
    "chat-2**53-1": (chat(TRANSCRIPT_MAX), r"prompt_tokens: 9007199254740991 tokens is beyond"),
    "chat-output": (chat(200, output=10**30), r"completion_tokens: 10{30} tokens is beyond"),
    "responses-2**53-1": (responses(TRANSCRIPT_MAX), r"usage\.input_tokens: 9007199254740991"),
    "anthropic-sum": (
        anthropic(2**40, 2**40, 2**40),
        r"input_tokens \+ cache_read_input_tokens \+ cache_creation_input_tokens: 3298534883328",
    ),
}


class Billing:
    """A backend that bills each request as it is told, in a provider's response shape."""

    def __init__(self, bills: list[dict[str, Any]]) -> None:
        self.bills = bills
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return self.bills[len(self.requests) - 1]


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [SEED]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn} about the build"})
        if turn < turns - 1:
            messages.append(ANSWER)
    return messages


@pytest.mark.parametrize("bad", list(BAD_BILLS))
def test_an_implausible_bill_loses_no_run(tmp_path: Path, bad: str) -> None:
    bill, named = BAD_BILLS[bad]
    normal = chat(40) if "anthropic" not in bad else anthropic(40)
    backend = Billing([normal, bill, normal])
    with Session.create(tmp_path / "s.jsonl", [SEED]) as session:
        loop = Loop(
            backend,
            session=session,
            counter=words,
            model="m",
            budget=Budget(context_window=128_000),
            reply=lambda response: ANSWER,
        )
        outcomes = [loop.run(conversation(1))]
        with pytest.warns(UnreadableUsageWarning, match=named) as caught:
            outcomes.append(loop.run(conversation(2)))
        assert "the run is recorded without it" in str(caught[0].message)
        assert caught[0].filename == __file__  # points at the caller's loop.run
        outcomes.append(loop.run(conversation(3)))
        runs = session.runs()
    assert len(backend.requests) == 3
    assert len(runs) == 3  # every paid run recorded
    assert [o.usage is None for o in outcomes] == [False, True, False]
    assert "billed" in runs[0].tokens and "billed" not in runs[1].tokens  # type: ignore[operator]
    assert runs[2].tokens["billed"]["input"] == 40  # type: ignore[index]
    # The third count is calibrated by the first bill, not by the implausible one.
    third = outcomes[2].count
    assert third is not None and third.quality == "calibrated"
    assert third.total < 1_000


def test_the_async_loop_reads_an_implausible_bill_as_none(tmp_path: Path) -> None:
    backend = Billing([chat(10**30)])
    with Session.create(tmp_path / "s.jsonl", [SEED]) as session:
        loop = Loop(backend, session=session, counter=words, model="m", reply=lambda r: ANSWER)
        with pytest.warns(UnreadableUsageWarning, match="beyond MAX_TOKEN_COUNT"):
            outcome = asyncio.run(loop.arun(conversation(1)))
        assert outcome.usage is None and outcome.run is not None
        assert "billed" not in session.runs()[0].tokens  # type: ignore[operator]


def test_a_missing_usage_warns_too(tmp_path: Path) -> None:
    backend = Billing([{"object": "chat.completion"}])
    loop = Loop(backend, counter=words, model="m", reply=lambda r: ANSWER)
    with pytest.warns(UnreadableUsageWarning, match="this Chat Completions response carries no"):
        assert loop.run(conversation(1)).usage is None


@pytest.mark.parametrize(
    ("reader", "response", "where"),
    [
        (openai_chat_usage, chat(2**40 + 1), "response.usage.prompt_tokens"),
        (openai_chat_usage, chat(5, output=2**40 + 1), "response.usage.completion_tokens"),
        (
            openai_chat_usage,
            {
                "object": "chat.completion",
                "usage": {
                    "prompt_tokens": 10,
                    "prompt_tokens_details": {"cached_tokens": 2**40 + 1},
                },
            },
            "response.usage.prompt_tokens_details.cached_tokens",
        ),
        (openai_responses_usage, responses(2**40 + 1), "response.usage.input_tokens"),
        (anthropic_usage, anthropic(2**40 + 1), "response.usage.input_tokens"),
        (anthropic_usage, anthropic(1, read=2**40 + 1), "response.usage.cache_read_input_tokens"),
        (
            anthropic_usage,
            anthropic(2**39, read=2**39, written=1),
            "response.usage: input_tokens + cache_read_input_tokens + cache_creation_input_tokens",
        ),
    ],
    ids=["chat", "chat-output", "chat-cached", "responses", "anthropic", "anthropic-read", "sum"],
)
def test_every_reader_bounds_every_count(reader: Any, response: Any, where: str) -> None:
    message = f"{where}: {2**40 + 1} tokens is beyond MAX_TOKEN_COUNT (1,099,511,627,776)"
    escaped = message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")
    with pytest.raises(ValueError, match="^" + escaped):
        reader(response)
    with pytest.raises(ValueError, match=escaped):
        read_usage(response)


def test_the_bound_itself_is_a_count() -> None:
    assert MAX_TOKEN_COUNT == 2**40
    assert read_usage(chat(MAX_TOKEN_COUNT)).input == MAX_TOKEN_COUNT
    assert anthropic_usage(anthropic(MAX_TOKEN_COUNT - 2, 1, 1)) == Usage(
        input=MAX_TOKEN_COUNT, output=5, cache_read=1, cache_write=1
    )
    with pytest.raises(ValueError, match=r"^Usage\.cache_read: 1099511627777 tokens is beyond"):
        Usage(input=1, cache_read=MAX_TOKEN_COUNT + 1)


def test_calibrate_refuses_an_implausible_count_and_learns_nothing() -> None:
    counter = RequestCounter(words)
    messages = conversation(1)
    count = counter.count_request(messages, None, model="m")
    with pytest.raises(ValueError, match=r"^usage: 9007199254740991 tokens is beyond MAX_TOKEN"):
        counter.calibrate(count, TRANSCRIPT_MAX)
    assert counter.count_request(messages, None, model="m") == count
    counter.calibrate(count, 40)
    assert counter.count_request(messages, None, model="m").total == 40


def test_a_counter_beyond_the_bound_is_refused_before_the_call(tmp_path: Path) -> None:
    backend = Billing([chat(10)])
    loop = Loop(backend, counter=lambda text: 10**30, model="m", reply=lambda r: ANSWER)
    with pytest.raises(ValueError, match=r"^counter: counted 10{30} tokens in a text of 38 char"):
        loop.run(conversation(1))
    assert backend.requests == []


def test_a_sum_beyond_the_bound_is_refused_before_the_call() -> None:
    # Each message is a plausible count; the conversation's sum is not.
    backend = Billing([chat(10)])
    loop = Loop(backend, counter=lambda text: 2**39, model="m", reply=lambda r: ANSWER)
    with pytest.raises(
        ValueError,
        match=r"^the request to m counts 2,199,023,255,567 tokens \(head 0, conversation "
        r"2,199,023,255,567, tail 0, tools 0\), beyond MAX_TOKEN_COUNT \(1,099,511,627,776\)",
    ):
        loop.run(conversation(2))
    assert backend.requests == []


def test_a_budget_window_beyond_the_bound_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^Budget\.context_window: 1099511627777 tokens is"):
        Budget(context_window=MAX_TOKEN_COUNT + 1)


def test_a_recorded_run_billed_beyond_the_bound_still_counts_as_spent(tmp_path: Path) -> None:
    """The transcript holds counts up to 2**53 - 1 (another writer's): summed, never refused."""
    path = tmp_path / "s.jsonl"
    tokens = {"head": 0, "conversation": 9, "tail": 0, "tools": 0, "quality": "estimated"}
    billed = {"input": TRANSCRIPT_MAX, "cache_read": 0, "cache_write": 0, "output": TRANSCRIPT_MAX}
    with Session.create(path, [SEED]) as session:
        session.record_run(conversation(1), None, ANSWER, tokens={**tokens, "billed": billed})
    budget = Budget(context_window=128_000, max_session_input=1_000_000)
    with Session.open(path) as session:
        backend = Billing([chat(10)])
        loop = Loop(backend, session=session, counter=words, model="m", budget=budget)
        assert loop.spent().input == TRANSCRIPT_MAX
        with pytest.raises(BudgetExceededError, match="max_session_input") as info:
            loop.run(conversation(2))
        assert info.value.reason == "session-input"
        assert backend.requests == []
        assert len(session.runs()) == 1


def test_a_request_count_is_bounded_part_by_part_and_in_sum() -> None:
    with pytest.raises(ValueError, match=r"^RequestCount\.tail: 1099511627777 tokens is beyond"):
        RequestCount("m", 0, 0, MAX_TOKEN_COUNT + 1, 0, "estimated")
    with pytest.raises(
        ValueError, match=r"^RequestCount: head \+ conversation \+ tail \+ tools: 1099511627777"
    ):
        RequestCount("m", MAX_TOKEN_COUNT, 1, 0, 0, "estimated")
    with pytest.raises(TypeError, match=r"^RequestCount\.head: expected a token count"):
        RequestCount("m", 1.5, 0, 0, 0, "estimated")  # type: ignore[arg-type]
