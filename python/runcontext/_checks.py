"""The argument checks every entry point shares: message lists and contexts.

A request's messages are checked here, once, for every entry point that takes them
(:func:`runcontext.splice`, the adapters, sessions and the loop), so the refusals read the
same everywhere: the argument, the index of the first bad message, what it needs.
docs/PLACEMENT.md, *Messages*, states the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._core import RunContext

__all__ = ["check_context", "check_message", "check_messages"]


def check_messages(
    messages: object, *, argument: str = "messages", items: bool = False, start: int = 0
) -> Sequence[Any]:
    """Return ``messages`` if it is a sequence of mappings that each have a ``role``.

    With ``items=True`` the rule is the transcript's (docs/TRANSCRIPT.md, ``message``): a
    mapping whose ``role`` is a string, or else whose ``type`` is a string (an OpenAI
    Responses item such as ``function_call_output``): transcripts and the loop record those. With
    ``start``, only message 0 and the messages from ``start`` on are looked at (a transcript
    checks what it records, so a run costs the new messages, not the conversation).
    Raises ``TypeError`` naming the argument and the index of the first bad message.
    """
    if isinstance(messages, str | bytes | bytearray) or not isinstance(messages, Sequence):
        raise TypeError(
            f"{argument}: expected a sequence of message mappings, got {type(messages).__name__}"
        )
    indices = range(len(messages)) if start <= 1 else [0, *range(start, len(messages))]
    for index in indices:
        check_message(messages[index], f"{argument}[{index}]", items=items)
    return messages


def check_message(message: object, where: str, *, items: bool = False) -> None:
    """Raise ``TypeError`` starting with ``where`` unless ``message`` is a message mapping, as
    :func:`check_messages` checks each one."""
    if type(message) is not dict and not isinstance(message, Mapping):
        raise TypeError(
            f"{where}: expected a message mapping with a 'role', got {type(message).__name__}"
        )
    if not items:
        if "role" not in message:
            raise TypeError(f"{where}: the message has no 'role' key")
        return
    role, kind = message.get("role"), message.get("type")
    if isinstance(role, str) or isinstance(kind, str):
        return
    if "role" not in message and "type" not in message:
        raise TypeError(
            f"{where}: the message has no 'role' key (or, for a Responses item, 'type')"
        )
    raise TypeError(
        f"{where}: a message needs a string 'role' (a chat message) or a string 'type' (a "
        f"Responses item), got 'role' {_shown(message, 'role')} and 'type' "
        f"{_shown(message, 'type')}"
    )


def _shown(message: Mapping[str, Any], key: str) -> str:
    return repr(message[key]) if key in message else "missing"


def check_context(context: object, *, optional: bool = True) -> RunContext | None:
    """Return ``context`` if it is a :class:`RunContext` (or ``None``, when ``optional``); else
    raise ``TypeError``. Every entry point that takes a context words the refusal this way."""
    if (context is None and optional) or isinstance(context, RunContext):
        return context
    expected = "a runcontext.RunContext or None" if optional else "a runcontext.RunContext"
    raise TypeError(f"context: expected {expected}, got {type(context).__name__}")
