"""runcontext.adapters.streams with the real SDKs' streaming against the fake server: the
accumulated message equals the one the same reply gives when it is not streamed."""

from __future__ import annotations

import anthropic
import openai
import pytest

from runcontext.adapters.replies import anthropic_reply, openai_chat_reply, openai_responses_reply
from runcontext.adapters.streams import AnthropicStream, OpenAIChatStream, OpenAIResponsesStream
from runcontext.budget import Usage

from fakeserver import FakeServer, Reply, ToolCall

REPLIES = {
    "text": Reply(text="The ticket T-1 is open."),
    "tools": Reply(
        tools=(
            ToolCall("lookup", {"ticket": "T-1"}, "call_1"),
            ToolCall("close", {"ticket": "T-2", "reason": "done"}, "call_2"),
        )
    ),
    "both": Reply(text="Looking.", tools=(ToolCall("lookup", {"ticket": "T-1"}, "call_1"),)),
}
USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("name", REPLIES)
def test_openai_chat_stream(server: FakeServer, name: str) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)
    server.queue(REPLIES[name], REPLIES[name])
    whole = openai_chat_reply(client.chat.completions.create(model="m", messages=USER))
    accumulator = OpenAIChatStream()
    stream = client.chat.completions.create(
        model="m",
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(accumulator.feed(stream))
    assert len(chunks) > 3
    assert accumulator.message() == whole
    assert accumulator.finish_reason == ("tool_calls" if REPLIES[name].tools else "stop")
    assert accumulator.usage == Usage(input=10, output=5)


@pytest.mark.parametrize("name", REPLIES)
def test_openai_responses_stream(server: FakeServer, name: str) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)
    server.queue(REPLIES[name], REPLIES[name])
    whole = openai_responses_reply(client.responses.create(model="m", input="hi"))
    accumulator = OpenAIResponsesStream()
    for event in client.responses.create(model="m", input="hi", stream=True):
        accumulator.add(event)
    assert accumulator.items() == whole
    assert accumulator.usage == Usage(input=10, output=5)


@pytest.mark.parametrize("name", REPLIES)
def test_anthropic_stream(server: FakeServer, name: str) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-fake", max_retries=0)
    server.queue(REPLIES[name], REPLIES[name], REPLIES[name])
    whole = anthropic_reply(client.messages.create(model="m", max_tokens=64, messages=USER))
    accumulator = AnthropicStream()
    raw = client.messages.create(model="m", max_tokens=64, messages=USER, stream=True)
    for event in raw:
        accumulator.add(event)
    assert accumulator.message() == whole
    assert accumulator.stop_reason == ("tool_use" if REPLIES[name].tools else "end_turn")
    assert accumulator.usage == Usage(input=10, output=5)
    # The SDK's own accumulator agrees.
    with client.messages.stream(model="m", max_tokens=64, messages=USER) as stream:
        final = stream.get_final_message()
    assert anthropic_reply(final) == whole
