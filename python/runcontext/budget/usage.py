"""What a provider billed for a request, read from its response: :class:`Usage` and its readers.

``Usage.input`` is the whole prompt as the provider counted it, cached or not, so that it is
comparable with a request count whatever the provider: OpenAI's ``prompt_tokens`` and
``input_tokens`` already include cached tokens; Anthropic's ``input_tokens`` does not, and
the reader adds ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to it.

Each reader takes the official SDK's response object (read by attribute) or the raw JSON dict
of the same response (read by key); no SDK is imported here:

- :func:`openai_chat_usage`: a Chat Completions ``ChatCompletion`` (or the last
  ``ChatCompletionChunk`` of a stream made with ``stream_options={"include_usage": True}``);
- :func:`openai_responses_usage`: a Responses ``Response``;
- :func:`anthropic_usage`: an Anthropic ``Message``;
- :func:`gemini_usage`: a Gemini ``GenerateContentResponse`` (google-genai), or anything that
  carries its ``usage_metadata`` (Google ADK's ``LlmResponse``);
- :func:`read_usage`: any of them, told apart by the response's ``object``, ``type`` or
  ``usage_metadata``.

The four readers return ``None`` when the response carries no usage; :func:`read_usage`
raises then, saying why there is none. Every count is bounded by :data:`MAX_TOKEN_COUNT`: a
larger one is not a plausible bill, and is refused as malformed (docs/BUDGET.md, *Bounds*).
The streaming accumulators of :mod:`runcontext.adapters.streams` expose the usage their
stream carried as ``.usage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runcontext._accumulator import Accumulator

__all__ = [
    "MAX_TOKEN_COUNT",
    "UnreadableUsageWarning",
    "Usage",
    "anthropic_usage",
    "check_token_count",
    "gemini_usage",
    "openai_chat_usage",
    "openai_responses_usage",
    "read_usage",
]

MAX_TOKEN_COUNT = 2**40
"""The largest token count runcontext takes as a bill or a count: 1,099,511,627,776.

About 10**5 times the largest context window offered, so no real request comes near it; a
count above it is a provider's or a proxy's fault (an overflow, a sentinel), not a bill. It is
2**13 times below the transcript's bound on a count (2**53 - 1), so a sum of fewer than 8,192
bounded counts (a request's four parts, a calibrated prefix plus appended messages) is still
recordable (docs/BUDGET.md, *Bounds*)."""


class UnreadableUsageWarning(UserWarning):
    """The backend answered but its billed usage could not be read (none, malformed, or beyond
    :data:`MAX_TOKEN_COUNT`): the run is recorded without ``billed`` and calibrates nothing."""


def check_token_count(value: object, where: str) -> int:
    """``value`` when it is a token count from 0 to :data:`MAX_TOKEN_COUNT`; else a
    ``TypeError`` (not an ``int``) or ``ValueError`` (out of range) naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: expected a token count (int >= 0), got {value!r}")
    if value < 0:
        raise ValueError(f"{where}: expected a token count (int >= 0), got {value}")
    if value > MAX_TOKEN_COUNT:
        raise ValueError(
            f"{where}: {value} tokens is beyond MAX_TOKEN_COUNT ({MAX_TOKEN_COUNT:,}), about "
            "10**5 times the largest context window: not a plausible token count"
        )
    return value


@dataclass(frozen=True)
class Usage:
    """Billed tokens of one request.

    ``input`` is every prompt token (cached reads and cache writes included); ``output`` the
    reply's tokens, or ``None`` when the response did not say; ``cache_read`` and
    ``cache_write`` the parts of ``input`` read from or written to the provider's prompt
    cache (0 when the provider reports none).
    """

    input: int
    output: int | None = None
    cache_read: int = 0
    cache_write: int = 0

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "output":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"Usage.{name}: expected a token count (int >= 0), got {value!r}")
            check_token_count(value, f"Usage.{name}")
        if self.cache_read + self.cache_write > self.input:
            raise ValueError(
                f"Usage: cache_read ({self.cache_read}) + cache_write ({self.cache_write}) "
                f"exceed input ({self.input}); input counts every prompt token, cached or not"
            )


