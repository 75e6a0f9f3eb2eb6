"""Each provider's documented prompt-cache rules, applied to a request body.

A request is flattened into *blocks* in the provider's cache order (tools, instructions, then
the conversation; a message is a header block for its role and other keys, then one block per
content part). The cache sees content, not instructions to the cache: a string content is the
same block as one text part, and ``prompt_cache_breakpoint`` / ``cache_control`` markers are
left out of a block's identity. A block's size in tokens is its canonical JSON's UTF-8 length
divided by four, rounded up: a deterministic stand-in for a tokenizer. A cache entry is the
hash of every block up to a boundary, with its token count.

* OpenAI (GPT-5.6 and later; the ``openai`` SDK's ``PromptCacheOptions``): an entry is written
  at a breakpoint (explicit ``prompt_cache_breakpoint`` on a content part, never on assistant
  content; in ``implicit`` mode also one managed breakpoint) and read only when a request
  contains that exact prefix: no shorter fallback, no lookback limit, among the latest 80
  entries. ``implicit`` mode writes the implicit breakpoint and the latest three explicit ones;
  ``explicit`` mode the latest four explicit ones and, without any, nothing. Where the implicit
  breakpoint lands is ambiguous, so both readings exist: the end of the newest message
  (``"newest"``) or the end of the last user/tool message (``"last_user_tool"``). Nothing under
  1,024 tokens is cached. Writes are billed 1.25x, reads 0.1x.
* Anthropic (Messages API): at most four ``cache_control`` markers (nested ones and the
  top-level automatic one count), longer TTLs before shorter ones, none on a ``system``-role
  message inside ``messages``; a marker reads the longest entry at its own block or up to 20
  blocks before it, and writes an entry at itself when its prefix reaches the model's minimum.
  Writes 1.25x (2x for a 1-hour TTL), reads 0.1x.
* Gemini (implicit caching): every request's prefixes are kept; a request reads the longest
  kept prefix that it begins with, at a block boundary, when it reaches the model's minimum.
  No write charge; reads 0.1x.

A simulator raises :class:`Rejected` where the real API answers HTTP 400.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runcontext.adapters.caching import cache_minimum

OPENAI_MINIMUM = 1024
OPENAI_CONSIDERED = 80
OPENAI_MAX_WRITTEN = 4
ANTHROPIC_MAX_MARKERS = 4
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_DEFAULT_MINIMUM = 1024  # for model names the table does not know (test models)
GEMINI_DEFAULT_MINIMUM = 2048
WRITE_PRICE = 1.25
WRITE_PRICE_1H = 2.0
READ_PRICE = 0.1
IMPLICIT_READINGS = ("newest", "last_user_tool")


class Rejected(ValueError):
    """The provider would refuse this request (HTTP 400); the message says why."""


@dataclass
class Block:
    key: Any  # what the cache sees
    role: str
    marker: Mapping[str, Any] | None = None  # the breakpoint on this block, if any


@dataclass(frozen=True)
class Usage:
    """One request's input tokens: read from cache, written to it, and the rest."""

    total: int
    read: int
    written: int
    written_1h: int = 0
    # Tokens written at or after the start of the last message (the tail, in an adapter's
    # request): a write there is paid every turn and never read back.
    written_in_last_message: int = 0
    # Tokens of the longest block prefix this request shares with the previous one: what a
    # perfect cache could read (for an adapter's request: head and earlier conversation).
    shared: int = 0

    @property
    def uncached(self) -> int:
        return self.total - self.read - self.written

    def cost(self) -> float:
        """Input cost relative to the same tokens with no caching."""
        paid = (
            self.uncached
            + READ_PRICE * self.read
            + WRITE_PRICE * (self.written - self.written_1h)
            + WRITE_PRICE_1H * self.written_1h
        )
        return paid / self.total if self.total else 1.0


