"""runcontext.adapters.replies on the real SDKs' response objects, from the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai

from runcontext import Loop, RunContext, Session
from runcontext.adapters import anthropic_messages, openai_chat
from runcontext.adapters.replies import anthropic_reply, openai_chat_reply, openai_responses_reply

from fakeserver import FakeServer, Reply, ToolCall

CALL = ToolCall("lookup", {"ticket": "T-1", "note": None}, "call_1")


def openai_client(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)


def anthropic_client(server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant-fake", max_retries=0)


def test_openai_chat_text_and_tool_calls(server: FakeServer) -> None:
    server.queue(Reply(text="Hello."), Reply(tools=(CALL,)))
    client = openai_client(server)
    messages = [{"role": "user", "content": "hi"}]
    text = client.chat.completions.create(model="gpt-6-luna", messages=messages)
    assert openai_chat_reply(text) == {"role": "assistant", "content": "Hello."}
    tools = client.chat.completions.create(model="gpt-6-luna", messages=messages)
    assert openai_chat_reply(tools) == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                # Nulls inside the arguments are the model's data and stay.
                "function": {"name": "lookup", "arguments": '{"ticket": "T-1", "note": null}'},
            }
        ],
    }
    # What model_dump() would have recorded instead.
    dumped = tools.choices[0].message.model_dump()
    assert {"refusal", "audio", "function_call", "annotations"} <= set(dumped)


def test_openai_responses_items(server: FakeServer) -> None:
    server.queue(Reply(text="Hi.", tools=(CALL,)))
    response = openai_client(server).responses.create(model="gpt-6-luna", input="hi")
    items = openai_responses_reply(response)
    assert items == [
        {
            "type": "message",
            "id": "msg_fake",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_call_1",
            "call_id": "call_1",
            "name": "lookup",
            "arguments": '{"ticket": "T-1", "note": null}',
            "status": "completed",
        },
    ]
    # The items go back as input as they are.
    openai_client(server).responses.create(
        model="gpt-6-luna",
        input=[
            {"role": "user", "content": "hi"},
            *items,
            {"type": "function_call_output", "call_id": "call_1", "output": "open"},
        ],
    )
    assert server.bodies()[1]["input"][1:3] == items


def test_anthropic_message(server: FakeServer) -> None:
    server.queue(Reply(text="Let me look.", tools=(CALL,)))
    message = anthropic_client(server).messages.create(
        model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert anthropic_reply(message) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "lookup",
                "input": {"ticket": "T-1", "note": None},
            },
        ],
    }
    assert "citations" in message.content[0].model_dump()  # the null that is left out


def test_loop_records_the_reply_without_nulls(server: FakeServer, tmp_path: Path) -> None:
    """TRANSCRIPT.md's backend, with the reply helper in place of a hand-written converter."""
    client = anthropic_client(server)
    messages = [{"role": "user", "content": "hi"}]
    session = Session.create(tmp_path / "t.jsonl", messages)
    loop = Loop(
        lambda body: anthropic_reply(
            client.messages.create(model="claude-haiku-4-5", max_tokens=64, **body)
        ),
        session=session,
        adapter=anthropic_messages,
    )
    server.text("Hello.")
    outcome = loop.run(messages, context=RunContext(facts=[("date", "2026-12-01")]))
    assert outcome.reply == {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]}
    recorded = Session.open(tmp_path / "t.jsonl").messages()
    assert recorded[-1] == outcome.reply
    assert "null" not in json.dumps(recorded)

    openai_loop = Loop(
        lambda body: openai_chat_reply(
            openai_client(server).chat.completions.create(model="gpt-6-luna", messages=body)
        ),
        adapter=openai_chat,
    )
    server.text("Hi.")
    assert openai_loop.run(messages).reply == {"role": "assistant", "content": "Hi."}
