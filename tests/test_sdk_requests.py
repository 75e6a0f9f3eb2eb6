"""The bytes the official SDKs send for adapter output, recorded by a server on 127.0.0.1.

The server answers every request with a valid canned response, so each SDK call completes as
it would against the real API; the assertions are on the raw request body the SDK wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pytest_httpserver import HTTPServer

from runcontext import RunContext
from runcontext.adapters import anthropic_messages, openai_chat, openai_responses

HEAD = [("instructions", "You are a careful coding assistant. Prefer small diffs. ✓")]

CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok", "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-test",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def facts(turn: int) -> RunContext:
    return RunContext(
        head_sections=HEAD,
        facts=[
            ("clock", f"2025-06-01T09:{turn:02d}:{turn * 7 % 60:02d}Z"),
            ("git HEAD", f"c0ffee{turn}"),
        ],
    )


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Why does test_io fail? «é» 🚀"},
        {"role": "assistant", "content": "The fixture closes the file twice."},
        {"role": "user", "content": [{"type": "text", "text": "Fix it, please."}]},
    ]


def canonical(value: Any) -> bytes:
    """How both SDKs serialise a body (their ``openapi_dumps``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def common_prefix(a: bytes, b: bytes) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@pytest.fixture
def server(httpserver: HTTPServer) -> Iterator[HTTPServer]:
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        CHAT_COMPLETION
    )
    httpserver.expect_request("/v1/responses", method="POST").respond_with_json(RESPONSE)
    httpserver.expect_request("/v1/messages", method="POST").respond_with_json(MESSAGE)
    yield httpserver
    httpserver.check_assertions()


def sent(server: HTTPServer) -> list[bytes]:
    return [request.get_data() for request, _ in server.log]


def openai_client(server: HTTPServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.url_for("/v1"), max_retries=0)


def anthropic_client(server: HTTPServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url_for(""), max_retries=0)


def test_openai_chat_bytes(server: HTTPServer) -> None:
    client = openai_client(server)
    messages = conversation()
    before = canonical(messages)
    for turn in (1, 2):
        completion = client.chat.completions.create(
            model="gpt-test", messages=openai_chat(messages, facts(turn))
        )
        assert completion.choices[0].message.content == "ok"
    first, second = sent(server)
    assert canonical(messages) == before
    body = json.loads(first)
    assert body["messages"][0] == {"role": "system", "content": facts(1).head_text}
    assert body["messages"][1:-1] == messages
    assert body["messages"][-1] == {"role": "system", "content": facts(1).tail_text}
    # The SDK wrote exactly the adapter's list, with its own separators and no escaping.
    assert first == canonical({"model": "gpt-test", "messages": openai_chat(messages, facts(1))})
    # The caller's messages are embedded byte for byte, in order.
    assert canonical(messages)[1:-1] in first
    # Everything up to the end of the last conversation message is shared across turns.
    end = first.index(canonical(messages)[1:-1]) + len(canonical(messages)) - 2
    assert first[:end] == second[:end]
    assert common_prefix(first, second) >= end
    assert first[end:] != second[end:]


def test_openai_chat_developer_role_bytes(server: HTTPServer) -> None:
    client = openai_client(server)
    client.chat.completions.create(
        model="gpt-test", messages=openai_chat(conversation(), facts(1), role="developer")
    )
    (body,) = sent(server)
    roles = [m["role"] for m in json.loads(body)["messages"]]
    assert roles == ["developer", "user", "assistant", "user", "developer"]


def test_openai_responses_bytes(server: HTTPServer) -> None:
    client = openai_client(server)
    items = [
        {"role": "user", "content": "Run the tests"},
        {"type": "function_call", "call_id": "c1", "name": "pytest", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "2 failed"},
    ]
    before = canonical(items)
    for turn in (1, 2):
        response = client.responses.create(model="gpt-test", **openai_responses(items, facts(turn)))
        assert response.output_text == "ok"
    first, second = sent(server)
    assert canonical(items) == before
    body = json.loads(first)
    assert body["instructions"] == facts(1).head_text
    assert body["input"][:-1] == items
    assert body["input"][-1] == {"role": "developer", "content": facts(1).tail_text}
    assert canonical(items)[1:-1] in first
    end = first.index(canonical(items)[1:-1]) + len(canonical(items)) - 2
    assert first[:end] == second[:end]