def tokens(value: Any) -> int:
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    return max(1, -(-size // 4))


def _shared(previous: list[bytes], prefixes: _Prefixes) -> int:
    shared = 0
    for index, (a, b) in enumerate(zip(previous, prefixes.hashes, strict=False)):
        if a != b:
            break
        shared = prefixes.ends[index]
    return shared


class _Prefixes:
    """Cumulative hashes and token counts of a block list."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self.hashes: list[bytes] = []
        self.ends: list[int] = []
        digest = hashlib.sha256()
        total = 0
        for block in blocks:
            digest.update(json.dumps([block.role, block.key], sort_keys=True).encode())
            self.hashes.append(digest.copy().digest())
            total += tokens([block.role, block.key])
            self.ends.append(total)
        self.total = total


def _strip(part: Any, marker_key: str) -> Any:
    if isinstance(part, Mapping):
        return {k: v for k, v in part.items() if k != marker_key}
    return part


def _message_blocks(
    message: Mapping[str, Any], content_key: str, text_kind: str, marker_key: str, role: str
) -> list[Block]:
    header = {k: v for k, v in message.items() if k != content_key}
    blocks = [Block(header, role)]
    content = message.get(content_key)
    if isinstance(content, str):
        blocks.append(Block({"type": text_kind, "text": content}, role))
    elif isinstance(content, list):
        for part in content:
            marker = part.get(marker_key) if isinstance(part, Mapping) else None
            blocks.append(Block(_strip(part, marker_key), role, marker))
    elif content is not None:
        blocks.append(Block(content, role))
    return blocks


# --- OpenAI -------------------------------------------------------------------------------


@dataclass
class OpenAICache:
    """Prompt cache of one OpenAI organisation and ``prompt_cache_key``."""

    implicit: str = "newest"
    minimum: int = OPENAI_MINIMUM
    entries: dict[bytes, int] = field(default_factory=dict)  # in write order
    previous: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.implicit not in IMPLICIT_READINGS:
            raise ValueError(
                f"implicit: expected one of {IMPLICIT_READINGS}, got {self.implicit!r}"
            )

    def chat(self, body: Mapping[str, Any]) -> Usage:
        blocks: list[Block] = []
        if body.get("tools"):
            blocks.append(Block(body["tools"], "tools"))
        last_user_tool = -1
        message_starts: list[int] = []
        for message in body["messages"]:
            message_starts.append(len(blocks))
            role = message["role"]
            blocks.extend(
                _message_blocks(message, "content", "text", "prompt_cache_breakpoint", role)
            )
            if role in ("user", "tool"):
                last_user_tool = len(blocks) - 1
        return self._evaluate(body, blocks, message_starts, last_user_tool)

    def responses(self, body: Mapping[str, Any]) -> Usage:
        blocks: list[Block] = []
        if body.get("tools"):
            blocks.append(Block(body["tools"], "tools"))
        if body.get("instructions") is not None:
            blocks.append(Block(body["instructions"], "instructions"))
        items = body["input"]
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        last_user_tool = -1
        message_starts: list[int] = []
        for item in items:
            message_starts.append(len(blocks))
            if "role" in item:
                role = item["role"]
                blocks.extend(
                    _message_blocks(item, "content", "input_text", "prompt_cache_breakpoint", role)
                )
            elif item.get("type") == "function_call_output":
                role = "tool"
                blocks.extend(
                    _message_blocks(item, "output", "input_text", "prompt_cache_breakpoint", role)
                )
            else:
                role = "assistant"  # the model's own items: calls, reasoning
                blocks.append(Block(item, role))
            if role in ("user", "tool"):
                last_user_tool = len(blocks) - 1
        return self._evaluate(body, blocks, message_starts, last_user_tool)

    def _evaluate(
        self,
        body: Mapping[str, Any],
        blocks: list[Block],
        message_starts: list[int],
        last_user_tool: int,
    ) -> Usage:
        explicit: list[int] = []
        for index, block in enumerate(blocks):
            if block.marker is None:
                continue
            if block.role == "assistant":
                raise Rejected(
                    f"prompt_cache_breakpoint is not supported on assistant content (block {index})"
                )
            if dict(block.marker).get("mode") != "explicit":
                raise Rejected(f"prompt_cache_breakpoint.mode must be 'explicit' (block {index})")
            explicit.append(index)
        options = body.get("prompt_cache_options") or {}
        mode = options.get("mode", "implicit")
        if mode not in ("implicit", "explicit"):
            raise Rejected(f"prompt_cache_options.mode: unknown mode {mode!r}")
        if mode == "implicit":
            implicit = len(blocks) - 1 if self.implicit == "newest" else last_user_tool
            written = explicit[-(OPENAI_MAX_WRITTEN - 1) :]
            if implicit >= 0:
                written = sorted({*written, implicit})
        else:
            written = explicit[-OPENAI_MAX_WRITTEN:]
        prefixes = _Prefixes(blocks)
        considered = set(list(self.entries)[-OPENAI_CONSIDERED:])
        read = 0
        for index, digest in enumerate(prefixes.hashes):
            if digest in considered:
                read = max(read, prefixes.ends[index])
        written_to = read
        last_start = (
            prefixes.ends[message_starts[-1] - 1] if message_starts and message_starts[-1] else 0
        )
        written_tail = 0
        for index in written:
            end = prefixes.ends[index]
            if end < self.minimum:
                continue
            digest = prefixes.hashes[index]
            if digest in self.entries:
                self.entries.pop(digest)  # a hit refreshes the entry: now the latest
            self.entries[digest] = end
            if end > written_to:
                if end > last_start:
                    written_tail += end - max(last_start, written_to)
                written_to = end
        shared, self.previous = _shared(self.previous, prefixes), prefixes.hashes
        return Usage(prefixes.total, read, written_to - read, 0, written_tail, shared)


# --- Anthropic ----------------------------------------------------------------------------


def _nested_markers(value: Any, skip: str = "input") -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            if isinstance(item.get("cache_control"), Mapping):
                found.append(item["cache_control"])
            pending.extend(v for k, v in item.items() if k != skip and k != "cache_control")
        elif isinstance(item, list):
            pending.extend(item)
    return found


@dataclass
class AnthropicCache:
    minimum: int | None = None  # by model when None
    entries: dict[bytes, int] = field(default_factory=dict)
    previous: list[bytes] = field(default_factory=list)

    def messages(self, body: Mapping[str, Any]) -> Usage:
        blocks: list[Block] = []
        markers: list[tuple[int, Mapping[str, Any]]] = []  # (block index, marker) in order

        def add(role: str, part: Any) -> None:
            if isinstance(part, str):
                part = {"type": "text", "text": part}
            found = _nested_markers(part)
            if found and role == "system-turn":
                raise Rejected("cache_control is not supported on a system message in messages")
            if found and part.get("type") in ("thinking", "redacted_thinking"):
                raise Rejected("cache_control cannot be set on a thinking block")
            if found and part.get("type") == "text" and not str(part.get("text", "")).strip():
                raise Rejected("cache_control cannot be set for empty text")
            blocks.append(Block(_without_markers(part), role))
            markers.extend((len(blocks) - 1, marker) for marker in found)

        for tool in body.get("tools") or []:
            add("tools", tool)
        system = body.get("system")
        if isinstance(system, str):
            if system:
                add("system", system)
        elif system:
            for part in system:
                add("system", part)
        message_starts: list[int] = []
        for message in body["messages"]:
            message_starts.append(len(blocks))
            role = "system-turn" if message["role"] == "system" else message["role"]
            blocks.append(Block({"role": message["role"]}, role))
            content = message["content"]
            for part in [content] if isinstance(content, str) else content:
                add(role, part)
        top = body.get("cache_control")
        if isinstance(top, Mapping):  # automatic caching: the last cacheable block
            markers.append((len(blocks) - 1, top))
        if len(markers) > ANTHROPIC_MAX_MARKERS:
            raise Rejected(
                f"A maximum of {ANTHROPIC_MAX_MARKERS} blocks with cache_control may be "
                f"provided. Found {len(markers)}."
            )
        shortest = "1h"
        for _, marker in markers:
            ttl = marker.get("ttl", "5m")
            if ttl == "1h" and shortest == "5m":
                raise Rejected("a ttl='1h' cache_control block must not come after a ttl='5m' one")
            shortest = min(shortest, ttl, key=("5m", "1h").index)
        minimum = self.minimum
        if minimum is None:
            minimum = (
                cache_minimum("anthropic", str(body.get("model", ""))) or ANTHROPIC_DEFAULT_MINIMUM
            )
        prefixes = _Prefixes(blocks)
        read = 0
        for position, _ in markers:
            for index in range(position, max(-1, position - ANTHROPIC_LOOKBACK), -1):
                if prefixes.hashes[index] in self.entries:
                    read = max(read, prefixes.ends[index])
                    break
        written_to = read
        written_1h = 0
        last_start = prefixes.ends[message_starts[-1] - 1] if message_starts else 0
        written_tail = 0
        for position, marker in markers:
            end = prefixes.ends[position]
            if end < minimum:
                continue
            self.entries[prefixes.hashes[position]] = end
            if end > written_to:
                if marker.get("ttl") == "1h":
                    written_1h += end - written_to
                if end > last_start:
                    written_tail += end - max(last_start, written_to)
                written_to = end
        shared, self.previous = _shared(self.previous, prefixes), prefixes.hashes
        return Usage(prefixes.total, read, written_to - read, written_1h, written_tail, shared)


def _without_markers(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


# --- Gemini -------------------------------------------------------------------------------


@dataclass
class GeminiCache:
    minimum: int | None = None
    prefixes: dict[bytes, int] = field(default_factory=dict)
    previous: list[bytes] = field(default_factory=list)

    def generate(self, model: str, body: Mapping[str, Any]) -> Usage:
        blocks: list[Block] = []
        if body.get("tools"):
            blocks.append(Block(body["tools"], "tools"))
        system = body.get("systemInstruction") or body.get("system_instruction")
        if system:
            for part in system.get("parts", []):
                blocks.append(Block(part, "system"))
        message_starts: list[int] = []
        for content in body["contents"]:
            message_starts.append(len(blocks))
            role = content.get("role", "user")
            blocks.append(Block({"role": role}, role))
            for part in content.get("parts", []):
                blocks.append(Block(part, role))
        minimum = self.minimum
        if minimum is None:
            minimum = cache_minimum("gemini", model) or GEMINI_DEFAULT_MINIMUM
        prefixes = _Prefixes(blocks)
        read = 0
        for index, digest in enumerate(prefixes.hashes):
            if digest in self.prefixes and prefixes.ends[index] >= minimum:
                read = prefixes.ends[index]
        for digest, end in zip(prefixes.hashes, prefixes.ends, strict=True):
            self.prefixes[digest] = end
        shared, self.previous = _shared(self.previous, prefixes), prefixes.hashes
        return Usage(prefixes.total, read, 0, shared=shared)
