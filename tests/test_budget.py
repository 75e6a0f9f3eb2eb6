"""Request counts, calibration from billed usage, and budgets (docs/BUDGET.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext
from runcontext.budget import (
    MAX_CALIBRATED_SHAPES,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    Budget,
    BudgetExceededError,
    Price,
    RequestCount,
    RequestCounter,
    Spent,
    Usage,
)
from runcontext.loop import Loop
from runcontext.transcript import Session


class Words:
    """A counter that counts words and remembers what it was asked."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


AGENTS = "Keep the build green and run the linter before every commit."
CTX = RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-01")])
CTX_TOMORROW = RunContext(head_sections=[("AGENTS.md", AGENTS)], facts=[("date", "2026-12-02")])
USER = {"role": "user", "content": "Fix the flaky test in the loop module."}
REPLY = {"role": "assistant", "content": "Done: it was a race on the lock."}
USER2 = {"role": "user", "content": "Now update the docs."}


def words(text: str | None) -> int:
    return 0 if text is None else len(text.split())


def message_words(message: Mapping[str, Any]) -> int:
    return sum(len(str(v).split()) for v in message.values()) + MESSAGE_OVERHEAD


# --- counting --------------------------------------------------------------------------------


def test_an_estimate_counts_each_part_with_its_overheads() -> None:
    counter = RequestCounter(Words())
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    count = counter.count_request([USER], CTX, model="gpt-x", tools=tools)
    assert count.quality == "estimated"
    assert count.head == words(CTX.head_text) + MESSAGE_OVERHEAD
    assert count.tail == words(CTX.tail_text) + MESSAGE_OVERHEAD
    assert count.conversation == REQUEST_OVERHEAD + message_words(USER)
    # The tools are their canonical JSON text, counted by the counter (one "word" here).
    assert count.tools == 1
    assert count.total == count.head + count.conversation + count.tail + count.tools
    assert count.context == count.head + count.tail
    assert count.largest() == "conversation" or count.largest() == "tail"


def test_a_message_is_its_string_values_without_keys_or_types() -> None:
    counter = Words()
    request = RequestCounter(counter)
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "two words"}, {"type": "image_url", "detail": 7}],
    }
    assert request.count_message(message) == 4 + MESSAGE_OVERHEAD
    assert counter.texts == ["user\ntwo words\n7"]


def test_a_billed_request_is_exact_and_its_continuation_calibrated() -> None:
    counter = Words()
    request = RequestCounter(counter)
    first = request.count_request([USER], CTX, model="gpt-x")
    request.calibrate(first, Usage(input=first.total + 17, output=9))

    again = request.count_request([USER], CTX, model="gpt-x")
    assert again.quality == "exact"
    assert again.total == first.total + 17  # the billed count, exactly

    counter.texts.clear()
    later = request.count_request([USER, REPLY, USER2], CTX, model="gpt-x")
    assert later.quality == "calibrated"
    # Only what was appended is estimated: the billed prefix is not counted again.
    assert counter.texts == ["assistant\n" + REPLY["content"], "user\n" + USER2["content"]]
    assert later.total == first.total + 17 + message_words(REPLY) + message_words(USER2)
    # The parts still sum to the total; the head and tail are the counter's.
    assert (later.head, later.tail) == (first.head, first.tail)


def test_a_new_tail_is_recounted_and_the_billed_prefix_kept() -> None:
    request = RequestCounter(Words())
    first = request.count_request([USER], CTX, model="gpt-x")
    request.calibrate(first, 500)
    tomorrow = request.count_request([USER], CTX_TOMORROW, model="gpt-x")
    assert tomorrow.quality == "calibrated"  # the same conversation, another tail
    assert tomorrow.total == 500 - first.tail + tomorrow.tail


