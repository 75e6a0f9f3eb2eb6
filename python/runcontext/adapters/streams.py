"""Accumulators for streamed responses: feed every event, get the message to append and record.

A streamed reply arrives as deltas; what goes back into the conversation is the whole message,
the same one :mod:`runcontext.adapters.replies` makes from a response that was not streamed:

- :class:`OpenAIChatStream` for ``chat.completions.create(..., stream=True)`` chunks (content,
  refusal and tool-call deltas, which arrive by ``index`` with the arguments in pieces);
- :class:`OpenAIResponsesStream` for ``responses.create(..., stream=True)`` events;
- :class:`AnthropicStream` for ``messages.create(..., stream=True)`` events (text, tool-input
  JSON, thinking and signature deltas).

Each takes the SDK's event objects or their dicts, through :meth:`add` (returning the event,
so a loop can pass events on) or by iterating ``accumulator.feed(stream)``. Each also keeps
the billed usage the stream carried, as a :class:`~runcontext.budget.Usage` in ``.usage``
(``None`` until the stream has carried one; read the way
:mod:`runcontext.budget.usage` reads a response that was not streamed).
"""

from __future__ import annotations

import json
from typing import Any

from runcontext._accumulator import Accumulator
from runcontext.adapters.replies import openai_responses_reply, plain, without_nulls
from runcontext.budget.usage import (
    Usage,
    anthropic_usage,
    openai_chat_usage,
    openai_responses_usage,
)

__all__ = ["AnthropicStream", "OpenAIChatStream", "OpenAIResponsesStream"]


class OpenAIChatStream(Accumulator):
    """Accumulates Chat Completions chunks of one choice into the ``assistant`` message."""

    def __init__(self, *, choice: int = 0) -> None:
        self._choice = choice
        self._role = "assistant"
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self._usage: dict[str, Any] | None = None

    @property
    def usage(self) -> Usage | None:
        """The usage of the stream's last chunk, which carries it only when the request
        passed ``stream_options={"include_usage": True}``; ``None`` until then (and for a
        stream made without it)."""
        return None if self._usage is None else openai_chat_usage({"usage": self._usage})

    def add(self, chunk: Any) -> Any:
        body = plain(chunk, "chunk")
        if isinstance(body.get("usage"), dict):
            self._usage = body["usage"]
        for choice in body.get("choices") or []:
            if choice.get("index", 0) != self._choice:
                continue
            delta = choice.get("delta") or {}
            if delta.get("role"):
                self._role = delta["role"]
            if delta.get("content"):
                self._content.append(delta["content"])
            if delta.get("refusal"):
                self._refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or []:
                self._add_call(call)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return chunk

    def _add_call(self, delta: dict[str, Any]) -> None:
        index = delta.get("index", 0)
        call = self._calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if delta.get("id"):
            call["id"] = delta["id"]
        if delta.get("type"):
            call["type"] = delta["type"]
        function = delta.get("function") or {}
        if function.get("name"):
            call["function"]["name"] += function["name"]
        if function.get("arguments"):
            call["function"]["arguments"] += function["arguments"]

    def message(self) -> dict[str, Any]:
        """The message so far: what :func:`~runcontext.adapters.replies.openai_chat_reply`
        returns for the same reply, not streamed."""
        message: dict[str, Any] = {"role": self._role}
        if self._content:
            message["content"] = "".join(self._content)
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [
                without_nulls(self._calls[index]) for index in sorted(self._calls)
            ]
        if len(message) == 1:
            message["content"] = ""
        return message


# The events that end a Responses stream; each carries the response with its usage.
_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


class OpenAIResponsesStream(Accumulator):
    """Accumulates Responses API stream events into the output items.

    The items are taken from ``response.output_item.done`` events (each carries its whole
    item); a ``response.completed`` event's ``output``, when it comes, is used as it is.
    """

    def __init__(self) -> None:
        self._done: dict[int, dict[str, Any]] = {}
        self._completed: list[dict[str, Any]] | None = None
        self._usage: dict[str, Any] | None = None

    @property
    def usage(self) -> Usage | None:
        """The usage of the ``response.completed`` event's response (or of
        ``response.incomplete`` or ``response.failed``, which are billed too); ``None``
        until one of them arrives."""
        return None if self._usage is None else openai_responses_usage({"usage": self._usage})

    def add(self, event: Any) -> Any:
        body = plain(event, "event")
        kind = body.get("type")
        if kind == "response.output_item.done" and isinstance(body.get("item"), dict):
            self._done[body.get("output_index", len(self._done))] = body["item"]
        elif kind in _FINAL_EVENTS and isinstance(body.get("response"), dict):
            response = body["response"]
            if kind == "response.completed" and isinstance(response.get("output"), list):
                self._completed = response["output"]
            if isinstance(response.get("usage"), dict):
                self._usage = response["usage"]
        return event

    def items(self) -> list[dict[str, Any]]:
        """The output items: what :func:`~runcontext.adapters.replies.openai_responses_reply`
        returns for the same response, not streamed."""
        output = (
            self._completed
            if self._completed is not None
            else [self._done[index] for index in sorted(self._done)]
        )
        return openai_responses_reply({"output": output})


class AnthropicStream(Accumulator):
    """Accumulates Anthropic Messages stream events into the ``assistant`` message."""

    def __init__(self) -> None:
        self._role = "assistant"
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.stop_reason: str | None = None
        self._usage: dict[str, Any] | None = None

    @property
    def usage(self) -> Usage | None:
        """The usage of ``message_start``, updated by each ``message_delta``: its
        ``output_tokens`` are cumulative, and so are the input and cache counts it carries
        (recent API versions send them again; a null one keeps the earlier value, as the
        SDK's own accumulator does). ``None`` before ``message_start``."""
        return None if self._usage is None else anthropic_usage({"usage": self._usage})

    def add(self, event: Any) -> Any:
        body = plain(event, "event")
        kind = body.get("type")
        if kind == "message_start":
            message = body.get("message") or {}
            self._role = message.get("role") or "assistant"
            self._usage = dict(message.get("usage") or {})
        elif kind == "content_block_start":
            block = dict(body.get("content_block") or {})
            self._blocks[body["index"]] = block
        elif kind == "content_block_delta":
            self._delta(body["index"], body.get("delta") or {})
        elif kind == "content_block_stop":
            self._finish(body["index"])
        elif kind == "message_delta":
            delta = body.get("delta") or {}
            self.stop_reason = delta.get("stop_reason") or self.stop_reason
            update = {k: v for k, v in (body.get("usage") or {}).items() if v is not None}
            self._usage = {**(self._usage or {}), **update}
        return event

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.setdefault(index, {})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "citations_delta":
            citations = block.get("citations") or []
            block["citations"] = [*citations, delta.get("citation")]

    def _finish(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        if pieces is not None:
            text = "".join(pieces)
            self._blocks[index]["input"] = json.loads(text) if text else {}

    def message(self) -> dict[str, Any]:
        """The message so far: what :func:`~runcontext.adapters.replies.anthropic_reply`
        returns for the same reply, not streamed. Tool input still streaming is left out of
        its block until the block stops."""
        return {
            "role": self._role,
            "content": [without_nulls(self._blocks[index]) for index in sorted(self._blocks)],
        }
