"""Request bodies for the official SDKs: where the head and the tail go for each provider.

Every adapter keeps the caller's conversation as it is: the messages in the result are the
caller's objects, in the caller's order, and the caller's lists and dicts are never mutated. The
only message that is ever rebuilt is the one Anthropic's ``cache_control`` marker goes on, and
that is a new dict. The reasons behind each placement are in ``docs/PLACEMENT.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from runcontext._core import RunContext
from runcontext._splice import check_messages

__all__ = [
    "ANTHROPIC_MAX_BREAKPOINTS",
    "anthropic_messages",
    "openai_chat",
    "openai_responses",
]

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

# Roles the Messages API accepts inside `messages` ("system" only on the models that allow it).
ANTHROPIC_ROLES = frozenset({"user", "assistant", "system"})
# `user` works on every model; `system` only on the models that accept a system turn there.
ANTHROPIC_TAIL_ROLES = ("user", "system")
# The Messages API rejects a request with more than four `cache_control` breakpoints in total
# (tools, system and messages together).
ANTHROPIC_MAX_BREAKPOINTS = 4
# Blocks the API refuses a `cache_control` marker on.
_UNMARKABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})


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
    _check_choice("role", role, OPENAI_CONTEXT_ROLES)
    _check_roles(check_messages(messages), OPENAI_CHAT_ROLES, "messages", "OpenAI Chat")
    head, tail = _texts(context)
    request: list[Any] = [] if head is None else [{"role": role, "content": head}]
    request.extend(messages)
    if tail is not None:
        request.append({"role": role, "content": tail})
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
    head, tail = _texts(context)
    body: dict[str, Any] = {} if head is None else {"instructions": head}
    request: list[Any] = list(items)
    if tail is not None:
        request.append({"role": OPENAI_RESPONSES_TAIL_ROLE, "content": tail})
    body["input"] = request
    return body


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    *,
    cache: bool = True,
    tail_role: str = "user",
    system: str | Sequence[Mapping[str, Any]] | None = None,
    reserved_breakpoints: int = 0,
) -> dict[str, Any]:
    """Return ``{"system": [...], "messages": [...]}`` for the Messages API.

    The head is the first ``system`` text block, before the caller's own ``system`` (a string or
    text blocks, passed through). The tail is a ``tail_role`` message with one text block after
    the conversation; when the conversation ends with an ``assistant`` prefill, the tail goes just
    before it so the prefill still continues.

    With ``cache=True`` a ``cache_control`` breakpoint goes on the last block of the last
    conversation message before the tail (the cached prefix then covers head and conversation)
    and another on the head block, as far as the budget of four allows once the caller's own
    breakpoints are counted: those in ``system`` and ``messages``, plus ``reserved_breakpoints``
    for any set where this function cannot see them (tools). The conversation breakpoint comes
    first; with three already used only it is added, with four none. The caller's breakpoints
    are never moved or removed.
    """
    _check_choice("tail_role", tail_role, ANTHROPIC_TAIL_ROLES)
    if type(reserved_breakpoints) is not int:
        raise TypeError(
            f"reserved_breakpoints: expected an int, got {type(reserved_breakpoints).__name__}"
        )
    if reserved_breakpoints < 0:
        raise ValueError(f"reserved_breakpoints: expected a count >= 0, got {reserved_breakpoints}")
    check_messages(messages)
    in_messages = _check_anthropic_messages(messages)
    system_blocks = _system_blocks(system)
    in_system = _count_breakpoints(system_blocks, "system")  # also checks each block's type
    used = in_messages + in_system + reserved_breakpoints
    if used > ANTHROPIC_MAX_BREAKPOINTS:
        raise ValueError(
            f"the request already has {used} cache_control breakpoints ({in_system} in system, "
            f"{in_messages} in messages, {reserved_breakpoints} reserved); the Messages API "
            f"accepts at most {ANTHROPIC_MAX_BREAKPOINTS}: remove some"
        )
    head, tail = _texts(context)

    # A final assistant message is a prefill the model continues: the tail goes before it.
    at = len(messages)
    if at and messages[-1]["role"] == "assistant":
        at -= 1
    if (
        tail is not None
        and tail_role == "system"
        and (at == 0 or messages[at - 1]["role"] != "user")
    ):
        where = "at the start" if at == 0 else f"after messages[{at - 1}], a non-user turn"
        raise ValueError(
            f"tail_role='system': a system turn must follow a user turn, but the tail would go "
            f"{where}; use tail_role='user'"
        )
    if not messages and tail is None:
        raise ValueError(
            "messages: the conversation is empty and the context has no tail; "
            "the Messages API needs at least one message"
        )

    request: list[Any] = list(messages)
    budget = ANTHROPIC_MAX_BREAKPOINTS - used
    if cache and at and budget:
        marked = _marked(messages[at - 1])
        if marked is not None:
            request[at - 1] = marked
            budget -= 1
    if tail is not None:
        request.insert(at, {"role": tail_role, "content": [{"type": "text", "text": tail}]})

    body: dict[str, Any] = {}
    if head is not None:
        head_block: dict[str, Any] = {"type": "text", "text": head}
        if cache and budget:
            head_block["cache_control"] = {"type": "ephemeral"}
        body["system"] = [head_block, *system_blocks]
    elif system is not None:
        body["system"] = system
    body["messages"] = request
    return body


def _check_choice(argument: str, value: object, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{argument}: expected a string, got {type(value).__name__}")
    if value not in choices:
        expected = " or ".join(repr(choice) for choice in choices)
        raise ValueError(f"{argument}: expected {expected}, got {value!r}")


def _texts(context: RunContext | None) -> tuple[str | None, str | None]:
    if context is None:
        return None, None
    if not isinstance(context, RunContext):
        raise TypeError(
            f"context: expected a runcontext.RunContext or None, got {type(context).__name__}"
        )
    return context.head_text, context.tail_text


def _check_roles(
    messages: Sequence[Mapping[str, Any]], roles: frozenset[str], argument: str, api: str
) -> None:
    try:  # one C-level pass in the common case; the slow scan only finds what to report
        if {message["role"] for message in messages} <= roles:
            return
    except TypeError:  # an unhashable role: the scan below names it
        pass
    for index, message in enumerate(messages):
        role = message["role"]
        if not isinstance(role, str) or role not in roles:
            _bad_role(role, roles, f"{argument}[{index}]", api)


def _bad_role(role: object, roles: frozenset[str], where: str, api: str) -> NoReturn:
    if not isinstance(role, str):
        raise TypeError(f"{where}.role: expected a string, got {type(role).__name__}")
    raise ValueError(
        f"{where}.role: {api} does not accept the role {role!r}; "
        f"expected one of {', '.join(sorted(roles))}"
    )


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
                _bad_role(role, OPENAI_RESPONSES_ROLES, f"input[{index}]", "OpenAI Responses")
        elif "type" not in item:
            raise TypeError(
                f"input[{index}]: an input item needs a 'role' (a message) "
                f"or a 'type' (such as 'function_call_output')"
            )
    return items


def _check_anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> int:
    """Check roles and content shapes; return the caller's ``cache_control`` breakpoints."""
    count = 0
    for index, message in enumerate(messages):
        role = message["role"]
        if not isinstance(role, str) or role not in ANTHROPIC_ROLES:
            _bad_role(role, ANTHROPIC_ROLES, f"messages[{index}]", "Anthropic Messages")
        if "content" not in message:
            raise TypeError(f"messages[{index}]: the message has no 'content' key")
        content = message["content"]
        if not isinstance(content, str):
            count += _count_breakpoints(content, f"messages[{index}].content")
    if messages and messages[0]["role"] != "user":
        first = messages[0]["role"]
        hint = "; put the system prompt in system= or in head sections" if first == "system" else ""
        raise ValueError(
            f"messages[0].role: a Messages API conversation starts with a 'user' turn, "
            f"got {first!r}{hint}"
        )
    return count