@pytest.mark.parametrize(
    "change",
    ["model", "head", "tools", "conversation edited"],
)
def test_any_change_of_request_shape_invalidates_the_calibration(change: str) -> None:
    request = RequestCounter(Words())
    tools: list[dict[str, Any]] = [{"name": "a"}]
    first = request.count_request([USER, REPLY], CTX, model="gpt-x", tools=tools)
    request.calibrate(first, 400)
    model, context, messages = "gpt-x", CTX, [USER, REPLY, USER2]
    if change == "model":
        model = "gpt-y"
    elif change == "head":
        context = RunContext(head_sections=[("AGENTS.md", AGENTS + " Always.")])
    elif change == "tools":
        tools = [{"name": "b"}]
    else:
        messages = [USER, {"role": "assistant", "content": "edited"}, USER2]
    count = request.count_request(messages, context, model=model, tools=tools)
    assert count.quality == "estimated"
    assert count.total != 400


def test_a_prefix_match_picks_the_longest_billed_prefix() -> None:
    request = RequestCounter(Words())
    short = request.count_request([USER], CTX, model="m")
    request.calibrate(short, 100)
    longer = request.count_request([USER, REPLY, USER2], CTX, model="m")
    request.calibrate(longer, 300)
    count = request.count_request([USER, REPLY, USER2, REPLY], CTX, model="m")
    assert count.quality == "calibrated"
    assert count.total == 300 + message_words(REPLY)


def test_an_estimate_never_overwrites_a_billed_count() -> None:
    request = RequestCounter(Words())
    first = request.count_request([USER], CTX, model="m")
    request.calibrate(first, 999)
    # Counting a longer conversation stores its estimate; the billed prefix stays exact.
    request.count_request([USER, REPLY], CTX, model="m")
    assert request.count_request([USER], CTX, model="m").total == 999


def test_a_conversation_without_a_json_form_is_counted_but_never_calibrated() -> None:
    request = RequestCounter(Words())
    odd = {"role": "user", "content": float("nan")}
    count = request.count_request([odd], CTX, model="m")
    assert count.quality == "estimated"
    request.calibrate(count, 50)  # nothing to recognise it by: ignored
    assert request.count_request([odd], CTX, model="m").quality == "estimated"


def test_shapes_are_bounded() -> None:
    request = RequestCounter(Words())
    for index in range(MAX_CALIBRATED_SHAPES + 1):
        count = request.count_request([USER], CTX, model=f"model-{index}")
        request.calibrate(count, 10)
    # The oldest shape was dropped; the newest is still known.
    assert request.count_request([USER], CTX, model="model-0").quality == "estimated"
    last = f"model-{MAX_CALIBRATED_SHAPES}"
    assert request.count_request([USER], CTX, model=last).quality == "exact"


