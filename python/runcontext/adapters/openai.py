"""OpenAI Chat Completions and Responses: head first, tail last, and an explicit
``prompt_cache_breakpoint`` at the end of the stable prefix (docs/PLACEMENT.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._core import RunContext
from runcontext._splice import splice
from runcontext.adapters._common import bad_role, check_choice, check_roles, context_texts

__all__ = [
    "OPENAI_CACHE_MODES",
    "openai_chat",
    "openai_chat_request",
    "openai_prompt_caching",
    "openai_responses",
]

# Roles Chat Completions accepts in `messages` ("function" is deprecated but still accepted).
OPENAI_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# The head and the tail are instructions: `system`, or `developer` for the models that want it.
OPENAI_CONTEXT_ROLES = ("system", "developer")
# The tail may also travel as `user`, for gateways that move or drop mid-conversation
# instruction messages.
OPENAI_TAIL_ROLES = ("system", "developer", "user")

# Roles of message items in a Responses `input`; other items (function_call, reasoning, ...)
# carry a `type` instead of a `role` and pass through untouched.
OPENAI_RESPONSES_ROLES = frozenset({"user", "assistant", "system", "developer"})
# The head goes in `instructions`; the tail is a `developer` message by default, the role the
# Responses API gives instructions that sit inside `input`.
OPENAI_RESPONSES_TAIL_ROLE = "developer"
OPENAI_RESPONSES_TAIL_ROLES = ("developer", "system", "user")

# `prompt_cache_options.mode`, plus "off": no breakpoint and no options (the older models).
OPENAI_CACHE_MODES = ("explicit", "implicit", "off")
# `prompt_cache_breakpoint.ttl` (the SDK's `PromptCacheBreakpoint`); None leaves it out, and
# the breakpoint inherits the request's TTL (30 minutes).
OPENAI_BREAKPOINT_TTLS = ("30m", "12h")
# Breakpoints go on system/developer, user and tool content, never on assistant content.
_CHAT_MARKABLE_ROLES = frozenset({"system", "developer", "user", "tool"})
_RESPONSES_MARKABLE_ROLES = frozenset({"system", "developer", "user"})
# Content parts that carry `prompt_cache_breakpoint` in the SDK's types.
_CHAT_MARKABLE_PARTS = frozenset({"text", "image_url", "input_audio", "file"})
_RESPONSES_MARKABLE_PARTS = frozenset({"input_text", "input_image", "input_file"})
# Responses items whose `output` is a string or a list of input parts.
_RESPONSES_OUTPUT_ITEMS = frozenset({"function_call_output"})
# GPT-5.6 and later accept `prompt_cache_options` and `prompt_cache_breakpoint`.
_FIRST_CACHE_VERSION = (5, 6)
# ASCII digits only: a version is never written in another script's digits.
_GPT_NAME = re.compile(r"gpt-([0-9]+)(?:\.([0-9]+))?(?![0-9])")


def openai_prompt_caching(model: str) -> bool:
    """Whether ``model`` takes ``prompt_cache_options`` and ``prompt_cache_breakpoint``.

    True for ``gpt-<major>[.<minor>]`` names (ASCII digits) from GPT-5.6 on, with any suffix
    (``-mini``, a date), behind a gateway's ``provider/`` prefix or in a fine-tune's ``ft:``
    name. Every other name (older models, ``o``-series, a deployment alias) is False: the
    adapters then send neither field, which every model accepts; pass ``cache="explicit"`` to
    override.
    """
    if not isinstance(model, str):
        raise TypeError(f"model: expected a string, got {type(model).__name__}")
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("ft:"):
        name = name[3:]
    found = _GPT_NAME.match(name)
    if found is None:
        return False
    version = (int(found.group(1)), int(found.group(2) or 0))
    return version >= _FIRST_CACHE_VERSION


def openai_chat(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    *,
    role: str = "system",
    tail_role: str | None = None,
    model: str | None = None,
    cache: str | None = None,
    cache_head: bool = False,
    ttl: str | None = None,
) -> list[Any]:
    """Return the ``messages`` list for Chat Completions: ``[head, *messages, tail]``.

    The head is a ``role`` message (``"system"``, or ``"developer"`` for the models that want
    it), the tail a ``tail_role`` message (``role`` by default; ``"user"`` for gateways that
    move instruction messages). When caching is on (``cache``, or by default
    :func:`openai_prompt_caching` of ``model``), a ``prompt_cache_breakpoint`` goes on the last
    content part of the conversation that can carry one (never assistant content, never the
    tail), and with ``cache_head`` on the head too. The list has no room for the request's
    ``prompt_cache_options``: use :func:`openai_chat_request` for the whole body.
    """
    request, _ = _chat(messages, context, role, tail_role, model, cache, cache_head, ttl)
    return request


def openai_chat_request(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    *,
    model: str,
    role: str = "system",
    tail_role: str | None = None,
    cache: str | None = None,
    cache_head: bool = False,
    ttl: str | None = None,
) -> dict[str, Any]:
    """Return ``{"model", "messages", "prompt_cache_options"}`` for
    ``client.chat.completions.create(**body)``.

    ``messages`` is :func:`openai_chat`'s list. ``prompt_cache_options`` is
    ``{"mode": cache}`` when caching is on (``"explicit"`` by default on the models
    :func:`openai_prompt_caching` recognises, so the request writes only its own breakpoints);
    with ``cache="off"`` (the default on other models) there is no such key.
    """
    if not isinstance(model, str):  # the body's `model`: None is not a model name
        raise TypeError(f"model: expected a string, got {type(model).__name__}")
    request, mode = _chat(messages, context, role, tail_role, model, cache, cache_head, ttl)
    body: dict[str, Any] = {"model": model, "messages": request}
    if mode != "off":
        body["prompt_cache_options"] = {"mode": mode}
    return body


def openai_responses(
    input: str | Sequence[Mapping[str, Any]],  # the Responses API calls it `input`
    context: RunContext | None,
    *,
    tail_role: str = OPENAI_RESPONSES_TAIL_ROLE,
    model: str | None = None,
    cache: str | None = None,
    cache_head: bool = False,
    ttl: str | None = None,
) -> dict[str, Any]:
    """Return ``{"instructions": head, "input": [*input, tail]}`` for the Responses API.

    The head becomes ``instructions`` (no key when there is no head) and the tail a
    ``tail_role`` message (``developer`` by default) after the last input item. A string
    ``input`` is the API's shorthand for one ``user`` message and becomes that message. Keep
    the request stateless (pass the whole conversation as ``input``): with
    ``previous_response_id`` or ``conversation`` the server would store each turn's tail.

    When caching is on (``cache``, or by default :func:`openai_prompt_caching` of ``model``) a
    ``prompt_cache_breakpoint`` goes on the last input part of the conversation that can carry
    one (a user, system or developer message, or a ``function_call_output``; never assistant
    output, never the tail), the body gets ``prompt_cache_options`` ``{"mode": cache}``, and
    ``model`` (when given) goes in the body. With ``cache_head`` the head travels as a marked
    ``developer`` message at the start of ``input`` instead of ``instructions``, a string
    field that cannot carry a breakpoint.
    """
    check_choice("tail_role", tail_role, OPENAI_RESPONSES_TAIL_ROLES)
    mode, marker = _cache_choice(model, cache, cache_head, ttl)
    items: Sequence[Mapping[str, Any]]
    if isinstance(input, str):
        items = [{"role": "user", "content": input}]
    else:
        items = _check_input_items(input)
    head, tail = context_texts(context)
    body: dict[str, Any] = {} if model is None else {"model": model}
    request: list[Any] = list(items)
    if marker is not None:
        found = _responses_breakpoint(items, marker)
        if found is not None:
            request[found[0]] = found[1]
    if head is not None:
        if marker is not None and cache_head:
            part = {"type": "input_text", "text": head, "prompt_cache_breakpoint": dict(marker)}
            request.insert(0, {"role": "developer", "content": [part]})
        else:
            body["instructions"] = head
    if tail is not None:
        request.append({"role": tail_role, "content": tail})
    body["input"] = request
    if mode != "off":
        body["prompt_cache_options"] = {"mode": mode}
    return body


def _chat(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    role: str,
    tail_role: str | None,
    model: str | None,
    cache: str | None,
    cache_head: bool,
    ttl: str | None,
) -> tuple[list[Any], str]:
    check_choice("role", role, OPENAI_CONTEXT_ROLES)
    if tail_role is None:
        tail_role = role
    check_choice("tail_role", tail_role, OPENAI_TAIL_ROLES)
    mode, marker = _cache_choice(model, cache, cache_head, ttl)
    request = splice(messages, context)  # checks the messages' shape and the context
    check_roles(messages, OPENAI_CHAT_ROLES, "messages", "OpenAI Chat")
    head, tail = context_texts(context)
    first = 0 if head is None else 1
    if head is not None:
        if marker is not None and cache_head:
            part = {"type": "text", "text": head, "prompt_cache_breakpoint": dict(marker)}
            request[0] = {"role": role, "content": [part]}
        elif role != "system":
            request[0] = {"role": role, "content": head}
    if tail is not None and tail_role != "system":
        request[-1] = {"role": tail_role, "content": tail}
    if marker is not None:
        found = _chat_breakpoint(messages, marker)
        if found is not None:
            request[first + found[0]] = found[1]
    return request, mode


def _cache_choice(
    model: str | None, cache: str | None, cache_head: bool, ttl: str | None
) -> tuple[str, dict[str, Any] | None]:
    """The request's cache mode and the breakpoint to place (None: place none)."""
    if model is not None and not isinstance(model, str):
        raise TypeError(f"model: expected a string or None, got {type(model).__name__}")
    if cache is None:
        cache = "explicit" if model is not None and openai_prompt_caching(model) else "off"
    check_choice("cache", cache, OPENAI_CACHE_MODES)
    if type(cache_head) is not bool:
        raise TypeError(f"cache_head: expected a bool, got {type(cache_head).__name__}")
    if ttl is not None:
        check_choice("ttl", ttl, OPENAI_BREAKPOINT_TTLS)
    if cache == "off":
        if ttl is not None or cache_head:
            option = "ttl" if ttl is not None else "cache_head"
            raise ValueError(
                f"{option}: there is no breakpoint to apply it to, since caching is off "
                f"(cache='off', or a model that does not take breakpoints: {model!r}); "
                f"pass cache='explicit' for a model from GPT-5.6 on"
            )
        return cache, None
    marker: dict[str, Any] = {"mode": "explicit"}  # the only breakpoint mode there is
    if ttl is not None:
        marker["ttl"] = ttl
    return cache, marker


