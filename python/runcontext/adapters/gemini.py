"""Google Gemini (the ``google-genai`` SDK): the head as ``system_instruction``, the
conversation as ``contents``, the tail last (docs/PLACEMENT.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._core import RunContext
from runcontext.adapters._common import bad_role, context_texts

__all__ = ["gemini_contents"]

# The roles a `Content` may have ("Must be either 'user' or 'model'", the SDK's `Content.role`).
GEMINI_ROLES = frozenset({"user", "model"})
# The tail is a `user` content: the API has no system turn inside `contents`.
GEMINI_TAIL_ROLE = "user"


def gemini_contents(
    contents: Sequence[Mapping[str, Any] | Any],
    context: RunContext | None,
    *,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return ``{"contents": [...], "config": {...}}`` for
    ``client.models.generate_content(model=..., **body)``.

    The head is the first part of ``config["system_instruction"]``, before your own system
    instruction (a string in ``config``); the conversation is ``contents``, your ``Content``
    objects or dicts by identity and in order; the tail is a ``user`` content with one text
    part after them, in this request only. ``config`` is otherwise passed through (a new
    dict). With ``config["cached_content"]`` (an explicit cache) the head is not added: the
    API takes the system instruction from the cache, so create the cache with
    ``system_instruction=context.head_text``.
    """
    request = _check_contents(contents)
    head, tail = context_texts(context)
    body_config = _check_config(config)
    if head is not None and "cached_content" not in body_config:
        parts: list[Any] = [{"text": head}]
        own = body_config.get("system_instruction")
        if own is not None:
            if not isinstance(own, str):
                raise TypeError(
                    f"config['system_instruction']: expected a string to follow the head, "
                    f"got {type(own).__name__}; put the text in head sections or pass a string"
                )
            if own.strip():
                parts.append({"text": own})
        body_config["system_instruction"] = {"parts": parts}
    if tail is not None:
        request.append({"role": GEMINI_TAIL_ROLE, "parts": [{"text": tail}]})
    if not request:
        raise ValueError(
            "contents: the conversation is empty and the context has no tail; "
            "generate_content needs at least one content"
        )
    body: dict[str, Any] = {"contents": request}
    if body_config:
        body["config"] = body_config
    return body


def _check_contents(contents: object) -> list[Any]:
    if isinstance(contents, str | bytes | bytearray) or not isinstance(contents, Sequence):
        raise TypeError(
            f"contents: expected a sequence of Content objects or dicts, "
            f"got {type(contents).__name__}"
        )
    for index, content in enumerate(contents):
        if isinstance(content, Mapping):
            if "role" not in content:
                raise TypeError(
                    f"contents[{index}]: the content has no 'role' key; "
                    f"give each turn its role, 'user' or 'model'"
                )
            role = content["role"]
        else:
            role = getattr(content, "role", None)
            if not hasattr(content, "parts"):
                raise TypeError(
                    f"contents[{index}]: expected a Content object or dict, "
                    f"got {type(content).__name__}"
                )
        if not isinstance(role, str) or role not in GEMINI_ROLES:
            bad_role(role, GEMINI_ROLES, f"contents[{index}]", "Gemini")
    return list(contents)


def _check_config(config: object) -> dict[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise TypeError(
            f"config: expected a mapping (a GenerateContentConfigDict) or None, "
            f"got {type(config).__name__}"
        )
    return dict(config)