def test_bad_counters_usages_and_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="counter: expected a callable"):
        RequestCounter("words")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"counter: expected a token count \(int >= 0\), got -1"):
        RequestCounter(lambda text: -1).count_request([USER], CTX, model="m")
    request = RequestCounter(Words())
    with pytest.raises(TypeError, match="model: expected a non-empty model name"):
        request.count_request([USER], CTX, model="")
    count = request.count_request([USER], CTX, model="m")
    with pytest.raises(TypeError, match="usage: expected a Usage or a token count"):
        request.calibrate(count, -3)
    with pytest.raises(TypeError, match="made by this counter's count_request"):
        request.calibrate(RequestCount("m", 1, 1, 1, 1, "estimated"), 5)
    with pytest.raises(TypeError, match="tools: expected a sequence"):
        request.count_request([USER], CTX, model="m", tools={"name": "a"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Usage.input: expected a token count"):
        Usage(input=True)
    with pytest.raises(ValueError, match="exceed input"):
        Usage(input=5, cache_read=4, cache_write=2)


def test_a_count_makes_its_transcript_record() -> None:
    count = RequestCount("m", 10, 20, 5, 0, "calibrated")
    assert count.record() == {
        "head": 10,
        "conversation": 20,
        "tail": 5,
        "tools": 0,
        "quality": "calibrated",
    }
    billed = Usage(input=40, output=3, cache_read=30)
    assert count.record(billed, limit=100)["billed"] == {
        "input": 40,
        "output": 3,
        "cache_read": 30,
        "cache_write": 0,
    }
    assert "output" not in count.record(Usage(input=40))["billed"]


# --- budgets ---------------------------------------------------------------------------------


def test_a_budget_states_its_limit_and_refuses_nonsense() -> None:
    budget = Budget(context_window=128_000, reserved_output=8_000, safety_margin=2_000)
    assert budget.limit == 118_000
    with pytest.raises(ValueError, match="leave nothing of the 1000-token context window"):
        Budget(context_window=1000, reserved_output=1000)
    with pytest.raises(TypeError, match="context_window: expected a token count"):
        Budget(context_window=0)
    with pytest.raises(ValueError, match="max_session_cost needs a price"):
        Budget(context_window=1000, max_session_cost=1.0)
    with pytest.raises(TypeError, match=r"Price\.input: expected a finite number"):
        Price(input=float("inf"), output=1)


def test_the_window_refusal_says_by_how_much_and_which_part_is_largest() -> None:
    budget = Budget(context_window=1000, reserved_output=100, safety_margin=50)
    count = RequestCount("gpt-x", head=120, conversation=700, tail=40, tools=90, quality="exact")
    with pytest.raises(BudgetExceededError) as caught:
        budget.check(count)
    error = caught.value
    assert (error.reason, error.limit, error.value, error.over) == ("window", 850, 950, 100)
    assert error.largest == "conversation"
    assert str(error).startswith(
        "the request to gpt-x is 950 tokens (exact), 100 over its limit of 850 (a 1,000-token "
        "window less 100 reserved for the reply and a 50-token margin); the largest part is "
        "the conversation (700 tokens: head 120, conversation 700, tail 40, tools 90)."
    )
    budget.check(RequestCount("gpt-x", 100, 700, 40, 10, "exact"))  # 850: fits exactly


def test_session_caps() -> None:
    count = RequestCount("m", 10, 80, 10, 0, "estimated")  # 100 tokens
    inputs = Budget(context_window=1000, max_session_input=1000)
    inputs.check(count, Spent(input=900))
    with pytest.raises(BudgetExceededError, match="1,001 tokens, 1 over m's budget cap") as e:
        inputs.check(count, Spent(input=901))
    assert e.value.reason == "session-input"

    price = Price(input=2.0, output=10.0)  # per million tokens
    costs = Budget(context_window=1000, reserved_output=100, max_session_cost=0.01, price=price)
    # 100 input at 2/M + 100 reserved output at 10/M = 0.0012.
    costs.check(count, Spent(cost=0.0088))
    with pytest.raises(BudgetExceededError, match="max_session_cost") as e:
        costs.check(count, Spent(cost=0.0089))
    assert e.value.reason == "session-cost"

    clock = Budget(context_window=1000, max_session_seconds=60)
    clock.check(count, Spent(seconds=60))
    with pytest.raises(BudgetExceededError, match="max_session_seconds"):
        clock.check(count, Spent(seconds=60.5))


def test_prices_count_cached_tokens_at_their_own_rates() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(input=1_000_000, output=100_000, cache_read=600_000, cache_write=200_000)
    assert price.cost(usage) == pytest.approx(0.2 * 3 + 0.6 * 0.3 + 0.2 * 3.75 + 0.1 * 15)
    assert Price(input=1, output=1).cost(Usage(input=10)) == pytest.approx(10 / 1e6)


# --- the loop --------------------------------------------------------------------------------


class Backend:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return {"role": "assistant", "content": "ok"}


def test_a_request_over_its_window_is_never_sent_nor_recorded(tmp_path: Path) -> None:
    backend = Backend()
    path = tmp_path / "t.jsonl"
    session = Session.create(path, [USER])
    before = path.read_bytes()
    loop = Loop(backend, session, counter=Words(), model="m", budget=Budget(context_window=20))
    with pytest.raises(BudgetExceededError) as caught:
        loop.run([USER], context=CTX)
    assert backend.requests == []
    assert path.read_bytes() == before
    assert caught.value.messages == [USER]
    session.close()


def test_the_hook_compacts_history_and_the_smaller_request_is_sent() -> None:
    backend = Backend()
    long = [USER, REPLY, USER2, REPLY, USER2]
    limit = RequestCounter(Words()).count_request([USER2], CTX, model="m").total
    seen: list[BudgetExceededError] = []

    def compact(error: BudgetExceededError) -> Sequence[Mapping[str, Any]] | None:
        seen.append(error)
        assert error.messages is not None
        return list(error.messages[-1:])  # keep only the last message

    loop = Loop(
        backend,
        counter=Words(),
        model="m",
        budget=Budget(context_window=limit),
        on_over_budget=compact,
    )
    outcome = loop.run(long, context=CTX)
    assert len(seen) == 1 and seen[0].largest == "conversation"
    assert backend.requests == [[CTX.head_message, USER2, CTX.tail_message]]
    assert outcome.messages == [USER2, {"role": "assistant", "content": "ok"}]
    assert outcome.count is not None and outcome.count.total == limit


def test_a_hook_that_does_not_shrink_the_request_or_gives_up_raises() -> None:
    budget = Budget(context_window=20)
    same = Loop(Backend(), counter=Words(), budget=budget, on_over_budget=lambda e: e.messages)
    with pytest.raises(BudgetExceededError) as caught:
        same.run([USER], context=CTX)
    assert isinstance(caught.value.__cause__, BudgetExceededError)
    assert caught.value.__notes__ == [
        f"on_over_budget returned a conversation of {caught.value.count.total:,} tokens, not "
        f"fewer than the {caught.value.count.total:,} it was given"
    ]
    none = Loop(Backend(), counter=Words(), budget=budget, on_over_budget=lambda e: None)
    with pytest.raises(BudgetExceededError):
        none.run([USER], context=CTX)


def test_a_hook_gets_at_most_max_compactions_tries() -> None:
    calls: list[int] = []

    def shave(error: BudgetExceededError) -> list[Any]:
        calls.append(1)
        message = dict(USER2, content=" ".join(["w"] * (40 - 5 * len(calls))))
        return [message]

    backend = Backend()
    loop = Loop(
        backend,
        counter=Words(),
        budget=Budget(context_window=1),  # never fits
        on_over_budget=shave,
    )
    with pytest.raises(BudgetExceededError) as caught:
        loop.run([dict(USER2, content=" ".join(["w"] * 40))])
    assert len(calls) == 3
    # The refusal names the last conversation tried.
    assert caught.value.messages == [dict(USER2, content=" ".join(["w"] * 25))]
    assert backend.requests == []


def test_the_loop_records_counts_and_a_resumed_session_counts_what_it_spent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    budget = Budget(context_window=10_000, max_session_input=200)
    with Session.create(path, [USER]) as session:
        loop = Loop(Backend(), session, counter=Words(), model="m", budget=budget)
        first = loop.run([USER], context=CTX)
        assert first.run is not None and first.count is not None
        assert first.run.tokens == first.count.record(limit=10_000)
    spent = first.count.total
    conversation = [USER, {"role": "assistant", "content": "ok"}, USER2]
    following = RequestCounter(Words()).count_request(conversation, CTX, model="m").total
    with Session.open(path) as session:
        assert session.runs()[0].tokens == first.count.record(limit=10_000)
        # A cap one token short of what was spent plus the next request: refused, not sent.
        tight = Budget(context_window=10_000, max_session_input=spent + following - 1)
        backend = Backend()
        loop = Loop(backend, session, counter=Words(), model="m", budget=tight)
        assert loop.spent().input == spent
        with pytest.raises(BudgetExceededError, match="max_session_input"):
            loop.run(conversation, context=CTX)
        assert backend.requests == []
        # Exactly enough: sent, and what it used is added.
        exact = Budget(context_window=10_000, max_session_input=spent + following)
        loop = Loop(backend, session, counter=Words(), model="m", budget=exact)
        loop.run(conversation, context=CTX)
        assert loop.spent().input == spent + following


def test_loop_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="a budget needs a counter"):
        Loop(Backend(), budget=Budget(context_window=10))
    with pytest.raises(ValueError, match=r"no Budget for the model 'm3'"):
        Loop(Backend(), counter=Words(), model="m3", budget={"m1": Budget(context_window=9)})
    chosen = Loop(Backend(), counter=Words(), model="m1", budget={"m1": Budget(context_window=9)})
    assert chosen.budget == Budget(context_window=9)
    with pytest.raises(TypeError, match="on_over_budget: expected a callable"):
        Loop(Backend(), on_over_budget=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reply: expected a callable"):
        Loop(Backend(), reply="openai")  # type: ignore[arg-type]


# --- the loop over a real SDK ------------------------------------------------------------------


def test_the_loop_reads_billing_from_the_sdk_response_and_calibrates(
    httpserver: Any, tmp_path: Path
) -> None:
    """The real OpenAI client against a server on 127.0.0.1 that bills each request: the loop
    reads the usage from the SDK's response, calibrates, and records counts and billing."""
    import json

    import openai
    from werkzeug import Request, Response

    from runcontext.adapters.replies import openai_chat_reply

    billed: list[int] = []

    def answer(request: Request) -> Response:
        body = json.loads(request.get_data())
        # "Billing": every word of every message plus 4 per message (not the loop's rule).
        prompt = sum(len(str(m.get("content", "")).split()) + 4 for m in body["messages"])
        billed.append(prompt)
        reply = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "done"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 1,
                "total_tokens": prompt + 1,
            },
        }
        return Response(json.dumps(reply), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(answer)
    client = openai.OpenAI(base_url=httpserver.url_for("/v1"), api_key="test", max_retries=0)
    path = tmp_path / "t.jsonl"
    session = Session.create(path, [USER])
    loop = Loop(
        lambda body: client.chat.completions.create(model="gpt-test", messages=body),
        session,
        counter=Words(),
        model="gpt-test",
        budget=Budget(context_window=10_000),
        reply=openai_chat_reply,
    )
    first = loop.run([USER], context=CTX)
    assert first.usage == Usage(input=billed[0], output=1)
    assert first.count is not None and first.count.quality == "estimated"
    assert first.reply == {"role": "assistant", "content": "done"}

    second = loop.run([*first.messages, USER2], context=CTX)
    assert second.count is not None and second.count.quality == "calibrated"
    # The billed prefix plus the loop's estimate of the two appended messages.
    appended = message_words(first.reply) + message_words(USER2)
    assert second.count.total == billed[0] + appended
    session.close()

    runs = Session.open(path).runs()
    assert runs[0].tokens == first.count.record(first.usage, limit=10_000)
    assert runs[1].tokens is not None and runs[1].tokens["quality"] == "calibrated"
    assert runs[1].tokens["billed"] == {
        "input": billed[1],
        "output": 1,
        "cache_read": 0,
        "cache_write": 0,
    }


def test_a_loop_without_a_session_calibrates_and_counts_what_it_spent() -> None:
    from runcontext.adapters.replies import openai_chat_reply

    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 500, "completion_tokens": 1, "total_tokens": 501},
    }
    backend = Backend()

    def answer(body: Any) -> dict[str, Any]:
        backend(body)
        return completion

    budget = Budget(context_window=10_000, max_session_input=600)
    loop = Loop(answer, counter=Words(), model="m", reply=openai_chat_reply, budget=budget)
    first = loop.run([USER], context=CTX)
    assert first.usage == Usage(input=500, output=1)
    assert loop.spent().input == 500
    following = [*first.messages, USER2]
    count = loop.count_request(following, CTX)
    assert count is not None and count.quality == "calibrated"
    assert count.total == 500 + message_words(first.reply) + message_words(USER2)
    # 500 spent + the next request's count exceeds the session's 600: refused, not sent.
    with pytest.raises(BudgetExceededError, match="max_session_input"):
        loop.run(following, context=CTX)
    assert len(backend.requests) == 1
