"""OpenAI prompt_cache_breakpoint placement, prompt_cache_options, tail roles (PLACEMENT.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runcontext import RunContext
from runcontext.adapters import (
    openai_chat,
    openai_chat_request,
    openai_prompt_caching,
    openai_responses,
)

BREAKPOINT = {"mode": "explicit"}
CONTEXT = RunContext(head_sections=[("instructions", "Be brief.")], facts=[("clock", "09:00")])
HEAD = CONTEXT.head_text
TAIL = CONTEXT.tail_text


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Run the tests."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "pytest", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2 failed"},
        {"role": "assistant", "content": "Two tests fail."},
    ]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5.6", True),
        ("gpt-5.6-mini", True),
        ("gpt-5.10-2026-09-01", True),
        ("gpt-6-luna", True),
        ("openai/gpt-5.6", True),
        ("ft:gpt-5.6:acme::abc", True),
        ("gpt-5.5", False),
        ("gpt-5.5-pro", False),
        ("gpt-5", False),
        ("gpt-4.1", False),
        ("gpt-4o", False),
        ("o3", False),
        ("my-deployment", False),
        # A version is ASCII digits: other scripts' digits are not read as one.
        ("gpt-\u0665.\u0666", False),
        ("gpt-\uff15.\uff16", False),
        ("gpt-5.\u0666", False),
    ],
)
def test_openai_prompt_caching_by_model(model: str, expected: bool) -> None:
    assert openai_prompt_caching(model) is expected


def test_openai_chat_breakpoint_on_the_last_tool_message_past_assistant_content() -> None:
    messages = chat()
    before = copy.deepcopy(messages)
    request = openai_chat(messages, CONTEXT, model="gpt-5.6")
    assert request[0] == {"role": "system", "content": HEAD}
    assert request[-1] == {"role": "system", "content": TAIL}  # the tail is never marked
    assert request[1] is messages[0] and request[2] is messages[1] and request[4] is messages[3]
    assert request[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "2 failed", "prompt_cache_breakpoint": BREAKPOINT}],
    }
    assert messages == before  # the caller's message is copied, not edited
    assert str(request).count("prompt_cache_breakpoint") == 1


def test_openai_chat_older_models_get_exactly_the_old_request() -> None:
    messages = chat()
    for kwargs in ({}, {"model": "gpt-5.5"}, {"model": "gpt-4.1"}, {"cache": "off"}):
        request = openai_chat(messages, CONTEXT, **kwargs)
        assert request == [
            {"role": "system", "content": HEAD},
            *messages,
            {"role": "system", "content": TAIL},
        ]
        assert all(a is b for a, b in zip(request[1:-1], messages, strict=True))


def test_openai_chat_request_body_sets_explicit_mode() -> None:
    body = openai_chat_request(chat(), CONTEXT, model="gpt-5.6")
    assert body["model"] == "gpt-5.6"
    assert body["prompt_cache_options"] == {"mode": "explicit"}
    assert body["messages"] == openai_chat(chat(), CONTEXT, model="gpt-5.6")
    old = openai_chat_request(chat(), CONTEXT, model="gpt-4.1")
    assert set(old) == {"model", "messages"}
    implicit = openai_chat_request(chat(), CONTEXT, model="gpt-4.1", cache="implicit")
    assert implicit["prompt_cache_options"] == {"mode": "implicit"}
    assert "prompt_cache_breakpoint" in str(implicit["messages"])


def test_openai_chat_head_breakpoint_and_ttl() -> None:
    request = openai_chat(chat(), CONTEXT, model="gpt-5.6", cache_head=True, ttl="12h")
    marker = {"mode": "explicit", "ttl": "12h"}
    assert request[0] == {
        "role": "system",
        "content": [{"type": "text", "text": HEAD, "prompt_cache_breakpoint": marker}],
    }
    assert request[3]["content"][0]["prompt_cache_breakpoint"] == marker
    assert request[0]["content"][0]["prompt_cache_breakpoint"] is not marker


def test_openai_chat_list_content_marks_the_last_markable_part() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Look:"}, image, {"type": "text", "text": "  "}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
    ]
    request = openai_chat(messages, CONTEXT, cache="explicit")
    marked = request[1]["content"]
    assert marked[0] is messages[0]["content"][0] and marked[2] is messages[0]["content"][2]
    assert marked[1] == {**image, "prompt_cache_breakpoint": BREAKPOINT}
    assert request[2] is messages[1]  # assistant content is never marked
    assert "prompt_cache_breakpoint" not in image


def test_openai_chat_callers_breakpoint_is_reused_not_doubled() -> None:
    mine = {"type": "text", "text": "2 failed", "prompt_cache_breakpoint": {"mode": "explicit"}}
    messages = [*chat()[:2], {"role": "tool", "tool_call_id": "c1", "content": [mine]}]
    request = openai_chat(messages, CONTEXT, model="gpt-5.6")
    assert request[1:-1] == messages and all(
        a is b for a, b in zip(request[1:-1], messages, strict=True)
    )


def test_openai_chat_nothing_markable_adds_nothing() -> None:
    messages = [{"role": "user", "content": ""}, {"role": "assistant", "content": "Hi"}]
    request = openai_chat(messages, CONTEXT, model="gpt-5.6")
    assert "prompt_cache_breakpoint" not in str(request)


@pytest.mark.parametrize(
    ("role", "tail_role", "roles"),
    [
        ("system", None, ("system", "system")),
        ("developer", None, ("developer", "developer")),
        ("system", "user", ("system", "user")),
        ("developer", "user", ("developer", "user")),
        ("system", "developer", ("system", "developer")),
    ],
)
def test_openai_chat_tail_role(role: str, tail_role: str | None, roles: tuple[str, str]) -> None:
    request = openai_chat(chat(), CONTEXT, role=role, tail_role=tail_role)
    assert (request[0]["role"], request[-1]["role"]) == roles
    assert request[-1]["content"] == TAIL


def test_openai_responses_breakpoint_on_function_call_output() -> None:
    items = [
        {"role": "user", "content": "Run the tests"},
        {"type": "function_call", "call_id": "c1", "name": "pytest", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "2 failed"},
        {"type": "reasoning", "id": "r1", "summary": []},
    ]
    body = openai_responses(items, CONTEXT, model="gpt-5.6")
    assert body["model"] == "gpt-5.6"
    assert body["instructions"] == HEAD
    assert body["prompt_cache_options"] == {"mode": "explicit"}
    assert body["input"][2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "2 failed", "prompt_cache_breakpoint": BREAKPOINT}
        ],
    }
    assert body["input"][3] is items[3]
    assert body["input"][-1] == {"role": "developer", "content": TAIL}


def test_openai_responses_head_breakpoint_moves_the_head_into_input() -> None:
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    body = openai_responses(items, CONTEXT, cache="explicit", cache_head=True, tail_role="user")
    assert "instructions" not in body and "model" not in body
    assert body["input"][0] == {
        "role": "developer",
        "content": [{"type": "input_text", "text": HEAD, "prompt_cache_breakpoint": BREAKPOINT}],
    }
    assert body["input"][1]["content"] == [
        {"type": "input_text", "text": "Hi", "prompt_cache_breakpoint": BREAKPOINT}
    ]
    assert body["input"][-1] == {"role": "user", "content": TAIL}


def test_openai_responses_older_models_unchanged() -> None:
    items = [{"role": "user", "content": "Hi"}]
    assert openai_responses(items, CONTEXT) == {
        "instructions": HEAD,
        "input": [items[0], {"role": "developer", "content": TAIL}],
    }
    assert openai_responses(items, CONTEXT, model="gpt-4.1") == {
        "model": "gpt-4.1",
        "instructions": HEAD,
        "input": [items[0], {"role": "developer", "content": TAIL}],
    }


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"cache": "on"},
            ValueError,
            "cache: expected 'explicit' or 'implicit' or 'off', got 'on'",
        ),
        ({"ttl": "1h", "cache": "explicit"}, ValueError, "ttl: expected '30m' or '12h', got '1h'"),
        ({"cache_head": 1}, TypeError, "cache_head: expected a bool, got int"),
        ({"model": 5}, TypeError, "model: expected a string or None, got int"),
        (
            {"tail_role": "assistant"},
            ValueError,
            "tail_role: expected 'system' or 'developer' or 'user'",
        ),
        (
            {"cache_head": True, "model": "gpt-4.1"},
            ValueError,
            "cache_head: there is no breakpoint to apply it to, since caching is off",
        ),
        ({"ttl": "30m"}, ValueError, "ttl: there is no breakpoint to apply it to"),
    ],
)
def test_openai_cache_option_errors(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        openai_chat(chat(), CONTEXT, **kwargs)


def test_openai_responses_tail_role_error() -> None:
    with pytest.raises(ValueError, match="tail_role: expected 'developer' or 'system' or 'user'"):
        openai_responses([], CONTEXT, tail_role="assistant")


@pytest.mark.parametrize("model", [None, 5])
def test_openai_chat_request_needs_a_model_name(model: object) -> None:
    name = type(model).__name__
    with pytest.raises(TypeError, match=rf"^model: expected a string, got {name}$"):
        openai_chat_request(chat(), CONTEXT, model=model)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "name"), [(["text"], "list"), ({"text": 1}, "dict"), (None, "NoneType")]
)
def test_openai_part_type_must_be_a_string(kind: object, name: str) -> None:
    messages = [{"role": "user", "content": [{"type": kind, "text": "Hi"}]}]
    with pytest.raises(
        TypeError, match=rf"^messages\[0\]\.content\[0\]\.type: expected a string, got {name}$"
    ):
        openai_chat(messages, CONTEXT, model="gpt-5.6")
    with pytest.raises(
        TypeError, match=rf"^input\[0\]\.content\[0\]\.type: expected a string, got {name}$"
    ):
        openai_responses(messages, CONTEXT, model="gpt-5.6")
    output = [{"type": "function_call_output", "call_id": "c1", "output": [{"type": kind}]}]
    with pytest.raises(
        TypeError, match=rf"^input\[0\]\.output\[0\]\.type: expected a string, got {name}$"
    ):
        openai_responses(output, CONTEXT, model="gpt-5.6")


@pytest.mark.parametrize(
    ("kind", "name"), [(["function_call_output"], "list"), ({"a": 1}, "dict"), (None, "NoneType")]
)
def test_openai_responses_item_type_must_be_a_string(kind: object, name: str) -> None:
    items = [{"role": "user", "content": "Hi"}, {"type": kind, "call_id": "c1", "output": "x"}]
    with pytest.raises(TypeError, match=rf"^input\[1\]\.type: expected a string, got {name}$"):
        openai_responses(items, CONTEXT)
