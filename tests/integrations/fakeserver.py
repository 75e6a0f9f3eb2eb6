"""A fake model server on 127.0.0.1 for the integration tests.

It records every request (path and the exact body bytes) and answers with canned replies in
the wire format of the endpoint that was called: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, each as one JSON body or as a server-sent event stream when the request
says ``"stream": true``; Gemini ``models/<model>:generateContent`` as one JSON body and
``:streamGenerateContent?alt=sse`` as a server-sent event stream. Each test queues the replies
it expects (text, or tool calls); with none queued the server answers the text ``"done"``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str


@dataclass(frozen=True)
class Reply:
    text: str | None = None
    tools: tuple[ToolCall, ...] = ()


@dataclass
class Recorded:
    path: str
    body: bytes
    headers: dict[str, str]

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeServer:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    # Called with each request as it arrives, before it is answered (a test's hook for what
    # happens while a request is in flight).
    on_request: Callable[[Recorded], None] | None = None
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def text(self, text: str) -> None:
        self.queue(Reply(text=text))

    def tool(self, name: str, call_id: str = "call_1", **arguments: Any) -> None:
        self.queue(Reply(tools=(ToolCall(name, arguments, call_id),)))

    def bodies(self) -> list[Any]:
        return [request.json for request in self.requests]

    def _next(self) -> Reply:
        with self._lock:
            return self.replies.popleft() if self.replies else Reply(text="done")

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                path = self.path.split("?")[0]
                recorded = Recorded(path, body, dict(self.headers.items()))
                with server._lock:
                    server.requests.append(recorded)
                if server.on_request is not None:
                    server.on_request(recorded)
                request = json.loads(body)
                if path.endswith("/responses/compact"):
                    data = _json(_compacted(request, len(server.requests)))
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                reply = server._next()
                stream = bool(request.get("stream"))
                model = request.get("model", "fake-model")
                gemini = _GEMINI_ROUTE.fullmatch(path)
                if gemini is not None:
                    stream = gemini.group(2) == "streamGenerateContent"
                    events = _gemini(reply, gemini.group(1), stream)
                elif path.endswith("/chat/completions"):
                    events = _chat(reply, model, stream)
                elif path.endswith("/responses"):
                    events = _responses(reply, model, stream)
                elif path.endswith("/messages"):
                    events = _anthropic(reply, model, stream)
                else:
                    self.send_error(404)
                    return
                if stream:
                    data = b"".join(events)
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                else:
                    data = events[0]
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _sse(value: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(value) + "\n\n").encode()


def _pieces(text: str) -> list[str]:
    """Split a text in three, so a stream carries several deltas."""
    third = max(1, len(text) // 3)
    return [text[:third], text[third : 2 * third], text[2 * third :]]


# The google-genai SDK's path: its API version, the model, the method.
_GEMINI_ROUTE = re.compile(r"/v1[a-z0-9]*/models/([^/:]+):(generateContent|streamGenerateContent)")

_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _chat(reply: Reply, model: str, stream: bool) -> list[bytes]:
    finish = "tool_calls" if reply.tools else "stop"
    calls = [
        {
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in reply.tools
    ]
    base = {"id": "chatcmpl-fake", "created": 0, "model": model}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if calls:
            message["tool_calls"] = calls
        body = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _USAGE,
        }
        return [_json(body)]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse({**base, "object": "chat.completion.chunk", "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        events += [chunk({"content": piece}) for piece in _pieces(reply.text)]
    for index, call in enumerate(calls):
        arguments = call["function"]["arguments"]
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _pieces(arguments)
        ]
    events.append(chunk({}, finish))
    events.append(_sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": _USAGE}))
    events.append(b"data: [DONE]\n\n")
    return events


def _responses(reply: Reply, model: str, stream: bool) -> list[bytes]:
    output: list[dict[str, Any]] = []
    if reply.text is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_fake",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.tools:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call.call_id}",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        )
    response = {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    if not stream:
        return [_json(response)]
    pending = {**response, "status": "in_progress", "output": []}
    events = [_sse({"type": "response.created", "response": pending, "sequence_number": 0})]
    sequence = 1
    for index, item in enumerate(output):
        events.append(
            _sse(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": item,
                    "sequence_number": sequence,
                }
            )
        )
        events.append(
            _sse(
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": item,
                    "sequence_number": sequence + 1,
                }
            )
        )
        sequence += 2
    events.append(
        _sse({"type": "response.completed", "response": response, "sequence_number": sequence})
    )
    return events


def _anthropic(reply: Reply, model: str, stream: bool) -> list[bytes]:
    content: list[dict[str, Any]] = []
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tools:
        content.append(
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.arguments}
        )
    stop = "tool_use" if reply.tools else "end_turn"
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    if not stream:
        return [_json(message)]
    start = {**message, "content": [], "stop_reason": None}
    events = [_sse({"type": "message_start", "message": start}, "message_start")]
    for index, block in enumerate(content):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            opened = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(block["input"]))
            ]
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": opened},
                "content_block_start",
            )
        )
        events += [
            _sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
            for d in deltas
        ]
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _gemini(reply: Reply, model: str, stream: bool) -> list[bytes]:
    parts: list[dict[str, Any]] = []
    if reply.text is not None:
        parts.append({"text": reply.text})
    # Gemini's function calls carry no id (the client gives each one its own).
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.tools]
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}

    def answer(parts: list[dict[str, Any]], finish: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
        if finish:
            candidate["finishReason"] = "STOP"
            body["usageMetadata"] = usage
        return body

    if not stream:
        return [_json(answer(parts, True))]
    pieces = _pieces(reply.text) if reply.text else []
    events = [_sse(answer([{"text": piece}], False)) for piece in pieces[:-1]]
    last = [{"text": pieces[-1]}] if pieces else []
    events.append(_sse(answer(last + parts[1 if reply.text is not None else 0 :], True)))
    return events


def _compacted(request: dict[str, Any], number: int) -> dict[str, Any]:
    """The answer of ``POST /responses/compact`` as the API documents it: every user message of
    the history sent (``input``), as an output message, then one opaque ``compaction`` item.
    Given ``previous_response_id`` instead, the history is the server's, which this fake does
    not keep: the output is the compaction item alone."""
    history = request.get("input") or []
    users = [
        item
        for item in history
        if isinstance(item, dict)
        and item.get("role") == "user"
        and item.get("type", "message") == "message"
    ]
    output: list[dict[str, Any]] = []
    for i, item in enumerate(users):
        content = item["content"]
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content
        output.append(
            {"id": f"msg_c{number}_{i}", "type": "message", "role": "user", "content": parts}
        )
    output.append(
        {
            "id": f"cmp_{number}",
            "type": "compaction",
            "encrypted_content": f"compacted:{len(history)}",
        }
    )
    return {
        "id": f"resp_compact_{number}",
        "object": "response.compaction",
        "created_at": 0,
        "output": output,
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        },
    }
