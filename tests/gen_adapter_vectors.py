"""Generate docs/vectors/adapters.json from the Python request-body adapters.

Run from the repository root::

    python tests/gen_adapter_vectors.py

Each case gives an adapter's arguments (the conversation, RunContext arguments or ``null``,
the keyword options under their Python names) and the body the Python adapter in
``runcontext.adapters`` returns, or the class of its refusal and the place it names. The
adapters are request-shaping policy (docs/PLACEMENT.md), not a format rule of the core, so
the Python adapters are the reference here; the JavaScript package's adapters
(``js/src/adapters/``) must build the same bodies, byte for byte (docs/JAVASCRIPT.md). Each
case states the outcome it was built for, and the generator fails if the adapter gives
another. The output is deterministic; ``tests/test_adapter_vectors.py`` checks that the
committed file is exactly what this script writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runcontext import RunContext
from runcontext.adapters import (
    anthropic_messages,
    openai_chat,
    openai_chat_request,
    openai_prompt_caching,
    openai_responses,
)

VECTORS_PATH = Path(__file__).resolve().parent.parent / "docs" / "vectors" / "adapters.json"

ADAPTERS: dict[str, Any] = {
    "openai_chat": openai_chat,
    "openai_chat_request": openai_chat_request,
    "openai_responses": openai_responses,
    "anthropic_messages": anthropic_messages,
}

DESCRIPTION = (
    "Request bodies of runcontext's adapters (docs/PLACEMENT.md), written by the Python "
    "adapters in runcontext.adapters. Each case names an 'adapter' (openai_chat, "
    "openai_chat_request, openai_responses, anthropic_messages, or openai_prompt_caching) and "
    "gives its first argument as 'input' (the messages, the Responses input, or the model "
    "name), 'context' (RunContext keyword arguments as in runcontext-v1.json, or null for no "
    "context) and 'options' (keyword options, by their Python names). 'expect' is the body "
    "the adapter returns, members in the order the adapter writes them; 'error' is a refusal: "
    "'type' (TypeError or ValueError) and 'where', the text before the first ': ' of the "
    "message (an argument or a place such as messages[2].role); 'message' is Python's wording "
    "and is not part of the contract."
)

SYSTEM = {"role": "system", "content": "You are a careful agent."}
USER = {"role": "user", "content": "Fix the failing test."}
ASSISTANT = {"role": "assistant", "content": "Looking at it."}
CONTEXT: dict[str, Any] = {
    "head_sections": [["AGENTS.md", "Use tabs. Run make test before committing."]],
    "facts": [["date", "2026-12-06"], ["branch", "main"]],
    "tail_sections": [["todo", "- fix the test"]],
}
HEAD_ONLY: dict[str, Any] = {"head_sections": [["AGENTS.md", "Use tabs."]]}
TAIL_ONLY: dict[str, Any] = {"facts": [["date", "2026-12-06"]]}
TOOL_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    ],
}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"}
NEW = "gpt-5.6"
OLD = "gpt-4.1"


def case(
    name: str,
    description: str,
    adapter: str,
    input: Any,
    context: dict[str, Any] | None = CONTEXT,
    error: tuple[str, str] | None = None,
    **options: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "adapter": adapter,
        "input": input,
        "context": context,
        "options": options,
        "_want": error,
    }


def caching(name: str, model: Any, description: str, error: tuple[str, str] | None = None) -> Any:
    return {
        "name": name,
        "description": description,
        "adapter": "openai_prompt_caching",
        "input": model,
        "context": None,
        "options": {},
        "_want": error,
    }


def thinking(text: str = "hm") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "sig"}


def marked(text: str, ttl: str | None = None) -> dict[str, Any]:
    marker = {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}
    return {"type": "text", "text": text, "cache_control": marker}


def cases() -> list[dict[str, Any]]:
    conversation = [SYSTEM, USER, ASSISTANT]
    ant = [USER, ASSISTANT, {"role": "user", "content": "And the docs."}]
    return [
        # --- the per-model policy ---------------------------------------------------------
        caching("gpt-5.6", NEW, "the first model that takes breakpoints"),
        caching("gpt-5.5", "gpt-5.5", "one minor version before"),
        caching("gpt-5", "gpt-5", "no minor version: 5.0"),
        caching("gpt-6-luna", "gpt-6-luna", "a later major version with a suffix"),
        caching("gpt-5.10-mini", "gpt-5.10-mini", "minor 10 is after 6 (numbers, not text)"),
        caching("gpt-56", "gpt-56", "major 56"),
        caching("gateway-prefix", "openrouter/openai/GPT-5.6", "a gateway's prefix, any case"),
        caching("fine-tune", "ft:gpt-5.6:acme::abc", "a fine-tune's name"),
        caching("gpt-4.1", OLD, "an older model"),
        caching("o-series", "o3", "not a gpt-<major> name"),
        caching("alias", "prod-chat", "a deployment alias"),
        caching("other-digits", "gpt-\u0665.\u0666", "a version is ASCII digits only"),
        caching("other-minor-digits", "gpt-5.\u0666", "the minor in other digits: gpt-5, a suffix"),
        caching("not-a-string", 5, "a model that is not a string", ("TypeError", "model")),
        # --- openai_chat --------------------------------------------------------------------
        case(
            "chat-no-context",
            "no context: the messages as they are",
            "openai_chat",
            conversation,
            None,
        ),
        case(
            "chat-head-tail",
            "head first, tail last, both system; an older model: no breakpoint",
            "openai_chat",
            conversation,
            model=OLD,
        ),
        case(
            "chat-developer",
            "role='developer': head and tail",
            "openai_chat",
            conversation,
            role="developer",
        ),
        case(
            "chat-tail-user",
            "tail_role='user' for gateways",
            "openai_chat",
            conversation,
            tail_role="user",
        ),
        case("chat-head-only", "a head and no tail", "openai_chat", [USER], HEAD_ONLY, model=NEW),
        case(
            "chat-tail-only",
            "a tail and no head: the breakpoint index has no head offset",
            "openai_chat",
            [USER, ASSISTANT],
            TAIL_ONLY,
            model=NEW,
        ),
        case(
            "chat-breakpoint",
            "GPT-5.6: the last user message's string becomes a marked text part, "
            "walking back past the assistant reply",
            "openai_chat",
            conversation,
            model=NEW,
        ),
        case(
            "chat-breakpoint-tool",
            "the breakpoint goes on the tool result",
            "openai_chat",
            [SYSTEM, USER, TOOL_CALL, TOOL_RESULT],
            model=NEW,
        ),
        case(
            "chat-breakpoint-parts",
            "the last markable part; blank text, and a part type that "
            "takes no breakpoint, passed over",
            "openai_chat",
            [
                SYSTEM,
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "see"},
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                        {"type": "text", "text": " \n"},
                        {"type": "refusal", "refusal": "no"},
                        "not a part",
                    ],
                },
            ],
            model=NEW,
        ),
        case(
            "chat-breakpoint-blank",
            "Python's blank: U+001C and U+0085 are whitespace, so the "
            "message is passed over; U+FEFF is not, so that one is marked",
            "openai_chat",
            [{"role": "user", "content": "\ufeff"}, {"role": "user", "content": "\x1c\x85 \u3000"}],
            model=NEW,
        ),
        case(
            "chat-breakpoint-yours",
            "a part you marked stops the walk: nothing added",
            "openai_chat",
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "a",
                            "prompt_cache_breakpoint": {"mode": "explicit"},
                        }
                    ],
                },
                {"role": "assistant", "content": "b"},
            ],
            model=NEW,
        ),
        case(
            "chat-breakpoint-none",
            "no message that takes a breakpoint",
            "openai_chat",
            [{"role": "assistant", "content": "hi"}, {"role": "user", "content": 5}],
            model=NEW,
        ),
        case(
            "chat-cache-head",
            "cache_head: the head becomes one marked text part",
            "openai_chat",
            conversation,
            model=NEW,
            cache_head=True,
        ),
        case(
            "chat-ttl",
            "ttl='12h' on the breakpoints",
            "openai_chat",
            conversation,
            model=NEW,
            cache_head=True,
            ttl="12h",
        ),
        case(
            "chat-explicit-override",
            "cache='explicit' on a name the policy does not know",
            "openai_chat",
            conversation,
            model="prod-chat",
            cache="explicit",
        ),
        case(
            "chat-explicit-no-model",
            "cache='explicit' without a model",
            "openai_chat",
            conversation,
            cache="explicit",
        ),
        case(
            "chat-off",
            "cache='off' on GPT-5.6",
            "openai_chat",
            conversation,
            model=NEW,
            cache="off",
        ),
        case("chat-empty", "an empty conversation", "openai_chat", [], model=NEW),
        case(
            "chat-request",
            "the whole body: model, messages, prompt_cache_options",
            "openai_chat_request",
            conversation,
            model=NEW,
        ),
        case(
            "chat-request-implicit",
            "cache='implicit': OpenAI's managed breakpoint kept",
            "openai_chat_request",
            conversation,
            model=NEW,
            cache="implicit",
        ),
        case(
            "chat-request-old",
            "an older model: no prompt_cache_options",
            "openai_chat_request",
            conversation,
            model=OLD,
        ),
        case(
            "chat-ttl-off",
            "ttl with caching off",
            "openai_chat",
            conversation,
            error=("ValueError", "ttl"),
            model=OLD,
            ttl="12h",
        ),
        case(
            "chat-cache-head-off",
            "cache_head with caching off",
            "openai_chat",
            conversation,
            error=("ValueError", "cache_head"),
            cache_head=True,
        ),
        case(
            "chat-bad-role",
            "role must be system or developer",
            "openai_chat",
            conversation,
            error=("ValueError", "role"),
            role="user",
        ),
        case(
            "chat-role-type",
            "role must be a string",
            "openai_chat",
            conversation,
            error=("TypeError", "role"),
            role=1,
        ),
        case(
            "chat-bad-tail-role",
            "tail_role must be system, developer or user",
            "openai_chat",
            conversation,
            error=("ValueError", "tail_role"),
            tail_role="assistant",
        ),
        case(
            "chat-bad-cache",
            "cache must be explicit, implicit or off",
            "openai_chat",
            conversation,
            error=("ValueError", "cache"),
            cache="always",
        ),
        case(
            "chat-cache-head-type",
            "cache_head must be a bool",
            "openai_chat",
            conversation,
            error=("TypeError", "cache_head"),
            model=NEW,
            cache_head="yes",
        ),
        case(
            "chat-bad-ttl",
            "ttl must be 30m or 12h",
            "openai_chat",
            conversation,
            error=("ValueError", "ttl"),
            model=NEW,
            ttl="1h",
        ),
        case(
            "chat-model-type",
            "model must be a string",
            "openai_chat",
            conversation,
            error=("TypeError", "model"),
            model=5,
        ),
        case(
            "chat-messages-type",
            "messages must be a list",
            "openai_chat",
            {"role": "user"},
            error=("TypeError", "messages"),
        ),
        case(
            "chat-message-type",
            "each message an object",
            "openai_chat",
            [USER, "hi"],
            error=("TypeError", "messages[1]"),
        ),
        case(
            "chat-no-role",
            "each message has a role",
            "openai_chat",
            [USER, {"content": "x"}],
            error=("TypeError", "messages[1]"),
        ),
        case(
            "chat-unknown-role",
            "a role Chat Completions does not accept",
            "openai_chat",
            [USER, {"role": "model", "content": "x"}],
            error=("ValueError", "messages[1].role"),
        ),
        case(
            "chat-role-not-string",
            "a role that is not a string",
            "openai_chat",
            [USER, {"role": ["user"], "content": "x"}],
            error=("TypeError", "messages[1].role"),
        ),
        case(
            "chat-part-type-list",
            "a part's type, read for the breakpoint, that is not a string",
            "openai_chat",
            [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": ["text"]}]}],
            error=("TypeError", "messages[0].content[1].type"),
            model=NEW,
        ),
        case(
            "chat-part-type-unread",
            "caching off: the parts are not read, the message passes as it is",
            "openai_chat",
            [{"role": "user", "content": [{"type": {"kind": "text"}, "text": "a"}]}],
            model=OLD,
        ),
        case(
            "chat-request-model-none",
            "the request body needs a model name",
            "openai_chat_request",
            [USER],
            error=("TypeError", "model"),
            model=None,
        ),
        case(
            "chat-request-model-type",
            "the request body's model must be a string",
            "openai_chat_request",
            [USER],
            error=("TypeError", "model"),
            model=5,
        ),
        # --- openai_responses -----------------------------------------------------------------
        case(
            "responses-string",
            "a string input is one user message; head in instructions, tail a developer message",
            "openai_responses",
            "Fix it.",
        ),
        case(
            "responses-no-context",
            "no context, no model: the items as they are",
            "openai_responses",
            [USER, ASSISTANT],
            None,
        ),
        case(
            "responses-tail-user", "tail_role='user'", "openai_responses", [USER], tail_role="user"
        ),
        case(
            "responses-tail-only",
            "no head: no instructions member",
            "openai_responses",
            [USER],
            TAIL_ONLY,
            model=NEW,
        ),
        case(
            "responses-breakpoint",
            "GPT-5.6: model and prompt_cache_options in the body, the "
            "breakpoint on the last user message",
            "openai_responses",
            [SYSTEM, USER, ASSISTANT],
            model=NEW,
        ),
        case(
            "responses-function-output",
            "the breakpoint on a function_call_output's string output, past reasoning",
            "openai_responses",
            [
                USER,
                {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
                {"type": "reasoning", "id": "r1", "summary": []},
            ],
            model=NEW,
        ),
        case(
            "responses-parts",
            "the last input part; output_text of an assistant passed over",
            "openai_responses",
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "a"},
                        {"type": "input_image", "image_url": "https://x/y.png"},
                    ],
                },
                {"role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
            ],
            model=NEW,
        ),
        case(
            "responses-cache-head",
            "cache_head: the head as a marked developer message first",
            "openai_responses",
            [USER],
            model=NEW,
            cache_head=True,
            ttl="30m",
        ),
        case(
            "responses-implicit",
            "cache='implicit'",
            "openai_responses",
            [USER],
            model=NEW,
            cache="implicit",
        ),
        case(
            "responses-input-type",
            "input must be a string or a list",
            "openai_responses",
            5,
            error=("TypeError", "input"),
        ),
        case(
            "responses-item-type",
            "each item an object",
            "openai_responses",
            [USER, 3],
            error=("TypeError", "input[1]"),
        ),
        case(
            "responses-item-role",
            "a role Responses does not accept",
            "openai_responses",
            [USER, {"role": "tool", "content": "x"}],
            error=("ValueError", "input[1].role"),
        ),
        case(
            "responses-item-shape",
            "an item needs a role or a type",
            "openai_responses",
            [USER, {"content": "x"}],
            error=("TypeError", "input[1]"),
        ),
        case(
            "responses-item-type-list",
            "an item without a role has a string type",
            "openai_responses",
            [USER, {"type": ["function_call_output"], "call_id": "c1", "output": "x"}],
            error=("TypeError", "input[1].type"),
        ),
        case(
            "responses-part-type-object",
            "a part's type, read for the breakpoint, that is not a string",
            "openai_responses",
            [{"role": "user", "content": [{"type": {"t": 1}, "text": "a"}]}],
            error=("TypeError", "input[0].content[0].type"),
            model=NEW,
        ),
        case(
            "responses-output-part-type-null",
            "a function_call_output part whose type is null",
            "openai_responses",
            [{"type": "function_call_output", "call_id": "c1", "output": [{"type": None}]}],
            error=("TypeError", "input[0].output[0].type"),
            model=NEW,
        ),
        case(
            "responses-bad-tail-role",
            "tail_role must be developer, system or user",
            "openai_responses",
            [USER],
            error=("ValueError", "tail_role"),
            tail_role="assistant",
        ),
        case(
            "responses-ttl-off",
            "ttl with caching off",
            "openai_responses",
            [USER],
            error=("ValueError", "ttl"),
            ttl="30m",
        ),
        # --- anthropic_messages -----------------------------------------------------------------
        case(
            "anthropic-basic",
            "head in system[0], tail a final user message; markers on the "
            "last conversation block and on the head",
            "anthropic_messages",
            ant,
        ),
        case(
            "anthropic-no-cache", "cache=False: no markers", "anthropic_messages", ant, cache=False
        ),
        case(
            "anthropic-no-context",
            "no context: markers on the conversation only, no system",
            "anthropic_messages",
            ant,
            None,
        ),
        case("anthropic-head-only", "a head and no tail", "anthropic_messages", ant, HEAD_ONLY),
        case(
            "anthropic-prefill",
            "an assistant prefill stays last; the tail and the breakpoint go before it",
            "anthropic_messages",
            [USER, {"role": "assistant", "content": "Sure:"}],
        ),
        case(
            "anthropic-tail-system",
            "tail_role='system' after a user turn",
            "anthropic_messages",
            ant,
            tail_role="system",
        ),
        case(
            "anthropic-system-string",
            "your system string after the head",
            "anthropic_messages",
            ant,
            system="Be brief.",
        ),
        case(
            "anthropic-system-blank",
            "a blank system string adds no block",
            "anthropic_messages",
            ant,
            system=" \n",
        ),
        case(
            "anthropic-system-blocks",
            "your system blocks after the head, one marked (counted)",
            "anthropic_messages",
            ant,
            system=[{"type": "text", "text": "A"}, marked("B")],
        ),
        case(
            "anthropic-system-no-head",
            "no head: your system as it is",
            "anthropic_messages",
            ant,
            TAIL_ONLY,
            system="Be brief.",
        ),
        case(
            "anthropic-skip-unmarkable",
            "thinking, empty text and a blank string passed over",
            "anthropic_messages",
            [
                USER,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "x"},
                        thinking(),
                        {"type": "text", "text": " "},
                    ],
                },
                {"role": "user", "content": "\x85"},
            ],
        ),
        case(
            "anthropic-skip-system-turn",
            "a system turn inside messages never carries the marker",
            "anthropic_messages",
            [
                USER,
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "go"},
                {"role": "system", "content": "turn note"},
            ],
        ),
        case(
            "anthropic-yours-last",
            "your marker on the last block: used as it is, the head marked",
            "anthropic_messages",
            [{"role": "user", "content": [marked("a")]}],
        ),
        case(
            "anthropic-budget-3",
            "three markers in use: the conversation marker only",
            "anthropic_messages",
            [
                {
                    "role": "user",
                    "content": [marked("a"), marked("b"), {"type": "text", "text": "c"}],
                }
            ],
            reserved_breakpoints=1,
        ),
        case(
            "anthropic-budget-4",
            "four in use (nested in a tool_result): none added",
            "anthropic_messages",
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": [marked("a"), marked("b")],
                        },
                        {"type": "text", "text": "c"},
                    ],
                }
            ],
            reserved_breakpoints=2,
        ),
        case(
            "anthropic-tool-input",
            "a cache_control inside a tool call's input is data",
            "anthropic_messages",
            [
                USER,
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t",
                            "name": "f",
                            "input": {"cache_control": {"type": "ephemeral"}},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "done"}],
                },
            ],
            reserved_breakpoints=2,
        ),
        case(
            "anthropic-ttl",
            "ttl='1h' on the adapter's markers",
            "anthropic_messages",
            ant,
            ttl="1h",
        ),
        case(
            "anthropic-ttl-order-ok",
            "your 1h system marker between the adapter's 1h markers",
            "anthropic_messages",
            ant,
            system=[marked("A", "1h")],
            ttl="1h",
        ),
        case(
            "anthropic-ttl-order-system",
            "your 1h system marker after the adapter's 5m head marker",
            "anthropic_messages",
            ant,
            error=("ValueError", "cache_control TTLs"),
            system=[marked("A", "1h")],
        ),
        case(
            "anthropic-budget-5",
            "five markers in use",
            "anthropic_messages",
            [{"role": "user", "content": [marked("a"), marked("b")]}],
            error=(
                "ValueError",
                "the request already has 5 cache_control breakpoints (0 in "
                "system, 2 in messages, 3 reserved); the Messages API accepts at most 4",
            ),
            reserved_breakpoints=3,
        ),
        case(
            "anthropic-ttl-order",
            "your 1h marker after the adapter's 5m head marker",
            "anthropic_messages",
            [
                {"role": "user", "content": [marked("a", "1h")]},
                {"role": "assistant", "content": "c"},
                {"role": "user", "content": "d"},
            ],
            error=("ValueError", "cache_control TTLs"),
        ),
        case(
            "anthropic-ttl-order-marked-message",
            "your 1h marker in the message the conversation marker goes on, after the 5m head",
            "anthropic_messages",
            [{"role": "user", "content": [marked("a", "1h"), {"type": "text", "text": "b"}]}],
            error=("ValueError", "cache_control TTLs"),
        ),
        case(
            "anthropic-ttl-order-marked-message-1h",
            "the same with ttl='1h': every marker 1h",
            "anthropic_messages",
            [{"role": "user", "content": [marked("a", "1h"), {"type": "text", "text": "b"}]}],
            ttl="1h",
        ),
        case(
            "anthropic-ttl-order-marked-block",
            "your 1h marker nested in the block the adapter marks (after its 5m marker)",
            "anthropic_messages",
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": [marked("a", "1h")]}
                    ],
                }
            ],
            None,
            error=("ValueError", "cache_control TTLs"),
        ),
        case(
            "anthropic-cache-not-bool",
            "cache must be a bool",
            "anthropic_messages",
            ant,
            error=("TypeError", "cache"),
            cache=1,
        ),
        case(
            "anthropic-block-type-list",
            "a block's type must be a string",
            "anthropic_messages",
            [USER, {"role": "assistant", "content": [{"type": ["text"], "text": "x"}]}],
            error=("TypeError", "messages[1].content[0].type"),
        ),
        case(
            "anthropic-system-block-type-object",
            "a system block's type must be a string",
            "anthropic_messages",
            ant,
            error=("TypeError", "system[0].type"),
            system=[{"type": {"t": "text"}, "text": "x"}],
        ),
        case(
            "anthropic-first-not-user",
            "the conversation starts with a user turn",
            "anthropic_messages",
            [ASSISTANT],
            error=("ValueError", "messages[0].role"),
        ),
        case(
            "anthropic-first-system",
            "a leading system message (the hint: use system=)",
            "anthropic_messages",
            [SYSTEM, USER],
            error=("ValueError", "messages[0].role"),
        ),
        case(
            "anthropic-bad-role",
            "a role the Messages API does not accept",
            "anthropic_messages",
            [USER, {"role": "tool", "content": "x"}],
            error=("ValueError", "messages[1].role"),
        ),
        case(
            "anthropic-no-content",
            "every message has content",
            "anthropic_messages",
            [USER, {"role": "assistant"}],
            error=("TypeError", "messages[1]"),
        ),
        case(
            "anthropic-content-type",
            "content is a string or a list",
            "anthropic_messages",
            [{"role": "user", "content": 5}],
            error=("TypeError", "messages[0].content"),
        ),
        case(
            "anthropic-block-type",
            "each block an object",
            "anthropic_messages",
            [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}],
            error=("TypeError", "messages[0].content[1]"),
        ),
        case(
            "anthropic-system-type",
            "system is a string or a list",
            "anthropic_messages",
            ant,
            error=("TypeError", "system"),
            system=5,
        ),
        case(
            "anthropic-system-block-type",
            "each system block an object",
            "anthropic_messages",
            ant,
            error=("TypeError", "system[0]"),
            system=["text"],
        ),
        case(
            "anthropic-reserved-negative",
            "reserved_breakpoints >= 0",
            "anthropic_messages",
            ant,
            error=("ValueError", "reserved_breakpoints"),
            reserved_breakpoints=-1,
        ),
        case(
            "anthropic-reserved-type",
            "reserved_breakpoints is an integer",
            "anthropic_messages",
            ant,
            error=("TypeError", "reserved_breakpoints"),
            reserved_breakpoints="2",
        ),
        case(
            "anthropic-bad-ttl",
            "ttl is 5m or 1h",
            "anthropic_messages",
            ant,
            error=("ValueError", "ttl"),
            ttl="30m",
        ),
        case(
            "anthropic-bad-tail-role",
            "tail_role is user or system",
            "anthropic_messages",
            ant,
            error=("ValueError", "tail_role"),
            tail_role="developer",
        ),
        case(
            "anthropic-tail-system-first",
            "a system tail with no user turn before it",
            "anthropic_messages",
            [],
            error=("ValueError", "tail_role='system'"),
            tail_role="system",
        ),
        case(
            "anthropic-tail-system-after-assistant",
            "a system tail after an assistant turn "
            "(the prefill case moves it before the prefill, after the user turn, so the turn "
            "before that must be a user turn)",
            "anthropic_messages",
            [USER, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}],
            error=("ValueError", "tail_role='system'"),
            tail_role="system",
        ),
        case(
            "anthropic-empty",
            "no conversation and no tail",
            "anthropic_messages",
            [],
            HEAD_ONLY,
            error=("ValueError", "messages"),
        ),
    ]


def run(case: dict[str, Any]) -> dict[str, Any]:
    """The outcome of ``case`` under the Python adapters: ``expect`` or ``error``."""
    try:
        if case["adapter"] == "openai_prompt_caching":
            return {"expect": openai_prompt_caching(case["input"])}
        context = case["context"]
        rc = None if context is None else RunContext(**context)
        body = ADAPTERS[case["adapter"]](case["input"], rc, **case["options"])
    except (TypeError, ValueError) as error:
        message = str(error)
        return {
            "error": {
                "type": type(error).__name__,
                "where": message.split(": ", 1)[0],
                "message": message,
            }
        }
    return {"expect": body}


def build_document() -> dict[str, Any]:
    built = []
    names = set()
    for spec in cases():
        want = spec.pop("_want")
        assert spec["name"] not in names, f"two cases named {spec['name']}"
        names.add(spec["name"])
        outcome = run(spec)
        if want is None:
            assert "expect" in outcome, f"{spec['name']}: refused: {outcome}"
        else:
            got = outcome.get("error")
            assert got is not None and (got["type"], got["where"]) == want, (
                f"{spec['name']}: expected {want}, got {outcome}"
            )
        built.append({**spec, **outcome})
    return {"format": "adapters-v1", "description": DESCRIPTION, "cases": built}


def render() -> str:
    return json.dumps(build_document(), ensure_ascii=True, indent=1) + "\n"


if __name__ == "__main__":
    VECTORS_PATH.write_bytes(render().encode("ascii"))
    print(f"wrote {VECTORS_PATH}")
