"""Anthropic cache markers: never on a system turn, TTLs longest first, no top-level marker."""

from __future__ import annotations

import pytest

from runcontext import RunContext
from runcontext.adapters import anthropic_messages

CONTEXT = RunContext(head_sections=[("instructions", "Be brief.")], facts=[("clock", "09:00")])


def test_anthropic_never_marks_a_system_turn_and_sends_no_top_level_cache_control() -> None:
    messages = [
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "And now?"},
        {"role": "system", "content": "Turn-scoped note."},
    ]
    body = anthropic_messages(messages, CONTEXT)
    assert set(body) == {"system", "messages"}  # no top-level automatic cache_control
    assert body["messages"][3] is messages[3]
    assert body["messages"][2]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert str(body).count("cache_control") == 2


def test_anthropic_ttl_goes_on_the_adapters_markers() -> None:
    body = anthropic_messages([{"role": "user", "content": "Hi"}], CONTEXT, ttl="1h")
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"][0]["cache_control"] == marker
    assert body["messages"][0]["content"][0]["cache_control"] == marker


def test_anthropic_ttl_order_refused_with_the_fix() -> None:
    mine = {"type": "text", "text": "Policy.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    messages = [{"role": "user", "content": "Hi"}]
    with pytest.raises(
        ValueError,
        match=r"your marker in system\[0\] has ttl '1h' after the head's marker \(system\[0\]\) "
        r"with ttl '5m'; the Messages API needs longer TTLs first: pass ttl='1h'",
    ):
        anthropic_messages(messages, CONTEXT, system=[mine])
    body = anthropic_messages(messages, CONTEXT, system=[mine], ttl="1h")
    assert body["system"][1] is mine
    early = {"type": "text", "text": "Old.", "cache_control": {"type": "ephemeral"}}
    with pytest.raises(
        ValueError,
        match=r"the conversation marker \(messages\[1\]\) has ttl '1h' after your marker in "
        r"messages\[0\] with ttl '5m'.*pass ttl='5m'",
    ):
        anthropic_messages(
            [{"role": "user", "content": [early]}, {"role": "user", "content": "x"}],
            None,
            ttl="1h",
        )


def test_anthropic_ttl_error() -> None:
    with pytest.raises(ValueError, match="ttl: expected '5m' or '1h', got '30m'"):
        anthropic_messages([{"role": "user", "content": "Hi"}], CONTEXT, ttl="30m")


def test_anthropic_ttl_order_counts_your_markers_in_the_conversation_markers_message() -> None:
    # messages[0] gets the conversation marker and already holds your 1h marker: after the
    # adapter's five-minute head marker, the API would refuse the request.
    mine = {"type": "text", "text": "Policy.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    messages = [{"role": "user", "content": [mine, {"type": "text", "text": "Hi"}]}]
    with pytest.raises(
        ValueError,
        match=r"^cache_control TTLs: your marker in messages\[0\] has ttl '1h' after the head's "
        r"marker \(system\[0\]\) with ttl '5m'; the Messages API needs longer TTLs first: pass "
        r"ttl='1h' to the adapter, or change your markers' ttl$",
    ):
        anthropic_messages(messages, CONTEXT)
    body = anthropic_messages(messages, CONTEXT, ttl="1h")
    assert body["messages"][0]["content"][0] is mine
    assert body["messages"][0]["content"][1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_anthropic_ttl_order_inside_the_block_the_adapter_marks() -> None:
    # The adapter marks the tool_result; your 1h marker nested in it comes after its marker
    # in the reading every block gets (a block's marker, then its nested blocks').
    nested = {"type": "text", "text": "out", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [nested]}
    with pytest.raises(
        ValueError,
        match=r"^cache_control TTLs: your marker in messages\[0\] has ttl '1h' after the "
        r"conversation marker \(messages\[0\]\) with ttl '5m'.*pass ttl='1h'",
    ):
        anthropic_messages([{"role": "user", "content": [result]}], None)


@pytest.mark.parametrize(("cache", "name"), [(1, "int"), (None, "NoneType"), ("no", "str")])
def test_anthropic_cache_must_be_a_bool(cache: object, name: str) -> None:
    with pytest.raises(TypeError, match=rf"^cache: expected a bool, got {name}$"):
        anthropic_messages([{"role": "user", "content": "Hi"}], CONTEXT, cache=cache)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "name"), [(["text"], "list"), ({"text": 1}, "dict"), (None, "NoneType")]
)
def test_anthropic_block_type_must_be_a_string(kind: object, name: str) -> None:
    block = {"type": kind, "text": "Hi"}
    with pytest.raises(
        TypeError, match=rf"^messages\[1\]\.content\[0\]\.type: expected a string, got {name}$"
    ):
        anthropic_messages(
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [block]}],
            CONTEXT,
        )
    with pytest.raises(TypeError, match=rf"^system\[0\]\.type: expected a string, got {name}$"):
        anthropic_messages([{"role": "user", "content": "Hi"}], CONTEXT, system=[block])
