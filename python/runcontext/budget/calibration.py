"""Counting a request before it is sent, and learning from what the provider billed.

:class:`RequestCounter` wraps a local counter (any ``Callable[[str], int]``, such as
:func:`runcontext.tokenizers.tiktoken_counter`) and keeps a calibration: after a reply,
:meth:`RequestCounter.calibrate` turns the provider's billed input tokens into the exact count
of that request's conversation, keyed by the request's shape (model, head, tools). The next
request that continues the conversation is then counted as that billed count plus the local
estimate of only what was appended, and of the tail (docs/BUDGET.md, *Calibration*).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runcontext._checks import check_context
from runcontext._core import RunContext, canonical_json, digest
from runcontext.budget.request_count import Quality, RequestCount
from runcontext.budget.usage import MAX_TOKEN_COUNT, Usage, check_token_count
from runcontext.errors import CanonicalJSONError

__all__ = [
    "CALIBRATION_VERSION",
    "MAX_CALIBRATED_SHAPES",
    "MESSAGE_OVERHEAD",
    "REQUEST_OVERHEAD",
    "RequestCounter",
]

CALIBRATION_VERSION = 1
"""Part of every calibration key: a change to how counts are made never reuses an old one."""

MESSAGE_OVERHEAD = 3
"""Tokens added per message (the role and the separators chat formats wrap it in)."""

REQUEST_OVERHEAD = 3
"""Tokens added per request (the reply's priming)."""

MAX_CALIBRATED_SHAPES = 64
"""Request shapes (model, head, tools) a counter remembers, least recently used first out."""

_PREFIXES_PER_SHAPE = 8  # billed or counted conversation prefixes kept per shape
_CONTEXTS = 256  # (head, tail) counts kept, by context digest
_TOOLS = 64  # tool-catalogue counts kept, by digest


@dataclass(frozen=True)
class _Prefix:
    """A conversation prefix whose token count is known."""

    length: int  # messages[:length]
    digest: str  # digest(list(messages[:length]))
    conversation: int  # its tokens, the request overhead included
    quality: Quality  # exact: billed for this request; calibrated: derived from a billed one
    tail: str | None  # the tail text's digest at the time


@dataclass(frozen=True)
class _Shape:
    """What :meth:`RequestCounter.calibrate` needs to learn from a count."""

    key: str
    length: int
    digest: str | None  # None: the conversation has no JSON form, nothing is learnt
    tail: str | None


class RequestCounter:
    """Counts requests with ``counter``, calibrated by billed usage.

    ``counter`` counts the tokens of a text. ``message_overhead`` and ``request_overhead``
    are the tokens a chat format adds per message and per request (3 and 3, OpenAI's figures
    for its chat models). One counter serves one request layout: use one per adapter
    (calibration is keyed by model, head and tools, not by how the adapter lays them out).
    A counter is not thread-safe; give each thread (or each :class:`runcontext.Loop`) its own.
    """

    def __init__(
        self,
        counter: Callable[[str], int],
        *,
        message_overhead: int = MESSAGE_OVERHEAD,
        request_overhead: int = REQUEST_OVERHEAD,
    ) -> None:
        if not callable(counter):
            raise TypeError(
                f"counter: expected a callable counting the tokens of a text, "
                f"got {type(counter).__name__}"
            )
        for name, value in (
            ("message_overhead", message_overhead),
            ("request_overhead", request_overhead),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"{name}: expected a token count (int >= 0), got {value!r}")
        self.counter = counter
        self.message_overhead = message_overhead
        self.request_overhead = request_overhead
        # context digest -> (head tokens, tail tokens, head text digest, tail text digest)
        self._contexts: OrderedDict[str, tuple[int, int, str, str | None]] = OrderedDict()
        self._tools: OrderedDict[str, int] = OrderedDict()
        self._shapes: OrderedDict[str, list[_Prefix]] = OrderedDict()

    # --- counting ---------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        """The counter's count of ``text``, checked to be a token count."""
        count = self.counter(text)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TypeError(f"counter: expected a token count (int >= 0), got {count!r}")
        if count > MAX_TOKEN_COUNT:
            raise ValueError(
                f"counter: counted {count} tokens in a text of {len(text):,} characters, beyond "
                f"MAX_TOKEN_COUNT ({MAX_TOKEN_COUNT:,}); the counter is wrong"
            )
        return count

    def count_message(self, message: Mapping[str, Any]) -> int:
        """The estimate of one message: its text values counted, plus ``message_overhead``.

        The text is every string in the message except the values of ``type`` members (a
        content part's ``"text"`` is markup, not prompt), in order, one per line; numbers and
        booleans count as their JSON text. Keys are not counted.
        """
        return self.count_text("\n".join(_texts(message))) + self.message_overhead

    def count_context(self, context: RunContext) -> tuple[int, int]:
        """``(head, tail)`` tokens of ``context``, each with its message overhead; counted
        once per context digest."""
        head, tail, _, _ = self._context(context)
        return head, tail

    def _context(self, context: RunContext) -> tuple[int, int, str, str | None]:
        cached = self._contexts.get(context.digest)
        if cached is not None:
            self._contexts.move_to_end(context.digest)
            return cached
        head_text, tail_text = context.head_text, context.tail_text
        head = 0 if head_text is None else self.count_text(head_text) + self.message_overhead
        tail = 0 if tail_text is None else self.count_text(tail_text) + self.message_overhead
        entry = (head, tail, digest(head_text), None if tail_text is None else digest(tail_text))
        _remember(self._contexts, context.digest, entry, _CONTEXTS)
        return entry

    def count_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> tuple[int, str]:
        """``(tokens, digest)`` of a tool catalogue: its canonical JSON text counted, once per
        digest. No tools (``None`` or ``[]``) count 0."""
        if not tools:
            return 0, ""
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
            raise TypeError(
                f"tools: expected a sequence of tool declarations, got {type(tools).__name__}"
            )
        text = canonical_json(list(tools))
        key = digest(list(tools))
        cached = self._tools.get(key)
        if cached is None:
            cached = self.count_text(text.decode())
            _remember(self._tools, key, cached, _TOOLS)
        return cached, key

    def count_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        context: RunContext | None,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> RequestCount:
        """The input tokens of the request ``[head, *messages, tail]`` (with ``tools``) to
        ``model``, by part, with its quality.

        The conversation is the count of the longest prefix of ``messages`` known from a
        billed request (or from an earlier count) plus the estimate of the messages after it;
        a billed prefix makes the count ``calibrated``, or ``exact`` when it is this very
        request (same conversation and tail). Without a known prefix every message is
        estimated (``estimated``).
        """
        if not isinstance(model, str) or not model:
            raise TypeError(f"model: expected a non-empty model name, got {model!r}")
        context = check_context(context) or RunContext()
        head, tail, head_key, tail_key = self._context(context)
        tools_count, tools_key = self.count_tools(tools)
        # The shape: a change of model, head, tools, overheads or counting rule is another.
        key = f"{CALIBRATION_VERSION} {model} {head_key} {tools_key} "
        key += f"{self.message_overhead} {self.request_overhead}"
        prefix_digest = _prefix_digest(messages, len(messages))
        prefix = self._longest_prefix(key, messages, prefix_digest)
        if prefix is None:
            conversation = self.request_overhead + sum(self.count_message(m) for m in messages)
            quality: Quality = "estimated"
        else:
            appended = sum(self.count_message(m) for m in messages[prefix.length :])
            conversation = prefix.conversation + appended
            if prefix.quality == "estimated":
                quality = "estimated"
            elif (
                prefix.quality == "exact"
                and prefix.length == len(messages)
                and prefix.tail == tail_key
            ):
                quality = "exact"
            else:
                quality = "calibrated"
        conversation = max(conversation, 0)
        total = head + conversation + tail + tools_count
        if total > MAX_TOKEN_COUNT:
            # Each part is bounded, their sum need not be; refused here, before any call.
            raise ValueError(
                f"the request to {model} counts {total:,} tokens (head {head:,}, conversation "
                f"{conversation:,}, tail {tail:,}, tools {tools_count:,}), beyond "
                f"MAX_TOKEN_COUNT ({MAX_TOKEN_COUNT:,}); no model takes it: shorten the "
                "conversation, or check the counter"
            )
        count = RequestCount(
            model=model,
            head=head,
            conversation=conversation,
            tail=tail,
            tools=tools_count,
            quality=quality,
            shape=_Shape(key, len(messages), prefix_digest, tail_key),
        )
        if prefix_digest is not None and (prefix is None or prefix.length < len(messages)):
            # Remember this conversation's count, so that the next request estimates only
            # what it appends; it keeps the quality of the count it came from.
            self._learn(count, "estimated" if quality == "estimated" else "calibrated")
        return count

    def compacted(self, start: int) -> None:
        """Forget every known conversation prefix longer than ``start`` messages: a compaction
        (or an elision) from position ``start`` replaced what they counted, so they can never
        match again and would only take the places of prefixes that can. Shorter prefixes (a
        system prompt before the range) still hold and are kept (docs/BUDGET.md,
        *Compaction*)."""
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise TypeError(f"start: expected a position (int >= 0), got {start!r}")
        for prefixes in self._shapes.values():
            prefixes[:] = [prefix for prefix in prefixes if prefix.length <= start]

    def calibrate(self, count: RequestCount, usage: Usage | int) -> None:
        """Learn from what the provider billed for the request ``count`` counted.

        ``usage`` is a :class:`~runcontext.budget.Usage` (from
        :func:`~runcontext.budget.read_usage`) or the billed input tokens, at most
        :data:`~runcontext.budget.MAX_TOKEN_COUNT` (``ValueError`` beyond it, before anything
        is learnt). Its input becomes the exact count of that request; the conversation's
        count is what remains once the head, tail and tools are taken away.
        """
        if not isinstance(count, RequestCount) or not isinstance(count.shape, _Shape):
            raise TypeError("count: expected a RequestCount made by this counter's count_request")
        billed = usage.input if isinstance(usage, Usage) else usage
        if isinstance(billed, bool) or not isinstance(billed, int) or billed < 0:
            raise TypeError(f"usage: expected a Usage or a token count, got {usage!r}")
        # A Usage is bounded when it is made; a bare count is checked here, so that an
        # implausible bill never becomes a calibration that every later count carries.
        check_token_count(billed, "usage")
        if count.shape.digest is None:
            return  # a conversation without a JSON form cannot be recognised again
        self._learn(count, "exact", total=billed)

    # --- calibration ------------------------------------------------------------------------

    def _learn(self, count: RequestCount, quality: Quality, total: int | None = None) -> None:
        """Remember ``count``'s conversation (``total``: the billed input, which replaces
        the count's own total)."""
        shape = count.shape
        assert isinstance(shape, _Shape) and shape.digest is not None
        prefixes = self._shapes.get(shape.key)
        if prefixes is None:
            prefixes = []
            _remember(self._shapes, shape.key, prefixes, MAX_CALIBRATED_SHAPES)
        else:
            self._shapes.move_to_end(shape.key)
        total = count.total if total is None else total
        conversation = total - count.head - count.tail - count.tools
        entry = _Prefix(shape.length, shape.digest, conversation, quality, shape.tail)
        # One entry per prefix; a billed one is replaced only by a newer billing.
        for index, known in enumerate(prefixes):
            if known.length == shape.length and known.digest == shape.digest:
                if known.quality == "exact" and quality != "exact":
                    return
                prefixes[index] = entry
                break
        else:
            prefixes.append(entry)
            prefixes.sort(key=lambda p: p.length, reverse=True)
            del prefixes[_PREFIXES_PER_SHAPE:]

    def _longest_prefix(
        self, key: str, messages: Sequence[Mapping[str, Any]], full: str | None
    ) -> _Prefix | None:
        """The longest prefix of ``messages`` whose count this shape knows."""
        prefixes = self._shapes.get(key)
        if not prefixes or full is None:
            return None
        self._shapes.move_to_end(key)
        digests = {len(messages): full}
        for prefix in prefixes:  # longest first
            if prefix.length > len(messages):
                continue
            if prefix.length not in digests:
                digests[prefix.length] = _prefix_digest(messages, prefix.length) or ""
            if digests[prefix.length] == prefix.digest:
                return prefix
        return None


def _prefix_digest(messages: Sequence[Mapping[str, Any]], length: int) -> str | None:
    try:
        return digest([m if type(m) is dict else dict(m) for m in messages[:length]])
    except (CanonicalJSONError, TypeError, ValueError):
        return None  # no JSON form (an SDK object, NaN): counted, never recognised again


def _texts(value: object, key: str | None = None) -> list[str]:
    if isinstance(value, str):
        return [] if key == "type" else [value]
    if isinstance(value, Mapping):
        return [text for k, v in value.items() for text in _texts(v, k)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _texts(item)]
    if value is None:
        return []
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int | float):
        return [repr(value)]
    return [str(value)]


def _remember(cache: OrderedDict[str, Any], key: str, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)
