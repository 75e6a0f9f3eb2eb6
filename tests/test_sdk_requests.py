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
from simulators.server import SimulatorServer

from runcontext import RunContext
from runcontext.adapters import (
    anthropic_messages,
    openai_chat,
    openai_chat_request,
    openai_responses,
)

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


# --- Cache fields on the wire, answered by the cache simulators ----------------------------


@pytest.fixture
def simulator() -> Iterator[SimulatorServer]:
    with SimulatorServer() as running:
        yield running


def big_facts(turn: int) -> RunContext:
    head = [("instructions", "Prefer small diffs and say how you checked them. " * 120)]
    return RunContext(head_sections=head, facts=[("clock", f"09:{turn:02d}")])


def test_openai_chat_breakpoint_and_options_on_the_wire(simulator: SimulatorServer) -> None:
    client = openai.OpenAI(api_key="sk-test", base_url=simulator.url + "/v1", max_retries=0)
    messages: list[dict[str, Any]] = []
    usages = []
    for turn in (1, 2, 3):
        messages.append({"role": "user", "content": f"Question {turn}?"})
        body = openai_chat_request(messages, big_facts(turn), model="gpt-5.6")
        completion = client.chat.completions.create(**body)
        usages.append(completion.usage)
        messages.append({"role": "assistant", "content": f"Answer {turn}."})
    wire = simulator.exchanges[-1].json
    # Request-level options; the breakpoint inside the last user message's content part.
    assert wire["prompt_cache_options"] == {"mode": "explicit"}
    assert wire["messages"][-2] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Question 3?", "prompt_cache_breakpoint": {"mode": "explicit"}}
        ],
    }
    assert wire["messages"][-1] == {"role": "system", "content": big_facts(3).tail_text}
    assert simulator.exchanges[-1].body.count(b"prompt_cache_breakpoint") == 1
    assert simulator.exchanges[-1].body == canonical(
        openai_chat_request(messages[:-1], big_facts(3), model="gpt-5.6")
    )
    # The SDK reads the usage back: turn 2 reads all that turn 1 wrote, writes only its news.
    details = [usage.prompt_tokens_details for usage in usages if usage is not None]
    assert details[0].cached_tokens == 0 and details[0].cache_write_tokens
    assert details[1].cached_tokens == details[0].cache_write_tokens
    assert details[2].cached_tokens == details[1].cached_tokens + details[1].cache_write_tokens
    assert all(u.written_in_last_message == 0 for u in simulator.usages)


def test_openai_responses_breakpoint_and_options_on_the_wire(
    simulator: SimulatorServer,
) -> None:
    client = openai.OpenAI(api_key="sk-test", base_url=simulator.url + "/v1", max_retries=0)
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Run the tests"},
        {"type": "function_call", "call_id": "c1", "name": "pytest", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "2 failed"},
    ]
    for turn in (1, 2):
        response = client.responses.create(
            **openai_responses(items, big_facts(turn), model="gpt-5.6")
        )
        items.append({"role": "assistant", "content": "Two fail."})
        items.append({"role": "user", "content": "Fix them."})
    first, second = (exchange.json for exchange in simulator.exchanges)
    assert first["prompt_cache_options"] == {"mode": "explicit"}
    assert first["model"] == "gpt-5.6"
    assert first["input"][2]["output"] == [
        {"type": "input_text", "text": "2 failed", "prompt_cache_breakpoint": {"mode": "explicit"}}
    ]
    assert second["input"][4]["content"][0]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    assert second["input"][2]["output"] == "2 failed"  # only the newest one is marked
    assert response.usage is not None
    details = response.usage.input_tokens_details
    assert details.cached_tokens == simulator.usages[0].written > 0
    assert details.cache_write_tokens == simulator.usages[1].written > 0


def test_anthropic_sends_no_top_level_cache_control(simulator: SimulatorServer) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=simulator.url, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
    for turn in (1, 2):
        reply = client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=64,
            **anthropic_messages(messages, big_facts(turn)),
        )
        messages += [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Go"}]
    wire = simulator.exchanges[-1].json
    assert "cache_control" not in wire
    assert simulator.exchanges[-1].body.count(b'"cache_control"') == 2
    assert reply.usage.cache_read_input_tokens == simulator.usages[0].written > 0
    assert reply.usage.cache_creation_input_tokens == simulator.usages[1].written > 0
