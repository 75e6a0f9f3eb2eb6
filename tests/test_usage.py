"""Reading billed usage (runcontext.budget.usage) from responses the real SDKs build.

Each SDK client calls a server on 127.0.0.1 that answers with a response carrying usage
(with prompt-cache counts), as JSON or as a server-sent event stream; the readers take the
SDK's objects, their ``model_dump()`` and the raw JSON dicts alike, and the stream
accumulators report the usage their stream carried.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from pytest_httpserver import HTTPServer

from runcontext.adapters.streams import AnthropicStream, OpenAIChatStream, OpenAIResponsesStream
from runcontext.budget import (
    Usage,
    anthropic_usage,
    openai_chat_usage,
    openai_responses_usage,
    read_usage,
)

USER = [{"role": "user", "content": "hi"}]

CHAT_USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 17,
    "total_tokens": 1217,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}
CHAT = {
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
    "usage": CHAT_USAGE,
}
# OpenAI: prompt_tokens already counts the cached tokens.
CHAT_BILLED = Usage(input=1200, output=17, cache_read=1024)

RESPONSES_USAGE = {
    "input_tokens": 2048,
    "output_tokens": 33,
    "total_tokens": 2081,
    "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 64},
    "output_tokens_details": {"reasoning_tokens": 8},
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
    "usage": RESPONSES_USAGE,
}
RESPONSES_BILLED = Usage(input=2048, output=33, cache_read=1920, cache_write=64)

MESSAGE_USAGE = {
    "input_tokens": 21,
    "output_tokens": 40,
    "cache_read_input_tokens": 3000,
    "cache_creation_input_tokens": 250,
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": MESSAGE_USAGE,
}
# Anthropic: input_tokens excludes the cache reads and writes; the prompt is the sum.
MESSAGE_BILLED = Usage(input=21 + 3000 + 250, output=40, cache_read=3000, cache_write=250)


def sse(*events: Any, named: bool = False) -> str:
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(head + "data: " + json.dumps(event) + "\n\n")
    return "".join(out)


def reply(httpserver: HTTPServer, path: str, body: Any = None, events: str | None = None) -> None:
    request = httpserver.expect_oneshot_request(path, method="POST")
    if events is None:
        request.respond_with_json(body)
    else:
        request.respond_with_data(events, content_type="text/event-stream")


def openai_client(httpserver: HTTPServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=httpserver.url_for("/v1"), api_key="sk-fake", max_retries=0)


def anthropic_client(httpserver: HTTPServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=httpserver.url_for(""), api_key="sk-fake", max_retries=0)


def chat_chunks(*, with_usage: bool) -> str:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": "ok"})]
    events.append(chunk({}, "stop"))
    if with_usage:
        events.append({**base, "choices": [], "usage": CHAT_USAGE})
    return sse(*events) + "data: [DONE]\n\n"


# --- OpenAI Chat Completions ---------------------------------------------------------------


def test_openai_chat_completion(httpserver: HTTPServer) -> None:
    reply(httpserver, "/v1/chat/completions", CHAT)
    completion = openai_client(httpserver).chat.completions.create(model="m", messages=USER)
    assert type(completion).__name__ == "ChatCompletion"
    assert openai_chat_usage(completion) == CHAT_BILLED
    assert openai_chat_usage(completion.model_dump()) == CHAT_BILLED
    assert openai_chat_usage(CHAT) == CHAT_BILLED
    assert read_usage(completion) == read_usage(CHAT) == CHAT_BILLED


def test_openai_chat_stream_with_include_usage(httpserver: HTTPServer) -> None:
    reply(httpserver, "/v1/chat/completions", events=chat_chunks(with_usage=True))
    stream = openai_client(httpserver).chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    accumulator = OpenAIChatStream()
    chunks = list(accumulator.feed(stream))
    assert accumulator.usage == CHAT_BILLED
    assert read_usage(accumulator) == CHAT_BILLED
    # The last chunk alone carries it; the others carry none.
    assert openai_chat_usage(chunks[-1]) == CHAT_BILLED
    assert openai_chat_usage(chunks[0]) is None


def test_openai_chat_stream_without_include_usage_has_none(httpserver: HTTPServer) -> None:
    reply(httpserver, "/v1/chat/completions", events=chat_chunks(with_usage=False))
    stream = openai_client(httpserver).chat.completions.create(
        model="m", messages=USER, stream=True
    )
    accumulator = OpenAIChatStream()
    chunks = list(accumulator.feed(stream))
    assert accumulator.usage is None
    assert all(openai_chat_usage(chunk) is None for chunk in chunks)
    with pytest.raises(ValueError, match=r"OpenAIChatStream has seen no usage yet.*include_usage"):
        read_usage(accumulator)
    with pytest.raises(ValueError, match=r"only the last chunk.*\"include_usage\": True"):
        read_usage(chunks[-1])


# --- OpenAI Responses ----------------------------------------------------------------------


def test_openai_response(httpserver: HTTPServer) -> None:
    reply(httpserver, "/v1/responses", RESPONSE)
    response = openai_client(httpserver).responses.create(model="m", input="hi")
    assert type(response).__name__ == "Response"
    assert openai_responses_usage(response) == RESPONSES_BILLED
    assert openai_responses_usage(response.model_dump()) == RESPONSES_BILLED
    assert openai_responses_usage(RESPONSE) == RESPONSES_BILLED
    assert read_usage(response) == read_usage(RESPONSE) == RESPONSES_BILLED


@pytest.mark.parametrize("final", ["response.completed", "response.incomplete"])
def test_openai_responses_stream(httpserver: HTTPServer, final: str) -> None:
    pending = {**RESPONSE, "status": "in_progress", "output": [], "usage": None}
    done = {**RESPONSE, "status": final.split(".")[1]}
    events = sse(
        {"type": "response.created", "response": pending, "sequence_number": 0},
        {"type": "response.in_progress", "response": pending, "sequence_number": 1},
        {"type": final, "response": done, "sequence_number": 2},
    )
    reply(httpserver, "/v1/responses", events=events)
    accumulator = OpenAIResponsesStream()
    seen = []
    for event in openai_client(httpserver).responses.create(model="m", input="hi", stream=True):
        seen.append(event)
        if event.type == "response.created":
            assert accumulator.usage is None
        accumulator.add(event)
    assert accumulator.usage == RESPONSES_BILLED
    assert read_usage(accumulator) == RESPONSES_BILLED
    # A response still in progress carries no usage yet.
    assert openai_responses_usage(seen[0].response) is None
    with pytest.raises(ValueError, match=r"no usage yet \(status 'in_progress'\)"):
        read_usage(seen[0].response)
    assert openai_responses_usage(seen[-1].response) == RESPONSES_BILLED


# --- Anthropic Messages --------------------------------------------------------------------


def test_anthropic_message(httpserver: HTTPServer) -> None:
    reply(httpserver, "/v1/messages", MESSAGE)
    message = anthropic_client(httpserver).messages.create(model="m", max_tokens=64, messages=USER)
    assert type(message).__name__ == "Message"
    assert anthropic_usage(message) == MESSAGE_BILLED
    assert anthropic_usage(message.model_dump()) == MESSAGE_BILLED
    assert anthropic_usage(MESSAGE) == MESSAGE_BILLED
    assert read_usage(message) == read_usage(MESSAGE) == MESSAGE_BILLED


def test_anthropic_without_cache_members() -> None:
    # Older responses (and requests without cache_control) leave the cache members out.
    body = {**MESSAGE, "usage": {"input_tokens": 12, "output_tokens": 3}}
    assert anthropic_usage(body) == Usage(input=12, output=3)


def anthropic_events(delta_usage: dict[str, Any]) -> str:
    start_usage = {**MESSAGE_USAGE, "output_tokens": 1}
    start = {**MESSAGE, "content": [], "stop_reason": None, "usage": start_usage}
    return sse(
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "ok"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": delta_usage,
        },
        {"type": "message_stop"},
        named=True,
    )


# message_delta's output_tokens are cumulative; recent API versions also send the input and
# cache counts again (null ones keep the message_start value, as the SDK's accumulator does).
DELTAS = {
    "output only": ({"output_tokens": 40}, MESSAGE_BILLED),
    "input again": (
        {
            "output_tokens": 40,
            "input_tokens": 25,
            "cache_read_input_tokens": None,
            "cache_creation_input_tokens": 0,
        },
        Usage(input=25 + 3000, output=40, cache_read=3000, cache_write=0),
    ),
}


@pytest.mark.parametrize("name", DELTAS)
def test_anthropic_stream(httpserver: HTTPServer, name: str) -> None:
    delta, billed = DELTAS[name]
    client = anthropic_client(httpserver)
    reply(httpserver, "/v1/messages", events=anthropic_events(delta))
    accumulator = AnthropicStream()
    assert accumulator.usage is None
    for event in client.messages.create(model="m", max_tokens=64, messages=USER, stream=True):
        accumulator.add(event)
        if event.type == "message_start":
            assert accumulator.usage == Usage(
                input=3271, output=1, cache_read=3000, cache_write=250
            )
    assert accumulator.usage == billed
    assert read_usage(accumulator) == billed
    # The SDK's own accumulator agrees.
    reply(httpserver, "/v1/messages", events=anthropic_events(delta))
    with client.messages.stream(model="m", max_tokens=64, messages=USER) as stream:
        final = stream.get_final_message()
    assert anthropic_usage(final) == billed


# --- read_usage: dispatch and refusals -----------------------------------------------------


def test_read_usage_passes_a_usage_through() -> None:
    usage = Usage(input=5, output=1)
    assert read_usage(usage) is usage


def test_read_usage_says_when_a_response_has_no_usage() -> None:
    with pytest.raises(ValueError, match="this Chat Completions response carries no usage"):
        read_usage({**CHAT, "usage": None})
    with pytest.raises(ValueError, match="this Anthropic message carries no usage"):
        read_usage({k: v for k, v in MESSAGE.items() if k != "usage"})
    assert openai_chat_usage({**CHAT, "usage": None}) is None
    assert anthropic_usage({"type": "message"}) is None


@pytest.mark.parametrize(
    "response",
    [{"usage": CHAT_USAGE}, {"object": "list", "data": []}, {"type": "message_start"}, object()],
)
def test_read_usage_refuses_what_it_cannot_tell(response: Any) -> None:
    with pytest.raises(TypeError, match=r"cannot tell which API this response is from; expected"):
        read_usage(response)


@pytest.mark.parametrize("response", [None, "usage", b"{}", 3, [CHAT]])
def test_not_a_response(response: Any) -> None:
    with pytest.raises(TypeError, match=r"^response: expected an"):
        read_usage(response)
    with pytest.raises(TypeError, match=r"^response: expected an"):
        openai_chat_usage(response)


# (reader, response, path of the member to break, its name in the error)
MEMBERS = [
    (openai_chat_usage, CHAT, ("prompt_tokens",), "response.usage.prompt_tokens"),
    (openai_chat_usage, CHAT, ("completion_tokens",), "response.usage.completion_tokens"),
    (
        openai_chat_usage,
        CHAT,
        ("prompt_tokens_details", "cached_tokens"),
        "response.usage.prompt_tokens_details.cached_tokens",
    ),
    (openai_responses_usage, RESPONSE, ("input_tokens",), "response.usage.input_tokens"),
    (openai_responses_usage, RESPONSE, ("output_tokens",), "response.usage.output_tokens"),
    (
        openai_responses_usage,
        RESPONSE,
        ("input_tokens_details", "cache_write_tokens"),
        "response.usage.input_tokens_details.cache_write_tokens",
    ),
    (anthropic_usage, MESSAGE, ("input_tokens",), "response.usage.input_tokens"),
    (anthropic_usage, MESSAGE, ("output_tokens",), "response.usage.output_tokens"),
    (
        anthropic_usage,
        MESSAGE,
        ("cache_read_input_tokens",),
        "response.usage.cache_read_input_tokens",
    ),
    (
        anthropic_usage,
        MESSAGE,
        ("cache_creation_input_tokens",),
        "response.usage.cache_creation_input_tokens",
    ),
]


def broken(response: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(response))
    target = copy["usage"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@pytest.mark.parametrize(("reader", "response", "path", "where"), MEMBERS)
@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (True, TypeError), ("10", TypeError), (1.5, TypeError)]
)
def test_malformed_counts_name_the_member(
    reader: Any, response: Any, path: tuple[str, ...], where: str, value: Any, error: type
) -> None:
    shown = repr(value) if error is TypeError else str(value)
    message = f"{where}: expected a token count (int >= 0), got {shown}"
    with pytest.raises(error, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        reader(broken(response, path, value))
    with pytest.raises(error, match="expected a token count"):
        read_usage(broken(response, path, value))


@pytest.mark.parametrize(
    ("reader", "response", "member"),
    [
        (openai_chat_usage, CHAT, "prompt_tokens"),
        (openai_responses_usage, RESPONSE, "input_tokens"),
        (anthropic_usage, MESSAGE, "input_tokens"),
    ],
)
def test_missing_prompt_count(reader: Any, response: dict[str, Any], member: str) -> None:
    body = broken(response, (member,), None)
    with pytest.raises(ValueError, match=rf"^response\.usage\.{member}: missing; expected"):
        reader(body)


def test_usage_and_details_must_be_objects() -> None:
    with pytest.raises(TypeError, match=r"^response\.usage: expected an object or a dict, got str"):
        openai_chat_usage({**CHAT, "usage": "1200"})
    with pytest.raises(
        TypeError, match=r"^response\.usage\.prompt_tokens_details: expected an object or a dict"
    ):
        openai_chat_usage(broken(CHAT, ("prompt_tokens_details",), [1024]))


def test_inconsistent_cache_counts() -> None:
    body = broken(CHAT, ("prompt_tokens_details", "cached_tokens"), 1201)
    with pytest.raises(
        ValueError,
        match=r"^response\.usage: the cached tokens \(1201 read, 0 written\) exceed the "
        r"prompt's 1200 tokens",
    ):
        openai_chat_usage(body)
