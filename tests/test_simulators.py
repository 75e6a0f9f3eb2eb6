"""The cache simulators apply the providers' documented rules (tests/simulators/rules.py)."""

from __future__ import annotations

from typing import Any

import pytest
from simulators.rules import AnthropicCache, GeminiCache, OpenAICache, Rejected

HEAD = "Stable instructions for the assistant. " * 150  # about 1,500 tokens
BREAK = {"mode": "explicit"}


def part(text: str, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["prompt_cache_breakpoint"] = BREAK
    return block


def chat_body(
    turn: int, marked: bool, mode: str | None, tail_role: str = "system"
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": HEAD}]
    for n in range(1, turn + 1):
        messages.append({"role": "user", "content": [part(f"question {n}", marked and n == turn)]})
        if n < turn:
            messages.append({"role": "assistant", "content": f"answer {n}"})
    messages.append({"role": tail_role, "content": f"clock {turn}"})
    body: dict[str, Any] = {"model": "gpt-5.6", "messages": messages}
    if mode is not None:
        body["prompt_cache_options"] = {"mode": mode}
    return body


def test_openai_implicit_breakpoint_at_the_newest_message_writes_everything_reads_nothing() -> None:
    cache = OpenAICache(implicit="newest")
    usages = [cache.chat(chat_body(turn, marked=False, mode=None)) for turn in (1, 2, 3)]
    for usage in usages:
        assert usage.read == 0
        assert usage.written == usage.total  # the whole prompt, every request
        assert usage.cost() == pytest.approx(1.25)


def test_openai_implicit_at_the_last_user_message_reads_with_a_system_tail_not_a_user_one() -> None:
    cache = OpenAICache(implicit="last_user_tool")
    first, second = (cache.chat(chat_body(turn, False, None)) for turn in (1, 2))
    assert second.read == first.written and second.written_in_last_message == 0
    cache = OpenAICache(implicit="last_user_tool")
    usages = [cache.chat(chat_body(turn, False, None, tail_role="user")) for turn in (1, 2)]
    assert usages[1].read == 0 and usages[1].written == usages[1].total


@pytest.mark.parametrize("reading", ["newest", "last_user_tool"])
def test_openai_explicit_breakpoint_reads_the_previous_conversation(reading: str) -> None:
    cache = OpenAICache(implicit=reading)
    first, second, third = (cache.chat(chat_body(turn, True, "explicit")) for turn in (1, 2, 3))
    assert first.read == 0
    assert second.read == first.written  # exact match at the previous breakpoint
    assert third.read == second.read + second.written
    assert all(u.written_in_last_message == 0 for u in (first, second, third))


def test_openai_explicit_mode_without_a_breakpoint_caches_nothing() -> None:
    cache = OpenAICache()
    for turn in (1, 2):
        usage = cache.chat(chat_body(turn, marked=False, mode="explicit"))
        assert (usage.read, usage.written) == (0, 0)


def test_openai_implicit_mode_with_an_explicit_breakpoint_still_writes_the_tail() -> None:
    cache = OpenAICache(implicit="newest")
    usages = [cache.chat(chat_body(turn, True, None)) for turn in (1, 2)]
    assert usages[1].read > 0
    assert usages[1].written_in_last_message > 0


def test_openai_no_fallback_to_a_shorter_unmarked_prefix() -> None:
    cache = OpenAICache()
    cache.chat(chat_body(2, True, "explicit"))
    other = chat_body(2, True, "explicit")
    other["messages"][3]["content"][0]["text"] = "a different question"  # after the head
    assert cache.chat(other).read == 0  # the head alone was never a breakpoint


def test_openai_minimum_and_latest_80() -> None:
    cache = OpenAICache()
    small = {"messages": [{"role": "user", "content": [part("hi", True)]}]}
    assert cache.chat(small).written == 0 and cache.chat(small).read == 0
    cache = OpenAICache()
    body = chat_body(1, True, "explicit")
    cache.chat(body)
    for n in range(80):
        cache.chat({"messages": [{"role": "user", "content": [part(f"{n} {HEAD}", True)]}]})
    assert cache.chat(body).read == 0  # 80 newer entries: the first is no longer considered


def test_openai_refuses_a_breakpoint_on_assistant_content() -> None:
    body = {"messages": [{"role": "assistant", "content": [part("x", True)]}]}
    with pytest.raises(Rejected, match="not supported on assistant content"):
        OpenAICache().chat(body)


def anthropic_body(turn: int, markers: int = 1) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n in range(1, turn + 1):
        content: list[dict[str, Any]] = [{"type": "text", "text": f"question {n}"}]
        messages.append({"role": "user", "content": content})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    messages[-2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    system = [{"type": "text", "text": HEAD}]
    if markers > 1:
        system[0]["cache_control"] = {"type": "ephemeral"}
    return {"model": "claude-sonnet-5-5", "system": system, "messages": messages}


def test_anthropic_reads_through_the_lookback_and_writes_the_news() -> None:
    cache = AnthropicCache()
    first, second = cache.messages(anthropic_body(1)), cache.messages(anthropic_body(2))
    assert second.read == first.written > 0
    assert second.written > 0 and second.uncached > 0


def test_anthropic_lookback_is_20_blocks() -> None:
    cache = AnthropicCache()
    cache.messages(anthropic_body(1))
    assert cache.messages(anthropic_body(10)).read == 0  # the old entry is 27 blocks back
    cache = AnthropicCache()
    cache.messages(anthropic_body(1, markers=2))
    assert cache.messages(anthropic_body(10, markers=2)).read > 0  # the head entry still hits


def test_anthropic_refusals() -> None:
    body = anthropic_body(1, markers=2)
    body["cache_control"] = {"type": "ephemeral"}
    body["system"].append({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}})
    body["system"].append({"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}})
    with pytest.raises(
        Rejected, match=r"A maximum of 4 blocks with cache_control may be provided\. Found 5"
    ):
        AnthropicCache().messages(body)
    body = anthropic_body(1)
    body["system"][0]["cache_control"] = {"type": "ephemeral"}
    body["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(Rejected, match="ttl='1h' cache_control block must not come after"):
        AnthropicCache().messages(body)
    body = anthropic_body(1)
    body["messages"].append(
        {
            "role": "system",
            "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
        }
    )
    with pytest.raises(Rejected, match="not supported on a system message in messages"):
        AnthropicCache().messages(body)


def test_anthropic_minimum_by_model() -> None:
    cache = AnthropicCache()
    body = anthropic_body(1)
    body["model"] = "claude-haiku-4-5"  # 4,096 tokens: this prefix is too short
    assert cache.messages(body).written == 0
    assert cache.messages(body).read == 0


def test_gemini_implicit_prefix_and_minimum() -> None:
    def body(turn: int) -> dict[str, Any]:
        contents = [{"role": "user", "parts": [{"text": f"q{n}"}]} for n in range(turn)]
        return {"systemInstruction": {"parts": [{"text": HEAD * 2}]}, "contents": contents}

    cache = GeminiCache()
    cache.generate("gemini-2.5-flash", body(1))
    second = cache.generate("gemini-2.5-flash", body(2))
    assert second.read > 0 and second.written == 0
    cache = GeminiCache()
    cache.generate("gemini-3.1-pro", body(1))
    assert cache.generate("gemini-3.1-pro", body(2)).read == 0  # about 3,000: below 4,096