def _marked_part(part: Mapping[str, Any], marker: Mapping[str, Any]) -> dict[str, Any]:
    return {**part, "prompt_cache_breakpoint": dict(marker)}


def _last_part(
    content: object,
    kinds: frozenset[str],
    text_kind: str,
    marker: Mapping[str, Any],
    where: str,
) -> list[Any] | bool | None:
    """The content, as a new list with its last markable part marked; True when a part the
    caller marked is reached first (it already ends a cached prefix); None when no part
    qualifies. A string becomes one text part (the API's own reading of a string). A part
    read whose ``type`` is not a string is a TypeError naming ``where[position].type``."""
    if isinstance(content, str):
        if not content.strip():
            return None
        return [{"type": text_kind, "text": content, "prompt_cache_breakpoint": dict(marker)}]
    if isinstance(content, bytes | bytearray) or not isinstance(content, Sequence):
        return None
    for position in range(len(content) - 1, -1, -1):
        part = content[position]
        if not isinstance(part, Mapping):
            continue
        if part.get("prompt_cache_breakpoint") is not None:
            return True
        kind = part.get("type")
        if "type" in part and not isinstance(kind, str):
            raise TypeError(
                f"{where}[{position}].type: expected a string, got {type(kind).__name__}"
            )
        if kind in kinds:
            text = part.get("text")
            if isinstance(text, str) and not text.strip():
                continue
            marked = list(content)
            marked[position] = _marked_part(part, marker)
            return marked
    return None


