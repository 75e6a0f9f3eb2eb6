"""OpenAI Chat Completions and Responses: head first, tail last; the prefix cache is automatic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._core import RunContext
from runcontext._splice import splice
from runcontext.adapters._common import bad_role, check_choice, check_roles, context_texts

__all__ = ["openai_chat", "openai_responses"]

# Roles Chat Completions accepts in `messages` ("function" is deprecated but still accepted).
OPENAI_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# The head and the tail are instructions: `system`, or `developer` for the models that want it.
OPENAI_CONTEXT_ROLES = ("system", "developer")

# Roles of message items in a Responses `input`; other items (function_call, reasoning, ...)
# carry a `type` instead of a `role` and pass through untouched.
OPENAI_RESPONSES_ROLES = frozenset({"user", "assistant", "system", "developer"})
# The head goes in `instructions`; the tail is a `developer` message, the role the Responses API
# gives instructions that sit inside `input`.
OPENAI_RESPONSES_TAIL_ROLE = "developer"


def openai_chat(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    *,
    role: str = "system",
) -> list[Any]:
    """Return the ``messages`` list for Chat Completions: ``[head, *messages, tail]``.

    The head and the tail are ``role`` messages (``"system"``, or ``"developer"`` for the models
    that want it). The head at index 0 and the conversation after it are the same bytes every
    turn, so OpenAI's automatic prefix cache keeps hitting; only the tail changes.
    """
    check_choice("role", role, OPENAI_CONTEXT_ROLES)
    request = splice(messages, context)  # checks the messages' shape and the context
    check_roles(messages, OPENAI_CHAT_ROLES, "messages", "OpenAI Chat")
    if role != "system" and context is not None:  # splice's head and tail, under `role`
        if context.head_text is not None:
            request[0] = {"role": role, "content": context.head_text}
        if context.tail_text is not None:
            request[-1] = {"role": role, "content": context.tail_text}
    return request


def openai_responses(
    input: str | Sequence[Mapping[str, Any]],  # the Responses API calls it `input`
    context: RunContext | None,
) -> dict[str, Any]:
    """Return ``{"instructions": head, "input": [*input, tail]}`` for the Responses API.

    The head becomes ``instructions`` (no key when there is no head) and the tail a ``developer``
    message after the last input item. A string ``input`` is the API's shorthand for one
    ``user`` message and becomes that message. Keep the request stateless (pass the whole
    conversation as ``input``): with ``previous_response_id`` or ``conversation`` the server
    would store each turn's tail in the history.
    """
    items: Sequence[Mapping[str, Any]]
    if isinstance(input, str):
        items = [{"role": "user", "content": input}]
    else:
        items = _check_input_items(input)
    head, tail = context_texts(context)
    body: dict[str, Any] = {} if head is None else {"instructions": head}
    request: list[Any] = list(items)
    if tail is not None:
        request.append({"role": OPENAI_RESPONSES_TAIL_ROLE, "content": tail})
    body["input"] = request
    return body


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
    return items
