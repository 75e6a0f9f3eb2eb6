"""Provider adapters: placement of head and tail, cache markers, validation, no mutation."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runcontext import RunContext, splice
from runcontext.adapters import (
    ANTHROPIC_MAX_BREAKPOINTS,
    anthropic_messages,
    openai_chat,
    openai_responses,
)

HEAD_TEXT = "You are a careful assistant."
CONTEXT = RunContext(
    head_sections=[("instructions", HEAD_TEXT)],
    facts=[("clock", "2025-06-01T09:00:00Z"), ("git HEAD", "4f1c2d9")],
)
TAIL_TEXT = CONTEXT.tail_text
EPHEMERAL = {"type": "ephemeral"}


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Where is the config?"},
        {"role": "assistant", "content": "In etc/."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Read"}, {"type": "text", "text": "it"}],
        },
    ]


def same_objects(got: list[Any], sent: list[Any]) -> bool:
    return len(got) == len(sent) and all(a is b for a, b in zip(got, sent, strict=True))


def breakpoints(value: Any) -> int:
    """Every ``cache_control`` marker in ``value`` at any depth: the API counts nested ones."""
    if isinstance(value, dict):
        own = int(value.get("cache_control") is not None)
        return own + sum(breakpoints(item) for key, item in value.items() if key != "cache_control")
    if isinstance(value, list | tuple):
        return sum(breakpoints(item) for item in value)
    return 0


# OpenAI Chat Completions


def test_openai_chat_head_first_tail_last() -> None:
    messages = chat()
    before = copy.deepcopy(messages)
    request = openai_chat(messages, CONTEXT)
    assert request[0] == {"role": "system", "content": HEAD_TEXT}
    assert request[-1] == {"role": "system", "content": TAIL_TEXT}
    assert same_objects(request[1:-1], messages)
    assert messages == before


def test_openai_chat_with_system_role_is_the_splice() -> None:
    messages = chat()
    head_only = RunContext(head_sections=[("h", HEAD_TEXT)])
    for context in (CONTEXT, head_only, RunContext(facts=[("a", "b")]), None):
        request = openai_chat(messages, context)
        assert request == splice(messages, context)
        start = int(context is not None and context.head_text is not None)
        assert same_objects(request[start : start + len(messages)], messages)


def test_openai_chat_developer_role() -> None:
    messages = chat()
    request = openai_chat(messages, CONTEXT, role="developer")
    assert request[0] == {"role": "developer", "content": HEAD_TEXT}
    assert request[-1] == {"role": "developer", "content": TAIL_TEXT}
    assert same_objects(request[1:-1], messages)
    tail_only = openai_chat(messages, RunContext(facts=[("a", "b")]), role="developer")
    assert same_objects(tail_only[:-1], messages)
    assert tail_only[-1]["role"] == "developer"


def test_openai_chat_tail_is_last_even_after_assistant_and_tool_turns() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    ]
    request = openai_chat(messages, CONTEXT)
    assert same_objects(request[1:-1], messages)
    assert request[-1]["content"] == TAIL_TEXT


def test_openai_chat_without_context_or_parts() -> None:
    messages = chat()
    assert same_objects(openai_chat(messages, None), messages)
    assert openai_chat(messages, None) is not messages
    tail_only = openai_chat(messages, RunContext(facts=[("clock", "now")]))
    assert same_objects(tail_only[:-1], messages)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: openai_chat(chat(), CONTEXT, role="user"), ValueError, "role: expected 'system'"),
        (
            lambda: openai_chat([{"role": "user"}, {"role": "human"}], None),
            ValueError,
            r"messages\[1\]\.role: OpenAI Chat does not accept the role 'human'; expected one of",
        ),
        (
            lambda: openai_chat([{"role": 3}], None),
            TypeError,
            r"messages\[0\]\.role: expected a string, got int",
        ),
        (
            lambda: openai_chat([{"role": "user"}, {"role": ["user"]}], None),
            TypeError,
            r"messages\[1\]\.role: expected a string, got list",
        ),
        (lambda: openai_chat("hi", None), TypeError, "messages: expected a sequence"),  # type: ignore[arg-type]
        (
            lambda: openai_chat(chat(), {"clock": "now"}),  # type: ignore[arg-type]
            TypeError,
            "context: expected a runcontext.RunContext or None, got dict",
        ),
    ],
)
def test_openai_chat_errors(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# OpenAI Responses


def test_openai_responses_instructions_and_developer_tail() -> None:
    items = [
        {"role": "user", "content": "Run the tests"},
        {"type": "function_call", "call_id": "c1", "name": "pytest", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    before = copy.deepcopy(items)
    body = openai_responses(items, CONTEXT)
    assert list(body) == ["instructions", "input"]
    assert body["instructions"] == HEAD_TEXT
    assert same_objects(body["input"][:-1], items)
    assert body["input"][-1] == {"role": "developer", "content": TAIL_TEXT}
    assert items == before


def test_openai_responses_without_head_has_no_instructions_key() -> None:
    body = openai_responses([{"role": "user", "content": "hi"}], RunContext(facts=[("a", "b")]))
    assert list(body) == ["input"]
    assert body["input"][-1]["role"] == "developer"
    assert openai_responses([], None) == {"input": []}


def test_openai_responses_string_input_is_one_user_message() -> None:
    body = openai_responses("hi", CONTEXT)
    assert body["input"][0] == {"role": "user", "content": "hi"}
    assert len(body["input"]) == 2


@pytest.mark.parametrize(
    ("items", "error", "message"),
    [
        ([{"content": "x"}], TypeError, r"input\[0\]: an input item needs a 'role'"),
        ([{"role": {"a": 1}}], TypeError, r"input\[0\]\.role: expected a string, got dict"),
        ([{"role": "tool", "content": "x"}], ValueError, r"input\[0\]\.role: OpenAI Responses"),
        ([{"role": "user", "content": "x"}, 7], TypeError, r"input\[1\]: expected an input item"),
        (b"hi", TypeError, "input: expected a string or a sequence of input items, got bytes"),
    ],
)
def test_openai_responses_errors(items: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        openai_responses(items, CONTEXT)


# Anthropic Messages


def test_anthropic_head_system_block_tail_user_turn_and_cache_markers() -> None:
    messages = chat()
    before = copy.deepcopy(messages)
    body = anthropic_messages(messages, CONTEXT)
    assert list(body) == ["system", "messages"]
    assert body["system"] == [{"type": "text", "text": HEAD_TEXT, "cache_control": EPHEMERAL}]
    sent = body["messages"]
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": TAIL_TEXT}]}
    assert same_objects(sent[:2], messages[:2])
    marked = sent[2]
    assert marked is not messages[2]
    assert marked["content"] is not messages[2]["content"]
    assert marked["content"][0] is messages[2]["content"][0]
    assert marked["content"][1] == {"type": "text", "text": "it", "cache_control": EPHEMERAL}
    assert messages == before
    assert breakpoints(body) == 2


def test_anthropic_string_content_becomes_a_block_only_in_the_copy() -> None:
    messages = [{"role": "user", "content": "hello"}]
    body = anthropic_messages(messages, CONTEXT)
    assert body["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hello", "cache_control": EPHEMERAL}],
    }
    assert messages == [{"role": "user", "content": "hello"}]


def test_anthropic_marked_copy_keeps_other_keys() -> None:
    messages = [{"role": "user", "content": "hello", "name": "kept"}]
    marked = anthropic_messages(messages, None)["messages"][0]
    assert marked["name"] == "kept"


def test_anthropic_prefill_stays_last_and_the_tail_goes_before_it() -> None:
    messages = [
        *chat()[:2],
        {"role": "user", "content": "Go on"},
        {"role": "assistant", "content": "{"},
    ]
    body = anthropic_messages(messages, CONTEXT)
    sent = body["messages"]
    assert sent[-1] is messages[-1]
    assert sent[-2]["content"] == [{"type": "text", "text": TAIL_TEXT}]
    assert sent[-3]["content"][-1]["cache_control"] == EPHEMERAL  # the turn before the tail
    assert same_objects(sent[:2], messages[:2])


def test_anthropic_without_cache_everything_is_by_identity() -> None:
    messages = chat()
    body = anthropic_messages(messages, CONTEXT, cache=False)
    assert body["system"] == [{"type": "text", "text": HEAD_TEXT}]
    assert same_objects(body["messages"][:-1], messages)
    assert breakpoints(body) == 0


def test_anthropic_without_head_has_no_system_key() -> None:
    body = anthropic_messages(chat(), RunContext(facts=[("a", "b")]))
    assert list(body) == ["messages"]
    assert breakpoints(body) == 1
    body = anthropic_messages(chat(), None)
    assert list(body) == ["messages"]
    assert len(body["messages"]) == 3
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL


def test_anthropic_empty_conversation_is_the_tail_alone() -> None:
    body = anthropic_messages([], CONTEXT)
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": TAIL_TEXT}]}]
    with pytest.raises(ValueError, match="the conversation is empty and the context has no tail"):
        anthropic_messages([], RunContext(head_sections=[("h", "x")]))


def test_anthropic_tail_as_system_turn() -> None:
    messages = chat()
    body = anthropic_messages(messages, CONTEXT, tail_role="system")
    assert body["messages"][-1] == {
        "role": "system",
        "content": [{"type": "text", "text": TAIL_TEXT}],
    }
    prefill = [*messages, {"role": "assistant", "content": "Sure"}]
    body = anthropic_messages(prefill, CONTEXT, tail_role="system")
    assert [m["role"] for m in body["messages"][-3:]] == ["user", "system", "assistant"]


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([], "a system turn must follow a user turn, but the tail would go at the start"),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 1
            + [{"role": "assistant", "content": "c"}],
            r"but the tail would go after messages\[1\], a non-user turn; use tail_role='user'",
        ),
    ],
)
def test_anthropic_system_tail_never_first_nor_after_assistant(
    messages: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        anthropic_messages(messages, CONTEXT, tail_role="system")


def test_anthropic_callers_system_goes_after_the_head() -> None:
    blocks = [{"type": "text", "text": "Project rules."}]
    body = anthropic_messages(chat(), CONTEXT, system=blocks)
    assert body["system"][1] is blocks[0]
    assert body["system"][0]["text"] == HEAD_TEXT
    body = anthropic_messages(chat(), CONTEXT, system="Project rules.")
    assert body["system"][1] == {"type": "text", "text": "Project rules."}
    body = anthropic_messages(chat(), None, system=blocks)
    assert body["system"] is blocks


def test_anthropic_thinking_block_is_passed_over_for_the_turn_before() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "assistant", "content": "prefill"},
    ]
    body = anthropic_messages(messages, CONTEXT)
    sent = body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "b", "cache_control": EPHEMERAL}],
    }
    assert sent[0] is messages[0]
    assert sent[2] is messages[2]
    assert sent[4] is messages[3]
    assert breakpoints(body) == 2


@pytest.mark.parametrize("blank", ["", " \n\t"])
def test_anthropic_blank_text_is_never_marked(blank: str) -> None:
    # The API refuses cache_control on a text block without visible text (and string content
    # is one text block): the marker goes on the block, or the turn, before it.
    blocks = [{"type": "text", "text": "Read"}, {"type": "text", "text": blank}]
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    body = anthropic_messages([*messages, {"role": "user", "content": blocks}], CONTEXT)
    marked = body["messages"][2]["content"]
    assert marked[0] == {"type": "text", "text": "Read", "cache_control": EPHEMERAL}
    assert marked[1] is blocks[1]
    assert breakpoints(body) == 2

    body = anthropic_messages([*messages, {"role": "user", "content": blank}], CONTEXT)
    sent = body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "b", "cache_control": EPHEMERAL}],
    }
    assert sent[2] == {"role": "user", "content": blank}  # the caller's, untouched
    assert breakpoints(body) == 2


def test_anthropic_nothing_markable_means_only_the_head_breakpoint() -> None:
    messages = [{"role": "user", "content": ""}, {"role": "assistant", "content": "prefill"}]
    body = anthropic_messages(messages, CONTEXT)
    assert same_objects([body["messages"][0], body["messages"][2]], messages)
    assert body["system"][0]["cache_control"] == EPHEMERAL
    assert breakpoints(body) == 1


def test_anthropic_marker_scan_stops_at_a_callers_marker() -> None:
    # The caller's marker already ends a cached prefix; nothing is added after it in the scan.
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [block(True)]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": "prefill"},
    ]
    body = anthropic_messages(messages, CONTEXT)
    assert same_objects([m for m in body["messages"] if m["role"] == "assistant"], messages[1:])
    assert body["messages"][0] is messages[0]
    assert breakpoints(body) == 2  # the caller's and the head's


@pytest.mark.parametrize("system", ["", "  \n"])
def test_anthropic_blank_system_string_adds_no_empty_block(system: str) -> None:
    body = anthropic_messages(chat(), CONTEXT, system=system)
    assert body["system"] == [{"type": "text", "text": HEAD_TEXT, "cache_control": EPHEMERAL}]
    assert anthropic_messages(chat(), None, system=system)["system"] is system


def test_anthropic_markers_are_new_dicts_each_time() -> None:
    body = anthropic_messages([{"role": "user", "content": "hello"}], CONTEXT)
    head_marker = body["system"][0]["cache_control"]
    conversation_marker = body["messages"][0]["content"][0]["cache_control"]
    assert head_marker is not conversation_marker
    head_marker["ttl"] = "1h"
    again = anthropic_messages([{"role": "user", "content": "hello"}], CONTEXT)
    assert again["system"][0]["cache_control"] == EPHEMERAL


def block(marked: bool) -> dict[str, Any]:
    return {"type": "text", "text": "x", **({"cache_control": EPHEMERAL} if marked else {})}


@pytest.mark.parametrize(
    ("caller", "reserved", "conversation_marked", "head_marked"),
    [
        (0, 0, True, True),
        (2, 0, True, True),
        (2, 1, True, False),  # three in use: only the conversation breakpoint is added
        (3, 0, True, False),
        (2, 2, False, False),  # four in use: none added
        (4, 0, False, False),
        (0, 4, False, False),
    ],
)
def test_anthropic_breakpoint_budget(
    caller: int, reserved: int, conversation_marked: bool, head_marked: bool
) -> None:
    system = [block(i < min(caller, 1)) for i in range(2)]
    marks = caller - min(caller, 1)
    messages: list[dict[str, Any]] = []
    for i in range(4):
        messages.append({"role": "user", "content": [block(i < marks)]})
        messages.append({"role": "assistant", "content": "ok"})
    messages.append({"role": "user", "content": "last"})
    before = copy.deepcopy(messages)
    body = anthropic_messages(messages, CONTEXT, system=system, reserved_breakpoints=reserved)
    assert breakpoints(body) == caller + conversation_marked + head_marked
    assert breakpoints(body) + reserved <= ANTHROPIC_MAX_BREAKPOINTS
    assert ("cache_control" in body["system"][0]) is head_marked
    last = body["messages"][-2]
    assert (last is not messages[-1]) is conversation_marked
    assert same_objects(body["messages"][:-2], messages[:-1])
    assert messages == before


def marked_text() -> dict[str, Any]:
    return {"type": "text", "text": "nested", "cache_control": EPHEMERAL}


# Shapes from the anthropic SDK's param types in which a block holds blocks that can each
# carry their own marker; every one of them counts toward the API's four.
def tool_result() -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": "t1", "content": [marked_text()]}


def search_result() -> dict[str, Any]:
    return {
        "type": "search_result",
        "source": "https://example.com",
        "title": "t",
        "content": [marked_text()],
    }


def document_from_blocks() -> dict[str, Any]:
    return {"type": "document", "source": {"type": "content", "content": [marked_text()]}}


def search_result_in_tool_result() -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": "t1", "content": [search_result()]}


def web_fetch_document() -> dict[str, Any]:
    return {
        "type": "web_fetch_tool_result",
        "tool_use_id": "t1",
        "content": {
            "type": "web_fetch_result",
            "url": "https://example.com",
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "d"},
                "cache_control": EPHEMERAL,
            },
        },
    }


def tool_references() -> dict[str, Any]:
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": "t1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [
                {"type": "tool_reference", "tool_name": "x", "cache_control": EPHEMERAL}
            ],
        },
    }


NESTED_BLOCKS: dict[str, Callable[[], dict[str, Any]]] = {
    function.__name__: function
    for function in (
        tool_result,
        search_result,
        document_from_blocks,
        search_result_in_tool_result,
        web_fetch_document,
        tool_references,
    )
}


@pytest.mark.parametrize("shape", sorted(NESTED_BLOCKS))
def test_anthropic_nested_markers_count_toward_the_four(shape: str) -> None:
    nested = NESTED_BLOCKS[shape]
    assert breakpoints(nested()) == 1
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [nested()]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "last"},
    ]
    before = copy.deepcopy(messages)
    # 1 nested + 2 reserved = 3: only the conversation breakpoint fits.
    body = anthropic_messages(messages, CONTEXT, reserved_breakpoints=2)
    assert breakpoints(body) == 2
    assert "cache_control" not in body["system"][0]
    assert body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL
    # 1 nested + 3 reserved = 4: nothing added.
    body = anthropic_messages(messages, CONTEXT, reserved_breakpoints=3)
    assert breakpoints(body) == 1
    assert same_objects(body["messages"][:-1], messages)
    # Two nested + 3 reserved = 5: refused before anything is sent.
    crowded = [{"role": "user", "content": [nested(), nested()]}]
    with pytest.raises(ValueError, match=r"already has 5 .*\(0 in system, 2 in messages, 3 res"):
        anthropic_messages(crowded, CONTEXT, reserved_breakpoints=3)
    assert messages == before


def test_anthropic_marker_on_a_tool_result_with_marked_content_counts_both() -> None:
    result = tool_result()
    messages = [{"role": "user", "content": [result]}]
    body = anthropic_messages(messages, CONTEXT, system=[block(True)], reserved_breakpoints=1)
    # 1 system + 1 nested + 1 reserved = 3: the tool_result gets the fourth, the head none.
    assert body["messages"][0]["content"][0] == {**result, "cache_control": EPHEMERAL}
    assert "cache_control" not in body["system"][0]
    assert breakpoints(body) + 1 == ANTHROPIC_MAX_BREAKPOINTS


def test_anthropic_cache_control_key_in_tool_input_is_data() -> None:
    # tool_use `input` is the model's free-form arguments: a key named cache_control is not a
    # breakpoint, so it does not use up the budget.
    tool_use = {
        "type": "tool_use",
        "id": "t1",
        "name": "configure",
        "input": {"cache_control": {"type": "ephemeral"}, "more": [{"cache_control": 1}] * 4},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "set it up"},
        {"role": "assistant", "content": [tool_use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    body = anthropic_messages(messages, CONTEXT, reserved_breakpoints=2)
    assert body["system"][0]["cache_control"] == EPHEMERAL
    assert body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL


def test_anthropic_caller_mark_on_the_last_turn_is_reused_not_doubled() -> None:
    messages = [{"role": "user", "content": [block(True)]}]
    body = anthropic_messages(messages, CONTEXT)
    assert body["messages"][0] is messages[0]
    assert breakpoints(body) == 2


def test_anthropic_too_many_caller_breakpoints() -> None:
    messages = [{"role": "user", "content": [block(True)] * 5}]
    with pytest.raises(ValueError, match=r"already has 5 cache_control breakpoints.*at most 4"):
        anthropic_messages(messages, CONTEXT)
    with pytest.raises(
        ValueError, match=r"already has 6 .*\(1 in system, 0 in messages, 5 reserved\)"
    ):
        anthropic_messages(
            [{"role": "user", "content": "x"}],
            CONTEXT,
            system=[block(True)],
            reserved_breakpoints=5,
        )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"messages": [{"role": "assistant", "content": "x"}]},
            ValueError,
            r"messages\[0\]\.role: a Messages API conversation starts with a 'user' turn, "
            r"got 'assistant'$",
        ),
        (
            {"messages": [{"role": "system", "content": "x"}]},
            ValueError,
            r"got 'system'; put the system prompt in system= or in head sections",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]},
            ValueError,
            r"messages\[1\]\.role: Anthropic Messages does not accept the role 'tool'",
        ),
        (
            {"messages": [{"role": 1, "content": "x"}]},
            TypeError,
            r"messages\[0\]\.role: expected a string, got int",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": None, "content": "x"}]},
            TypeError,
            r"messages\[1\]\.role: expected a string, got NoneType",
        ),
        (
            {"messages": [{"role": "user"}]},
            TypeError,
            r"messages\[0\]: the message has no 'content' key",
        ),
        (
            {"messages": [{"role": "user", "content": 5}]},
            TypeError,
            r"messages\[0\]\.content: expected a string or a list of content blocks, got int",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}]},
            TypeError,
            r"messages\[0\]\.content\[1\]: expected a content block mapping, got str",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "system": 3},
            TypeError,
            "system: expected a string or a list of text blocks, got int",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "system": ["x"]},
            TypeError,
            r"system\[0\]: expected a content block mapping, got str",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "tail_role": "assistant"},
            ValueError,
            "tail_role: expected 'user' or 'system', got 'assistant'",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "tail_role": None},
            TypeError,
            "tail_role: expected a string, got NoneType",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "reserved_breakpoints": "1"},
            TypeError,
            "reserved_breakpoints: expected an int, got str",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "reserved_breakpoints": -1},
            ValueError,
            "reserved_breakpoints: expected a count >= 0, got -1",
        ),
    ],
)
def test_anthropic_errors(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        anthropic_messages(context=CONTEXT, **kwargs)


def blank(text: Any) -> bool:
    return isinstance(text, str) and not text.strip()


def expected_mark(messages: list[dict[str, Any]], at: int) -> int | None:
    """Where the conversation breakpoint should go: the last block before ``at`` that can
    carry one, unless a caller's marker comes first (the reference for the property below)."""
    for index in reversed(range(at)):
        content = messages[index]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for candidate in reversed(blocks):
            if candidate.get("cache_control") is not None:
                return None
            unmarkable = candidate["type"] == "thinking"
            if not unmarkable and not (candidate["type"] == "text" and blank(candidate["text"])):
                return index
    return None


