"""The loop splice: ``[head, *messages, tail]`` without touching the conversation."""

from __future__ import annotations

# collections.abc re-exports these very classes from _collections_abc, which the interpreter
# has loaded at start-up; importing collections.abc would also import collections (and typing
# would import re): `import runcontext` stays at the core's cost (issue 13).
from _collections_abc import Mapping, Sequence

from runcontext._core import RunContext

TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from typing import Any

__all__ = ["check_context", "check_message", "check_messages", "splice", "spliced"]


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


def splice(messages: Sequence[Mapping[str, Any]], context: RunContext | None) -> list[Any]:
    """Return ``[head_message, *messages, tail_message]``, leaving out whichever is ``None``.

    The input is not mutated and every message in the result *is* the caller's object: the
    cost is one new list of references. ``context=None`` returns a new list of the same
    messages. Raises ``TypeError`` for messages that are not a sequence of mappings with a
    ``role`` (naming the index) and for a ``context`` that is not a ``RunContext`` or ``None``.
    """
    check_messages(messages)
    return spliced(messages, check_context(context))


def spliced(messages: Sequence[Mapping[str, Any]], context: RunContext | None) -> list[Any]:
    """:func:`splice` of messages and a context the caller has already checked (the run
    loop checks each message once, when it is new)."""
    if context is None:
        return list(messages)
    head, tail = context.head_message, context.tail_message
    request: list[Any] = [] if head is None else [head]
    request.extend(messages)
    if tail is not None:
        request.append(tail)
    return request