def _chat_breakpoint(
    messages: Sequence[Mapping[str, Any]], marker: Mapping[str, Any]
) -> tuple[int, dict[str, Any]] | None:
    """The index of the message the conversation breakpoint goes on, and its marked copy."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] not in _CHAT_MARKABLE_ROLES:
            continue  # assistant content cannot carry one: walk back past it
        content = _last_part(
            message.get("content"),
            _CHAT_MARKABLE_PARTS,
            "text",
            marker,
            f"messages[{index}].content",
        )
        if content is True:
            return None
        if isinstance(content, list):
            return index, {**message, "content": content}
    return None


def _responses_breakpoint(
    items: Sequence[Mapping[str, Any]], marker: Mapping[str, Any]
) -> tuple[int, dict[str, Any]] | None:
    """The index of the item the conversation breakpoint goes on, and its marked copy."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if "role" in item:
            if item["role"] not in _RESPONSES_MARKABLE_ROLES:
                continue
            key = "content"
        elif item["type"] in _RESPONSES_OUTPUT_ITEMS:  # a string: _check_input_items
            key = "output"
        else:
            continue  # function calls, reasoning, ...: the model's output
        content = _last_part(
            item.get(key), _RESPONSES_MARKABLE_PARTS, "input_text", marker, f"input[{index}].{key}"
        )
        if content is True:
            return None
        if isinstance(content, list):
            return index, {**item, key: content}
    return None


def _check_input_items(items: object) -> Sequence[Mapping[str, Any]]:
    if isinstance(items, bytes | bytearray) or not isinstance(items, Sequence):
        raise TypeError(
            f"input: expected a string or a sequence of input items, got {type(items).__name__}"
        )
    for index, item in enumerate(items):
        if type(item) is not dict and not isinstance(item, Mapping):
            raise TypeError(
                f"input[{index}]: expected an input item mapping, got {type(item).__name__}"
            )
        if "role" in item:
            role = item["role"]
            if not isinstance(role, str) or role not in OPENAI_RESPONSES_ROLES:
                bad_role(role, OPENAI_RESPONSES_ROLES, f"input[{index}]", "OpenAI Responses")
        elif "type" not in item:
            raise TypeError(
                f"input[{index}]: an input item needs a 'role' (a message) "
                f"or a 'type' (such as 'function_call_output')"
            )
        elif not isinstance(item["type"], str):
            raise TypeError(
                f"input[{index}].type: expected a string, got {type(item['type']).__name__}"
            )
    return items