def _count_breakpoints(blocks: object, where: str) -> int:
    if isinstance(blocks, str | bytes | bytearray) or not isinstance(blocks, Sequence):
        raise TypeError(
            f"{where}: expected a string or a list of content blocks, got {type(blocks).__name__}"
        )
    count = 0
    for index, block in enumerate(blocks):
        if type(block) is not dict and not isinstance(block, Mapping):
            raise TypeError(
                f"{where}[{index}]: expected a content block mapping, got {type(block).__name__}"
            )
        if block.get("cache_control") is not None:
            count += 1
    return count


def _system_blocks(system: object) -> list[Any]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}]
    if isinstance(system, bytes | bytearray) or not isinstance(system, Sequence):
        raise TypeError(
            f"system: expected a string or a list of text blocks, got {type(system).__name__}"
        )
    return list(system)


def _marked(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return a copy of ``message`` whose last block carries ``cache_control``.

    ``None`` when no new breakpoint is needed or allowed: the block is already marked, the
    content is empty, or the last block is a thinking block the API refuses a marker on.
    """
    content = message["content"]
    marker = {"type": "ephemeral"}
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": marker}]}
    if not content:
        return None
    last = content[-1]
    if last.get("cache_control") is not None or last.get("type") in _UNMARKABLE_BLOCKS:
        return None
    return {**message, "content": [*content[:-1], {**last, "cache_control": marker}]}
