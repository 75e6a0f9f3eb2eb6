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

__all__ = ["check_context", "check_messages", "splice"]


def check_messages(
    messages: object, *, argument: str = "messages", items: bool = False, start: int = 0
) -> Sequence[Any]:
    """Return ``messages`` if it is a sequence of mappings that each have a ``role``.

    With ``items=True`` a mapping with a ``type`` instead (an OpenAI Responses item such as
    ``function_call_output``) is accepted too: transcripts and the loop record those. With
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
        message = messages[index]
        if type(message) is not dict and not isinstance(message, Mapping):
            raise TypeError(
                f"{argument}[{index}]: expected a message mapping with a 'role', "
                f"got {type(message).__name__}"
            )
        if "role" not in message and not (items and "type" in message):
            wanted = "'role' key (or, for a Responses item, 'type')" if items else "'role' key"
            raise TypeError(f"{argument}[{index}]: the message has no {wanted}")
    return messages


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
    context = check_context(context)
    if context is None:
        return list(messages)
    head, tail = context.head_message, context.tail_message
    request: list[Any] = [] if head is None else [head]
    request.extend(messages)
    if tail is not None:
        request.append(tail)
    return request
