"""The message to append and record, from an SDK's response.

A model's reply has to go back into the conversation (and into a transcript) as the message
the API takes as input. The SDKs' response objects are not that: ``model_dump()`` of an
OpenAI chat message carries ``refusal``, ``audio``, ``function_call`` and ``annotations`` as
nulls, an Anthropic text block a null ``citations``. These functions return the input form,
plain JSON values with the null members left out, from an SDK object or its dict:

- :func:`openai_chat_reply` (a ``ChatCompletion``) → one ``assistant`` message;
- :func:`openai_responses_reply` (a Responses ``Response``) → the list of output items,
  which the Responses API takes back as input items;
- :func:`anthropic_reply` (an Anthropic ``Message``) → one ``assistant`` message.

Null members are left out of each message and of each content block or tool call, never
inside a tool call's arguments (``input``, ``arguments``): those are the model's data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["anthropic_reply", "openai_chat_reply", "openai_responses_reply"]


def plain(value: Any, argument: str) -> dict[str, Any]:
    """An SDK model (pydantic, with ``model_dump``) or a mapping, as a dict of JSON values."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", warnings=False)
        if isinstance(dumped, dict):
            return dumped
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(
        f"{argument}: expected an SDK response object or its dict, got {type(value).__name__}"
    )


def without_nulls(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if item is not None}


def openai_chat_reply(completion: Any, *, choice: int = 0) -> dict[str, Any]:
    """The ``assistant`` message of a Chat Completions response, as the API takes it back.

    ``{"role": "assistant", "content": ...}`` plus ``tool_calls`` when the model called
    tools and ``refusal`` when it refused; ``content`` is left out when it is null (a reply
    that only calls tools), and so is every other null member.
    """
    body = plain(completion, "completion")
    choices = body.get("choices") or []
    if not 0 <= choice < len(choices):
        raise ValueError(f"choice: the completion has {len(choices)} choices, asked for {choice}")
    message = choices[choice].get("message")
    if not isinstance(message, Mapping):
        raise TypeError(f"completion.choices[{choice}].message: expected a message object")
    reply: dict[str, Any] = {"role": message.get("role") or "assistant"}
    if message.get("content") is not None:
        reply["content"] = message["content"]
    if message.get("refusal") is not None:
        reply["refusal"] = message["refusal"]
    calls = message.get("tool_calls")
    if calls:
        reply["tool_calls"] = [_tool_call(call) for call in calls]
    audio = message.get("audio")
    if isinstance(audio, Mapping) and audio.get("id") is not None:
        reply["audio"] = {"id": audio["id"]}  # the API takes a previous audio reply by id
    if "content" not in reply and "tool_calls" not in reply and "refusal" not in reply:
        reply["content"] = ""  # an empty reply is still a message the API accepts back
    return reply


def _tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    shaped = without_nulls(call)
    for key in ("function", "custom"):
        inner = shaped.get(key)
        if isinstance(inner, Mapping):
            shaped[key] = without_nulls(inner)
    return shaped


def openai_responses_reply(response: Any) -> list[dict[str, Any]]:
    """The output items of a Responses API response, to append to the next request's
    ``input`` (messages, ``function_call``, ``reasoning``, …), with null members left out of
    each item and of each content part."""
    body = plain(response, "response")
    output = body.get("output")
    if not isinstance(output, list):
        raise TypeError("response.output: expected a list of output items")
    return [_item(item) for item in output]


def _item(item: Mapping[str, Any]) -> dict[str, Any]:
    shaped = without_nulls(item)
    for key in ("content", "summary"):
        parts = shaped.get(key)
        if isinstance(parts, list):
            shaped[key] = [
                without_nulls(part) if isinstance(part, Mapping) else part for part in parts
            ]
    return shaped


def anthropic_reply(message: Any) -> dict[str, Any]:
    """The ``assistant`` message of an Anthropic Messages response, as the API takes it back:
    ``{"role": "assistant", "content": [blocks]}``, each block without its null members."""
    body = plain(message, "message")
    content = body.get("content")
    if not isinstance(content, list):
        raise TypeError("message.content: expected a list of content blocks")
    return {
        "role": body.get("role") or "assistant",
        "content": [without_nulls(block) for block in content],
    }
