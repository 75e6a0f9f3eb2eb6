"""Provider adapters: placement of head and tail, cache markers, validation, no mutation."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runcontext import RunContext
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


def breakpoints(body: dict[str, Any]) -> int:
    blocks = [*body.get("system", [])]
    for message in body["messages"]:
        if not isinstance(message["content"], str):
            blocks.extend(message["content"])
    return sum(1 for block in blocks if block.get("cache_control") is not None)


# OpenAI Chat Completions


def test_openai_chat_head_first_tail_last() -> None:
    messages = chat()
    before = copy.deepcopy(messages)
    request = openai_chat(messages, CONTEXT)
    assert request[0] == {"role": "system", "content": HEAD_TEXT}
    assert request[-1] == {"role": "system", "content": TAIL_TEXT}
    assert same_objects(request[1:-1], messages)
    assert messages == before


def test_openai_chat_developer_role() -> None:
    request = openai_chat(chat(), CONTEXT, role="developer")
    assert (request[0]["role"], request[-1]["role"]) == ("developer", "developer")


def test_openai_chat_tail_is_last_even_after_assistant_and_tool_turns() -> None:
    messages = [
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


def test_anthropic_thinking_block_is_not_marked() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "assistant", "content": "prefill"},
    ]
    body = anthropic_messages(messages, CONTEXT)
    assert same_objects(body["messages"][:3], messages[:3])
    assert breakpoints(body) == 1  # only the head block


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


marks = st.lists(st.booleans(), min_size=1, max_size=4)


@given(
    turns=st.lists(marks, min_size=1, max_size=6),
    system=st.lists(st.booleans(), max_size=3),
    reserved=st.integers(min_value=0, max_value=4),
    prefill=st.booleans(),
    tail_role=st.sampled_from(["user", "system"]),
)
def test_property_anthropic_never_exceeds_four_and_never_touches_the_caller(
    turns: list[list[bool]], system: list[bool], reserved: int, prefill: bool, tail_role: str
) -> None:
    messages: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        messages.append(
            {"role": "user" if i % 2 == 0 else "assistant", "content": [block(m) for m in turn]}
        )
    if prefill:
        messages.append({"role": "assistant", "content": "Sure"})
    system_blocks = [block(m) for m in system]
    used = sum(map(sum, turns)) + sum(system) + reserved
    before = copy.deepcopy((messages, system_blocks))
    call = lambda: anthropic_messages(  # noqa: E731
        messages, CONTEXT, system=system_blocks, reserved_breakpoints=reserved, tail_role=tail_role
    )
    at = len(messages) - 1 if messages[-1]["role"] == "assistant" else len(messages)
    if used > ANTHROPIC_MAX_BREAKPOINTS:
        with pytest.raises(ValueError, match="cache_control breakpoints"):
            call()
        return
    if tail_role == "system" and messages[at - 1]["role"] != "user":
        with pytest.raises(ValueError, match="must follow a user turn"):
            call()
        return
    body = call()
    assert breakpoints(body) + reserved <= ANTHROPIC_MAX_BREAKPOINTS
    assert breakpoints(body) >= used - reserved  # the caller's breakpoints all survive
    assert (messages, system_blocks) == before
    sent = body["messages"]
    assert sent[at]["role"] == tail_role
    assert sent[at]["content"][0]["text"] == TAIL_TEXT
    rest = [*sent[:at], *sent[at + 1 :]]
    changed = [i for i, (a, b) in enumerate(zip(rest, messages, strict=True)) if a is not b]
    assert changed in ([], [at - 1])
    for i in changed:  # the one copy differs from the caller's only by the marker
        stripped = [
            {k: v for k, v in b.items() if k != "cache_control"} for b in rest[i]["content"]
        ]
        original = [
            {k: v for k, v in b.items() if k != "cache_control"} for b in messages[i]["content"]
        ]
        assert stripped == original