def _member(value: Any, name: str) -> Any:
    """``value[name]`` of a mapping, ``value.name`` of an SDK object; ``None`` when absent."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: Any, where: str, *, required: bool) -> int | None:
    if value is None:
        if required:
            raise ValueError(f"{where}: missing; expected a token count (int >= 0)")
        return None
    return check_token_count(value, where)


_NOT_OBJECTS = (str, bytes, bool, int, float, list, tuple)


def _object(value: Any, where: str) -> Any:
    """``value`` when it is absent, a mapping or an object; else a TypeError naming ``where``."""
    if isinstance(value, _NOT_OBJECTS):
        raise TypeError(f"{where}: expected an object or a dict, got {type(value).__name__}")
    return value


def _usage_of(response: Any) -> Any:
    if response is None:
        raise TypeError("response: expected an SDK response object or its dict, got None")
    _object(response, "response")
    return _object(_member(response, "usage"), "response.usage")


def _build(where: str, input: int, output: int | None, cache_read: int, cache_write: int) -> Usage:
    if cache_read + cache_write > input:
        raise ValueError(
            f"{where}: the cached tokens ({cache_read} read, {cache_write} written) exceed the "
            f"prompt's {input} tokens; the response's usage is inconsistent"
        )
    return Usage(input=input, output=output, cache_read=cache_read, cache_write=cache_write)


def openai_chat_usage(response: Any) -> Usage | None:
    """The billed usage of a Chat Completions response, or ``None`` when it carries none.

    ``usage.prompt_tokens`` (which includes ``prompt_tokens_details.cached_tokens``) is the
    input, ``completion_tokens`` the output, ``cached_tokens`` and ``cache_write_tokens``
    the cache parts. A streamed completion carries usage only in its last chunk, and only
    when the request asked for it with ``stream_options={"include_usage": True}``: pass that
    chunk, or use :class:`runcontext.adapters.streams.OpenAIChatStream`'s ``usage``.
    """
    usage = _usage_of(response)
    if usage is None:
        return None
    return _openai(usage, "prompt_tokens", "completion_tokens", "prompt_tokens_details")


def openai_responses_usage(response: Any) -> Usage | None:
    """The billed usage of a Responses API response, or ``None`` when it carries none.

    ``usage.input_tokens`` (which includes ``input_tokens_details.cached_tokens``) is the
    input, ``output_tokens`` the output, ``cached_tokens`` and ``cache_write_tokens`` the cache
    parts. A response still in progress (``response.created`` or ``response.in_progress``
    events of a stream, a background response being polled) has no usage yet; the
    ``response.completed`` event's response has it (and so does
    :class:`runcontext.adapters.streams.OpenAIResponsesStream`'s ``usage``).
    """
    usage = _usage_of(response)
    if usage is None:
        return None
    return _openai(usage, "input_tokens", "output_tokens", "input_tokens_details")


def _openai(usage: Any, prompt_name: str, output_name: str, details_name: str) -> Usage:
    """Both OpenAI APIs: the prompt count includes ``cached_tokens`` (and
    ``cache_write_tokens``) of its details; they differ in the members' names."""
    where = "response.usage"
    prompt = _count(_member(usage, prompt_name), f"{where}.{prompt_name}", required=True)
    assert prompt is not None
    output = _count(_member(usage, output_name), f"{where}.{output_name}", required=False)
    detail = f"{where}.{details_name}"
    details = _object(_member(usage, details_name), detail)
    cached = _count(_member(details, "cached_tokens"), f"{detail}.cached_tokens", required=False)
    written = _count(
        _member(details, "cache_write_tokens"), f"{detail}.cache_write_tokens", required=False
    )
    return _build(where, prompt, output, cached or 0, written or 0)


def anthropic_usage(response: Any) -> Usage | None:
    """The billed usage of an Anthropic Messages response, or ``None`` when it carries none.

    Anthropic's ``usage.input_tokens`` counts only the prompt tokens after the last cache
    breakpoint: the input is ``input_tokens + cache_read_input_tokens +
    cache_creation_input_tokens``, the cache parts those two, the output ``output_tokens``.
    Every non-streamed ``Message`` has usage; a stream's is in :class:`runcontext.adapters.
    streams.AnthropicStream`'s ``usage`` (``message_start``, updated by ``message_delta``).
    """
    usage = _usage_of(response)
    if usage is None:
        return None
    where = "response.usage"
    uncached = _count(_member(usage, "input_tokens"), f"{where}.input_tokens", required=True)
    assert uncached is not None
    output = _count(_member(usage, "output_tokens"), f"{where}.output_tokens", required=False)
    read = _count(
        _member(usage, "cache_read_input_tokens"),
        f"{where}.cache_read_input_tokens",
        required=False,
    )
    written = _count(
        _member(usage, "cache_creation_input_tokens"),
        f"{where}.cache_creation_input_tokens",
        required=False,
    )
    read, written = read or 0, written or 0
    # Each part is bounded, and so is their sum, the input.
    total = check_token_count(
        uncached + read + written,
        f"{where}: input_tokens + cache_read_input_tokens + cache_creation_input_tokens",
    )
    return Usage(input=total, output=output, cache_read=read, cache_write=written)


def _gemini_metadata(response: Any) -> Any:
    """The ``usage_metadata`` of a Gemini response: the SDK's attribute, the key of its
    ``model_dump()``, or the API's own JSON key ``usageMetadata``."""
    found = _member(response, "usage_metadata")
    if found is None and isinstance(response, Mapping):
        found = response.get("usageMetadata")
    return found


