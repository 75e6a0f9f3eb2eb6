"""The loop splice: ``[head, *messages, tail]`` without touching the conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._checks import check_context, check_messages
from runcontext._core import RunContext

__all__ = ["splice", "spliced"]


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