def without_markers(content: Any) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


content_blocks = st.one_of(
    st.builds(block, st.booleans()),
    st.builds(lambda text: {"type": "text", "text": text}, st.sampled_from(["", " ", "\n"])),
    st.just({"type": "thinking", "thinking": "t", "signature": "s"}),
    st.builds(  # a tool_result whose own content may hold markers
        lambda marked, inner: {
            "type": "tool_result",
            "tool_use_id": "t",
            "content": [block(m) for m in inner],
            **({"cache_control": EPHEMERAL} if marked else {}),
        },
        st.booleans(),
        st.lists(st.booleans(), max_size=2),
    ),
)
turn_content = st.one_of(
    st.sampled_from(["", "  ", "plain"]), st.lists(content_blocks, min_size=1, max_size=4)
)


@given(
    turns=st.lists(turn_content, min_size=1, max_size=6),
    system=st.lists(st.booleans(), max_size=3),
    reserved=st.integers(min_value=0, max_value=4),
    prefill=st.booleans(),
    tail_role=st.sampled_from(["user", "system"]),
)
def test_property_anthropic_never_exceeds_four_and_never_touches_the_caller(
    turns: list[Any], system: list[bool], reserved: int, prefill: bool, tail_role: str
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": turn}
        for i, turn in enumerate(turns)
    ]
    if prefill:
        messages.append({"role": "assistant", "content": "Sure"})
    system_blocks = [block(m) for m in system]
    callers = breakpoints(messages) + breakpoints(system_blocks)
    used = callers + reserved
    before = copy.deepcopy((messages, system_blocks))

    def call() -> dict[str, Any]:
        return anthropic_messages(
            messages,
            CONTEXT,
            system=system_blocks,
            reserved_breakpoints=reserved,
            tail_role=tail_role,
        )

    at = len(messages) - 1 if messages[-1]["role"] == "assistant" else len(messages)
    if used > ANTHROPIC_MAX_BREAKPOINTS:
        with pytest.raises(ValueError, match=f"already has {used} cache_control breakpoints"):
            call()
        return
    if tail_role == "system" and messages[at - 1]["role"] != "user":
        with pytest.raises(ValueError, match="must follow a user turn"):
            call()
        return
    body = call()
    assert (messages, system_blocks) == before
    sent = body["messages"]
    assert sent[at]["role"] == tail_role
    assert sent[at]["content"] == [{"type": "text", "text": TAIL_TEXT}]

    # Exactly where the budget allows: the conversation breakpoint first, then the head's.
    budget = ANTHROPIC_MAX_BREAKPOINTS - used
    mark_at = expected_mark(messages, at) if budget else None
    head_marked = budget - (mark_at is not None) > 0
    assert ("cache_control" in body["system"][0]) is head_marked
    assert breakpoints(body) == callers + (mark_at is not None) + head_marked
    assert breakpoints(body) + reserved <= ANTHROPIC_MAX_BREAKPOINTS

    rest = [*sent[:at], *sent[at + 1 :]]
    changed = [i for i, (a, b) in enumerate(zip(rest, messages, strict=True)) if a is not b]
    assert changed == ([] if mark_at is None else [mark_at])
    for i in changed:  # the one copy differs from the caller's only by one marker, on text
        assert without_markers(rest[i]["content"]) == without_markers(messages[i]["content"])
        assert breakpoints(rest[i]) == breakpoints(messages[i]) + 1
        for new in rest[i]["content"]:
            if new.get("cache_control") is not None and new["type"] == "text":
                assert not blank(new["text"])


@pytest.mark.parametrize(
    "call",
    [
        lambda context: openai_chat(chat(), context),
        lambda context: openai_chat(chat(), context, role="developer"),
        lambda context: openai_responses(chat(), context),
        lambda context: anthropic_messages(chat(), context),
    ],
)
def test_every_adapter_refuses_a_context_that_is_not_a_runcontext(call: Any) -> None:
    with pytest.raises(TypeError, match=r"^context: expected a runcontext\.RunContext or None"):
        call({"clock": "now"})


def test_a_block_that_contains_itself_is_refused_not_walked_forever() -> None:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t", "content": []}
    block["content"].append(block)
    messages = [{"role": "user", "content": [block]}]
    with pytest.raises(ValueError, match="nests deeper than 512 levels"):
        anthropic_messages(messages, RunContext(facts=[("date", "d")]))