def gemini_usage(response: Any) -> Usage | None:
    """The billed usage of a Gemini ``generate_content`` response, or ``None`` when it carries
    none.

    ``usage_metadata.prompt_token_count`` (which includes ``cached_content_token_count``, the
    tokens read from an implicit or explicit cache) is the input, ``cached_content_token_count``
    the cache read, ``candidates_token_count`` plus ``thoughts_token_count`` (thinking is
    billed as output) the output. Gemini bills no cache write on a request (an explicit cache's
    storage is billed by the hour), so ``cache_write`` is 0. The SDK's object (snake_case
    attributes), its ``model_dump()`` and the API's JSON (``usageMetadata``, camelCase) are
    read alike; Google ADK's ``LlmResponse`` carries the same ``usage_metadata``. A stream
    carries it in its last chunk.
    """
    if response is None:
        raise TypeError("response: expected a Gemini response object or its dict, got None")
    _object(response, "response")
    usage = _object(_gemini_metadata(response), "response.usage_metadata")
    if usage is None:
        return None
    where = "response.usage_metadata"

    def member(name: str) -> Any:
        found = _member(usage, name)
        if found is None and isinstance(usage, Mapping):
            head, *rest = name.split("_")
            found = usage.get(head + "".join(word.title() for word in rest))
        return found

    prompt = _count(member("prompt_token_count"), f"{where}.prompt_token_count", required=True)
    assert prompt is not None
    candidates = _count(
        member("candidates_token_count"), f"{where}.candidates_token_count", required=False
    )
    thoughts = _count(
        member("thoughts_token_count"), f"{where}.thoughts_token_count", required=False
    )
    output = None
    if candidates is not None or thoughts is not None:
        output = check_token_count(
            (candidates or 0) + (thoughts or 0),
            f"{where}: candidates_token_count + thoughts_token_count",
        )
    cached = _count(
        member("cached_content_token_count"), f"{where}.cached_content_token_count", required=False
    )
    return _build(where, prompt, output, cached or 0, 0)


# The response's own marker -> its reader and what to say when it carries no usage.
_BY_MARKER = {
    ("object", "chat.completion"): (
        openai_chat_usage,
        "this Chat Completions response carries no usage",
    ),
    ("object", "chat.completion.chunk"): (
        openai_chat_usage,
        "this Chat Completions chunk carries no usage: only the last chunk of a stream does, "
        'and only when the request passed stream_options={{"include_usage": True}}',
    ),
    ("object", "response"): (
        openai_responses_usage,
        "this Responses API response carries no usage yet (status "
        "{status!r}): read the completed response, e.g. the response.completed event's",
    ),
    ("type", "message"): (
        anthropic_usage,
        "this Anthropic message carries no usage",
    ),
}


def read_usage(response: Any) -> Usage:
    """The billed usage of any response the four readers take, told apart by its shape.

    The response's own marker decides: ``object == "chat.completion"`` (or
    ``"chat.completion.chunk"``) is Chat Completions, ``object == "response"`` the Responses
    API, ``type == "message"`` Anthropic, a ``usage_metadata`` (``usageMetadata`` in the
    API's JSON) Gemini, and a response with ``candidates`` but no usage metadata is a Gemini
    response that carries none. A :class:`Usage` is returned as it is, and so is
    the ``usage`` of a streaming accumulator (:mod:`runcontext.adapters.streams`). Raises
    ``TypeError`` when the response is none of these and ``ValueError`` when it carries no
    usage, saying why, or a count that is negative or beyond :data:`MAX_TOKEN_COUNT`, naming
    the member.
    """
    if isinstance(response, Usage):
        return response  # bounded when it was made
    if response is None or isinstance(response, _NOT_OBJECTS):
        raise TypeError(
            "response: expected an OpenAI ChatCompletion or Response, an Anthropic Message, "
            f"a Gemini GenerateContentResponse (or the dict of one), got {type(response).__name__}"
        )
    carried = _member(response, "usage")
    if isinstance(carried, Usage):
        return carried
    # Each marker is looked up once: a missing attribute of an SDK model costs microseconds.
    kind, shape = _member(response, "object"), None
    found = _BY_MARKER.get(("object", kind)) if isinstance(kind, str) else None
    if found is None:
        shape = _member(response, "type")
        found = _BY_MARKER.get(("type", shape)) if isinstance(shape, str) else None
    if found is not None:
        reader, missing = found
        usage = reader(response)
        if usage is None:
            raise ValueError("response: " + missing.format(status=_member(response, "status")))
        return usage
    if _gemini_metadata(response) is not None:
        usage = gemini_usage(response)
        assert usage is not None
        return usage
    if _member(response, "candidates") is not None:
        raise ValueError(
            "response: this Gemini response carries no usage_metadata; a stream carries it in "
            "its last chunk"
        )
    if isinstance(response, Accumulator):
        raise ValueError(
            f"response: the {type(response).__name__} has seen no usage yet; a Chat "
            'Completions stream carries it only with stream_options={"include_usage": True}, '
            "in its last chunk; a Responses stream in its response.completed event; an "
            "Anthropic stream from its message_start event"
        )
    raise TypeError(
        "response: cannot tell which API this response is from; expected an OpenAI "
        'ChatCompletion (object "chat.completion"), a Responses Response (object "response"), '
        'an Anthropic Message (type "message"), a Gemini GenerateContentResponse '
        "(usage_metadata), the dict of one, or a runcontext.adapters.streams accumulator;"
        f" got {type(response).__name__} with object={kind!r}, "
        f"type={shape!r}"
    )
