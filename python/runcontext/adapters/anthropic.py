"""Anthropic Messages: the head in ``system``, the tail last, ``cache_control`` placed so the
cached prefix covers the head and the conversation (docs/PLACEMENT.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runcontext._checks import check_messages
from runcontext._core import MAX_DEPTH, RunContext
from runcontext.adapters._common import bad_role, check_choice, context_texts

__all__ = ["ANTHROPIC_MAX_BREAKPOINTS", "anthropic_messages"]

# Roles the Messages API accepts inside `messages` ("system" only on the models that allow it).
ANTHROPIC_ROLES = frozenset({"user", "assistant", "system"})
# `user` works on every model; `system` only on the models that accept a system turn there.
ANTHROPIC_TAIL_ROLES = ("user", "system")
# The Messages API rejects a request with more than four `cache_control` breakpoints in total:
# tools, system, messages, blocks nested in blocks, and the top-level `cache_control` parameter.
ANTHROPIC_MAX_BREAKPOINTS = 4
# Blocks the API refuses a `cache_control` marker on (so does a text block with no visible text).
_UNMARKABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})
# `cache_control.ttl` values, shortest first: a marker with a longer TTL must not come after one
# with a shorter TTL in the API's order (tools, system, messages); no ttl means "5m".
ANTHROPIC_TTLS = ("5m", "1h")
# Keys of a block whose value is free-form JSON (the tool arguments of `tool_use` and
# `server_tool_use`): a "cache_control" key in there is data, not a breakpoint.
_FREE_FORM_KEYS = frozenset({"input"})


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]],
    context: RunContext | None,
    *,
    cache: bool = True,
    tail_role: str = "user",
    system: str | Sequence[Mapping[str, Any]] | None = None,
    reserved_breakpoints: int = 0,
    ttl: str | None = None,
) -> dict[str, Any]:
    """Return ``{"system": [...], "messages": [...]}`` for the Messages API.

    The head is the first ``system`` text block, before the caller's own ``system`` (a string or
    text blocks, passed through). The tail is a ``tail_role`` message with one text block after
    the conversation; when the conversation ends with an ``assistant`` prefill, the tail goes just
    before it so the prefill still continues.

    With ``cache=True`` a ``cache_control`` breakpoint goes on the last block of the last
    conversation message before the tail (the cached prefix then covers head and conversation)
    and another on the head block, as far as the budget of four allows once the caller's own
    breakpoints are counted: those in ``system`` and ``messages`` (blocks nested in a
    ``tool_result`` or ``search_result`` included), plus ``reserved_breakpoints`` for any set
    where this function cannot see them (tool definitions, the top-level ``cache_control``
    parameter). The conversation breakpoint comes first; with three already used only it is
    added, with four none. A block that cannot carry a marker (thinking, or text with no visible
    text) is passed over for the block before it. The caller's breakpoints are never moved or
    removed.

    A ``system``-role message inside ``messages`` never carries the conversation breakpoint
    (the API refuses ``cache_control`` on a turn-scoped system message, and a prefix ending
    there is not reused): the scan passes over it. ``ttl`` (``"5m"`` or ``"1h"``) goes on the
    adapter's markers; no ``ttl`` is the API's default, five minutes. The API refuses a marker
    with a longer TTL after one with a shorter TTL, so a request whose markers would break that
    order (a ``"1h"`` marker of yours after the adapter's five-minute one, say) is a
    ``ValueError`` that names the ``ttl`` to pass. No top-level ``cache_control`` is ever sent.
    """
    check_choice("tail_role", tail_role, ANTHROPIC_TAIL_ROLES)
    if ttl is not None:
        check_choice("ttl", ttl, ANTHROPIC_TTLS)
    if type(reserved_breakpoints) is not int:
        raise TypeError(
            f"reserved_breakpoints: expected an int, got {type(reserved_breakpoints).__name__}"
        )
    if reserved_breakpoints < 0:
        raise ValueError(f"reserved_breakpoints: expected a count >= 0, got {reserved_breakpoints}")
    if type(cache) is not bool:
        raise TypeError(f"cache: expected a bool, got {type(cache).__name__}")
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
    head, tail = context_texts(context)

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
    found = _conversation_breakpoint(messages, at, ttl) if cache and budget else None
    if found is not None:
        request[found[0]] = found[1]
        budget -= 1
    head_marked = cache and bool(budget) and head is not None
    if (head_marked or found is not None) and in_messages + in_system:
        _check_ttl_order(system_blocks, messages, head_marked, found, ttl)
    if tail is not None:
        request.insert(at, {"role": tail_role, "content": [{"type": "text", "text": tail}]})

    body: dict[str, Any] = {}
    if head is not None:
        head_block: dict[str, Any] = {"type": "text", "text": head}
        if head_marked:
            head_block["cache_control"] = _marker(ttl)
        body["system"] = [head_block, *system_blocks]
    elif system is not None:
        body["system"] = system
    body["messages"] = request
    return body


def _check_anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> int:
    """Check roles and content shapes; return the caller's ``cache_control`` breakpoints."""
    count = 0
    for index, message in enumerate(messages):
        role = message["role"]
        if not isinstance(role, str) or role not in ANTHROPIC_ROLES:
            bad_role(role, ANTHROPIC_ROLES, f"messages[{index}]", "Anthropic Messages")
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
        # The placement reads a block's type; a type that is present is the API's string.
        if "type" in block and not isinstance(block["type"], str):
            raise TypeError(
                f"{where}[{index}].type: expected a string, got {type(block['type']).__name__}"
            )
        count += _breakpoints_in(block)
    return count


def _breakpoints_in(block: Mapping[str, Any]) -> int:
    """Count the markers on ``block`` and on every block nested inside it.

    Blocks nest, and the API counts a marker at any depth: a ``tool_result`` or
    ``search_result`` holds a ``content`` list of blocks, a ``document`` a ``source`` whose
    ``content`` is blocks, a ``web_fetch_tool_result`` a document, a ``tool_search_tool_result``
    ``tool_references``. Rather than follow each of those shapes (and miss the next one the API
    adds), walk every nested mapping and list, skipping only the free-form tool ``input``.
    """
    count = 0
    # Depth-bounded like canonical JSON, so a block that contains itself is refused rather
    # than walked forever.
    pending: list[tuple[Any, int]] = [(block, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise ValueError(
                f"a content block nests deeper than {MAX_DEPTH} levels (or contains itself)"
            )
        if isinstance(value, Mapping):
            if value.get("cache_control") is not None:
                count += 1
            children: Iterable[Any] = (
                item for key, item in value.items() if key not in _FREE_FORM_KEYS
            )
        else:  # a list or tuple
            children = value
        pending.extend(
            (item, depth + 1) for item in children if isinstance(item, Mapping | list | tuple)
        )
    return count


def _system_blocks(system: object) -> list[Any]:
    if system is None:
        return []
    if isinstance(system, str):  # the API refuses a text block with no visible text
        return [{"type": "text", "text": system}] if system.strip() else []
    if isinstance(system, bytes | bytearray) or not isinstance(system, Sequence):
        raise TypeError(
            f"system: expected a string or a list of text blocks, got {type(system).__name__}"
        )
    return list(system)


def _conversation_breakpoint(
    messages: Sequence[Mapping[str, Any]], at: int, ttl: str | None = None
) -> tuple[int, dict[str, Any]] | None:
    """Return the index of the message the conversation breakpoint goes on, and its marked copy.

    The breakpoint goes on the last block before ``at`` that can carry one, scanning back
    across blocks and then messages: the API refuses a marker on a thinking block and on text
    with no visible text (which string content ``""`` would become). ``None`` when a caller's
    marker is reached first (it already ends a cached prefix there) or no block qualifies. The
    copy is a new dict with a new content list; its other blocks are the caller's objects.
    """
    for index in range(at - 1, -1, -1):
        message = messages[index]
        if message["role"] == "system":
            continue  # a turn-scoped system message refuses a marker
        content = message["content"]
        if isinstance(content, str):
            if not content.strip():
                continue
            block = {"type": "text", "text": content, "cache_control": _marker(ttl)}
            return index, {**message, "content": [block]}
        for position in range(len(content) - 1, -1, -1):
            block = content[position]
            if block.get("cache_control") is not None:
                return None
            if _markable(block):
                marked = [*content]
                marked[position] = {**block, "cache_control": _marker(ttl)}
                return index, {**message, "content": marked}
    return None


def _marker(ttl: str | None = None) -> dict[str, Any]:
    # A new dict each time: the caller may edit one.
    return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}


def _check_ttl_order(
    system_blocks: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
    head_marked: bool,
    marked: tuple[int, Mapping[str, Any]] | None,
    ttl: str | None,
) -> None:
    """Refuse markers whose TTLs would not be longest-first in the API's order.

    ``marked`` is the conversation marker's message index and its marked copy: the caller's
    markers in that message are read in their place beside the adapter's.
    """
    ours = ttl or "5m"
    order: list[tuple[str, str]] = []  # (ttl, where), in the API's order
    if head_marked:
        order.append((ours, "the head's marker (system[0])"))
    for index, block in enumerate(system_blocks):
        order.extend((t, f"your marker in system[{index}]") for t, _ in _ttls_in(block))
    for index, message in enumerate(messages):
        content = message["content"]
        if marked is not None and index == marked[0]:
            # The marked copy holds the caller's markers (the same objects) and the adapter's.
            callers = (
                set()
                if isinstance(content, str)
                else {id(m) for block in content for _, m in _ttls_in(block)}
            )
            for block in marked[1]["content"]:
                for t, marker in _ttls_in(block):
                    if id(marker) in callers:
                        order.append((t, f"your marker in messages[{index}]"))
                    else:
                        order.append((t, f"the conversation marker (messages[{index}])"))
        elif not isinstance(content, str):
            for block in content:
                order.extend((t, f"your marker in messages[{index}]") for t, _ in _ttls_in(block))
    shortest = order[0]
    for entry in order[1:]:
        if ANTHROPIC_TTLS.index(entry[0]) > ANTHROPIC_TTLS.index(shortest[0]):
            fix = f"ttl={shortest[0]!r}" if entry[1].startswith("the ") else f"ttl={entry[0]!r}"
            raise ValueError(
                f"cache_control TTLs: {entry[1]} has ttl {entry[0]!r} after {shortest[1]} with "
                f"ttl {shortest[0]!r}; the Messages API needs longer TTLs first: pass {fix} "
                f"to the adapter, or change your markers' ttl"
            )
        if ANTHROPIC_TTLS.index(entry[0]) < ANTHROPIC_TTLS.index(shortest[0]):
            shortest = entry


def _ttls_in(block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every marker on ``block`` and the blocks nested in it, with its TTL, in document order."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    pending: list[Any] = [block]
    while pending:  # depth already bounded by _breakpoints_in, which saw every block first
        value = pending.pop()
        if isinstance(value, Mapping):
            marker = value.get("cache_control")
            if isinstance(marker, Mapping):
                found.append(("1h" if marker.get("ttl") == "1h" else "5m", marker))
            children = [item for key, item in value.items() if key not in _FREE_FORM_KEYS]
        else:
            children = list(value)
        pending.extend(
            item for item in reversed(children) if isinstance(item, Mapping | list | tuple)
        )
    return found


def _markable(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")  # a string: _count_breakpoints refused any other type
    if isinstance(kind, str) and kind in _UNMARKABLE_BLOCKS:
        return False
    text = block.get("text")
    return kind != "text" or not isinstance(text, str) or bool(text.strip())