def test_anthropic_bytes_head_tail_and_cache_markers(server: HTTPServer) -> None:
    client = anthropic_client(server)
    messages = conversation()
    before = canonical(messages)
    for turn in (1, 2):
        reply = client.messages.create(
            model="claude-test", max_tokens=64, **anthropic_messages(messages, facts(turn))
        )
        assert reply.content[0].type == "text"
    first, second = sent(server)
    assert canonical(messages) == before
    body = json.loads(first)
    marker = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": facts(1).head_text, "cache_control": marker}]
    assert body["messages"][:2] == messages[:2]
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "text", "text": "Fix it, please.", "cache_control": marker}],
    }
    assert body["messages"][3] == {
        "role": "user",
        "content": [{"type": "text", "text": facts(1).tail_text}],
    }
    assert first.count(b'"cache_control"') == 2
    # The SDK puts `system` after `messages` in the JSON; the cache prefix order is the API's
    # (tools, system, messages), which is why benches/bench_prefix_cache.py reorders.
    adapted = anthropic_messages(messages, facts(1))
    assert first == canonical(
        {
            "max_tokens": 64,
            "messages": adapted["messages"],
            "model": "claude-test",
            "system": adapted["system"],
        }
    )
    # The untouched messages go out byte for byte, in order.
    assert canonical(messages[:2])[1:-1] in first
    # Both turns share every byte up to the tail message.
    tail_at = first.index(b'{"role":"user","content":[{"type":"text","text":"## Current context')
    assert first[:tail_at] == second[:tail_at]
    assert first[tail_at:] != second[tail_at:]


def test_anthropic_prefill_and_system_tail_bytes(server: HTTPServer) -> None:
    client = anthropic_client(server)
    messages = [*conversation(), {"role": "assistant", "content": "Here is the diff:"}]
    client.messages.create(
        model="claude-test",
        max_tokens=64,
        **anthropic_messages(messages, facts(1), tail_role="system", cache=False),
    )
    (body,) = sent(server)
    sent_messages = json.loads(body)["messages"]
    assert [m["role"] for m in sent_messages] == [
        "user",
        "assistant",
        "user",
        "system",
        "assistant",
    ]
    assert sent_messages[-1] == messages[-1]
    assert sent_messages[:3] == messages[:3]
    assert b"cache_control" not in body


def test_anthropic_prefill_with_cache_bytes(server: HTTPServer) -> None:
    client = anthropic_client(server)
    result_block = {"type": "text", "text": "2 failed", "cache_control": {"type": "ephemeral"}}
    messages: list[dict[str, Any]] = [
        *conversation()[:2],
        {"role": "user", "content": "Run the tests."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "pytest", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [result_block]}],
        },
        {"role": "assistant", "content": "Here is the diff:"},
    ]
    tools = [
        {
            "name": "pytest",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        }
    ]
    before = canonical(messages)
    ids = [id(m) for m in messages]
    for turn in (1, 2):
        client.messages.create(
            model="claude-test",
            max_tokens=64,
            tools=tools,  # type: ignore[arg-type]
            **anthropic_messages(messages, facts(turn), reserved_breakpoints=1),
        )
    first, second = sent(server)
    assert canonical(messages) == before
    assert [id(m) for m in messages] == ids
    body = json.loads(first)
    marker = {"type": "ephemeral"}
    sent_messages = body["messages"]
    # The tail goes just before the prefill, which stays last and byte-identical.
    assert [m["role"] for m in sent_messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    assert sent_messages[-2] == {
        "role": "user",
        "content": [{"type": "text", "text": facts(1).tail_text}],
    }
    assert sent_messages[-1] == messages[-1]
    # The SDK wrote exactly the adapter's body; the caller's turns go out byte for byte, and
    # the tail's bytes are followed directly by the prefill's, which end the conversation.
    adapted = anthropic_messages(messages, facts(1), reserved_breakpoints=1)
    assert first == canonical(
        {
            "max_tokens": 64,
            "messages": adapted["messages"],
            "model": "claude-test",
            "system": adapted["system"],
            "tools": tools,
        }
    )
    assert canonical(messages[:4])[1:-1] in first
    assert canonical([sent_messages[-2], messages[-1]])[1:] + b',"model"' in first
    # Markers: the tool's and the nested one (the caller's), one on the tool_result (the last
    # block before the tail), one on the head. Four in all, the API's limit.
    assert sent_messages[:4] == messages[:4]
    assert sent_messages[4] == {
        "role": "user",
        "content": [{**messages[4]["content"][0], "cache_control": marker}],
    }
    assert body["system"] == [{"type": "text", "text": facts(1).head_text, "cache_control": marker}]
    assert first.count(b'"cache_control"') == 4
    # Both turns share every byte up to the tail message.
    tail_at = first.index(b'{"role":"user","content":[{"type":"text","text":"## Current context')
    assert first[:tail_at] == second[:tail_at]
    assert first[tail_at:] != second[tail_at:]
