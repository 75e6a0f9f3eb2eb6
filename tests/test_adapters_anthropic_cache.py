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
