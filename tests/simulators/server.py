"""A local server on 127.0.0.1 that answers the official SDKs through the cache simulators.

Routes: ``/v1/chat/completions`` and ``/v1/responses`` (OpenAI), ``/v1/messages`` (Anthropic),
``/<version>/models/<model>:generateContent`` (Gemini), and ``/gateway/v1/chat/completions``:
OpenAI Chat behind an OpenAI-compatible gateway that moves every ``system`` and ``developer``
message to the front before forwarding, as several gateways do with mid-conversation system
messages (docs/PLACEMENT.md, *The tail's role*). Each answers a text reply with the usage
the simulator computed, in the provider's own shape: OpenAI
``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens`` (Responses
``input_tokens_details``), Anthropic ``cache_read_input_tokens`` /
``cache_creation_input_tokens`` (``input_tokens`` is the rest), Gemini
``usageMetadata.cachedContentTokenCount``. A request the provider would refuse gets HTTP 400
with the reason. Every request is recorded: path, raw body, and the simulator's usage.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from simulators.rules import AnthropicCache, GeminiCache, OpenAICache, Rejected, Usage

# The google-genai SDK's path: its API version (v1beta, v1, ...), then the model.
_GEMINI_ROUTE = re.compile(r"/v1[a-z0-9]*/models/([^/:]+):generateContent")


@dataclass
class Exchange:
    path: str
    body: bytes
    usage: Usage | None

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class SimulatorServer:
    openai: OpenAICache = field(default_factory=OpenAICache)
    anthropic: AnthropicCache = field(default_factory=AnthropicCache)
    gemini: GeminiCache = field(default_factory=GeminiCache)
    exchanges: list[Exchange] = field(default_factory=list)
    url: str = ""
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> SimulatorServer:
        simulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, answer = simulator.answer(self.path.split("?")[0], raw)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def usages(self) -> list[Usage]:
        return [e.usage for e in self.exchanges if e.usage is not None]

    def answer(self, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        body = json.loads(raw)
        with self._lock:  # one cache, requests in arrival order
            try:
                if path == "/gateway/v1/chat/completions":
                    usage = self.openai.chat(_hoisted(body))
                    answer = _chat(body, usage)
                elif path == "/v1/chat/completions":
                    usage = self.openai.chat(body)
                    answer = _chat(body, usage)
                elif path == "/v1/responses":
                    usage = self.openai.responses(body)
                    answer = _responses(body, usage)
                elif path == "/v1/messages":
                    usage = self.anthropic.messages(body)
                    answer = _anthropic(body, usage)
                elif (found := _GEMINI_ROUTE.fullmatch(path)) is not None:
                    model = found.group(1)
                    usage = self.gemini.generate(model, body)
                    answer = _gemini(model, usage)
                else:
                    self.exchanges.append(Exchange(path, raw, None))
                    return 404, {"error": {"message": f"no route {path}"}}
            except Rejected as error:
                self.exchanges.append(Exchange(path, raw, None))
                return 400, {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": str(error)},
                }
            self.exchanges.append(Exchange(path, raw, usage))
            return 200, answer


def _hoisted(body: dict[str, Any]) -> dict[str, Any]:
    """The body a hoisting gateway forwards: its system and developer messages first, in their
    order, then the others in theirs."""
    messages = body.get("messages", [])
    first = [m for m in messages if m.get("role") in ("system", "developer")]
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    return {**body, "messages": first + rest}


def _chat(body: dict[str, Any], usage: Usage) -> dict[str, Any]:
    return {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "gpt-sim"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage.total,
            "completion_tokens": 1,
            "total_tokens": usage.total + 1,
            "prompt_tokens_details": {
                "cached_tokens": usage.read,
                "cache_write_tokens": usage.written,
            },
        },
    }


def _responses(body: dict[str, Any], usage: Usage) -> dict[str, Any]:
    return {
        "id": "resp_sim",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "gpt-sim"),
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_sim",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.total,
            "input_tokens_details": {
                "cached_tokens": usage.read,
                "cache_write_tokens": usage.written,
            },
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total + 1,
        },
    }


def _anthropic(body: dict[str, Any], usage: Usage) -> dict[str, Any]:
    return {
        "id": "msg_sim",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sim"),
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.uncached,
            "output_tokens": 1,
            "cache_creation_input_tokens": usage.written,
            "cache_read_input_tokens": usage.read,
        },
    }


def _gemini(model: str, usage: Usage) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "ok"}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage.total,
            "candidatesTokenCount": 1,
            "totalTokenCount": usage.total + 1,
            "cachedContentTokenCount": usage.read,
        },
        "modelVersion": model,
    }
