"""The Agents SDK's OpenAIResponsesCompactionSession, and edited sessions, with runcontext.

Every model call's recorded conversation is compared with the request on the wire
(``session.messages_at(run) == input`` without the tail), and each compaction with the items
the SDK stores afterwards.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer, Recorded
from frameworks import require
from turnfacts import Clock, builder

require("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from agents.memory import OpenAIResponsesCompactionSession  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from runcontext import Session  # noqa: E402
from runcontext.integrations.openai_agents import (  # noqa: E402
    RunContextFilter,
    RunContextSession,
    ServerManagedConversationError,
)
from runcontext.transcript import ConversationMismatchError  # noqa: E402

from rows.openai_agents import _unmarked  # noqa: E402

INSTRUCTIONS = {"role": "system", "content": "Answer briefly."}


@function_tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{ticket} is open, with a long history of comments"


def client(server: FakeServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-fake", max_retries=0)


def agent(server: FakeServer, name: str = "gpt-4.1") -> Agent[Any]:
    model = OpenAIResponsesModel(model=name, openai_client=client(server))
    return Agent(name="helper", instructions="Answer briefly.", model=model, tools=[lookup])


def every_four(context: dict[str, Any]) -> bool:
    return len(context["compaction_candidate_items"]) >= 4


def compacting(server: FakeServer, tmp_path: Path, mode: Any = "input") -> Any:
    return OpenAIResponsesCompactionSession(
        "c1",
        SQLiteSession("s1", str(tmp_path / "sdk.db")),
        client=client(server),
        compaction_mode=mode,
        should_trigger_compaction=every_four,
    )


def turns(
    server: FakeServer,
    session: Any,
    context_filter: RunContextFilter,
    count: int,
    model: str = "gpt-4.1",
) -> None:
    helper = agent(server, model)
    config = RunConfig(call_model_input_filter=context_filter)
    for turn in range(count):
        server.tool("lookup", call_id=f"call_{turn}", ticket=f"T-{turn}")
        server.text(f"T-{turn} is open ({turn}).")
        Runner.run_sync(helper, f"Is T-{turn} open?", session=session, run_config=config)


def model_calls(server: FakeServer) -> list[Recorded]:
    return [request for request in server.requests if request.path == "/v1/responses"]


def compactions(server: FakeServer) -> list[Recorded]:
    return [request for request in server.requests if request.path == "/v1/responses/compact"]


def assert_every_run_is_the_wire(transcript: Session, server: FakeServer) -> None:
    calls = model_calls(server)
    assert len(transcript.runs()) == len(calls)
    for number, call in enumerate(calls, start=1):
        sent = call.json["input"]
        assert sent[-1]["role"] == "developer"  # the tail, which the transcript never holds
        # The documented mapping: the item carrying the cache breakpoint is recorded without it.
        assert transcript.messages_at(number) == [_unmarked(item) for item in sent[:-1]], number


# gpt-6-luna: the filter puts a cache breakpoint on the last user or tool-output part, so
# the request no longer matches the SDK's stored items item by item (the SDK's automatic
# path would skip every compaction; RunContextSession compacts the whole stored history).
@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-6-luna"])
def test_input_mode_compactions_are_recorded(
    server: FakeServer, tmp_path: Path, model: str
) -> None:
    session = RunContextSession(compacting(server, tmp_path), tmp_path / "t.jsonl")
    context_filter = RunContextFilter(builder(Clock()), session=session)
    turns(server, session, context_filter, 6, model)
    breakpoints = [b"prompt_cache_breakpoint" in call.body for call in model_calls(server)]
    assert all(breakpoints) if model == "gpt-6-luna" else not any(breakpoints)

    sent = compactions(server)
    assert len(sent) == 3  # after turns 2, 4 and 6: four candidate items each time
    assert all("input" in call.json and "previous_response_id" not in call.json for call in sent)
    transcript = Session.open(tmp_path / "t.jsonl")
    assert_every_run_is_the_wire(transcript, server)
    # Each compaction replaced everything after the agent's instructions with what the SDK
    # stored: the user messages, then the compaction item.
    edits = transcript.edits()
    assert [(edit.after_run, edit.start, edit.end, edit.messages, edit.mode) for edit in edits] == [
        (4, 1, 9, 3, "summary"),
        (8, 1, 12, 5, "summary"),
        (12, 1, 14, 7, "summary"),
    ]
    for index, call in enumerate(sent):
        replacement = transcript.edit_messages(index)
        assert replacement[-1] == {
            "encrypted_content": f"compacted:{len(call.json['input'])}",
            "id": f"cmp_{server.requests.index(call) + 1}",
            "type": "compaction",
        }
        # What was summarised is what the transcript held after the instructions: the
        # conversation of the turn's last call, then its reply.
        summarised = call.json["input"]
        turn = 2 * index + 1
        assert summarised[:-1] == transcript.messages_at(edits[index].after_run)[1:]
        assert summarised[-1]["role"] == "assistant"
        assert summarised[-1]["content"][0]["text"] == f"T-{turn} is open ({turn})."
    stored = asyncio.run(session.get_items())
    assert transcript.messages() == [INSTRUCTIONS, *stored]


def test_auto_mode_compacts_with_the_input(server: FakeServer, tmp_path: Path) -> None:
    # "auto" would name the last response (previous_response_id): the session asks for input.
    session = RunContextSession(compacting(server, tmp_path, "auto"), tmp_path / "t.jsonl")
    context_filter = RunContextFilter(builder(Clock()), session=session)
    turns(server, session, context_filter, 2)
    (sent,) = compactions(server)
    assert "previous_response_id" not in sent.json
    assert sent.json["input"][0]["role"] == "user"
    assert_every_run_is_the_wire(Session.open(tmp_path / "t.jsonl"), server)


def test_previous_response_id_mode_is_refused(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(ServerManagedConversationError, match="compaction_mode='input'"):
        RunContextSession(compacting(server, tmp_path, "previous_response_id"), tmp_path / "t")
    session = RunContextSession(compacting(server, tmp_path), tmp_path / "t.jsonl")
    with pytest.raises(ServerManagedConversationError, match="head and tail"):
        asyncio.run(session.run_compaction({"compaction_mode": "previous_response_id"}))
    assert server.requests == []


class ClearingSession(SQLiteSession):
    """An SDK session that hands out every tool output but the newest as a stub, as a context
    editor clearing old tool results does."""

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await super().get_items(limit)
        outputs = [i for i, item in enumerate(items) if item.get("type") == "function_call_output"]
        for i in outputs[:-1]:
            items[i] = {**items[i], "output": "[cleared]"}
        return items


def test_tool_outputs_cleared_by_the_session_are_recorded_as_elisions(
    server: FakeServer, tmp_path: Path
) -> None:
    session = RunContextSession(
        ClearingSession("s1", str(tmp_path / "sdk.db")), tmp_path / "t.jsonl"
    )
    context_filter = RunContextFilter(builder(Clock()), session=session)
    turns(server, session, context_filter, 4)

    transcript = Session.open(tmp_path / "t.jsonl")
    assert_every_run_is_the_wire(transcript, server)
    # Each turn's first call (runs 1, 3, 5, 7) reads the stored items: turn 3's gets turn 1's
    # tool output as a stub (position 3), turn 4's turn 2's too (position 7).
    edits = transcript.edits()
    assert [(edit.after_run, edit.indices) for edit in edits] == [(4, (3,)), (6, (7,))]
    assert [transcript.edit_messages(i)[0]["output"] for i in range(2)] == ["[cleared]"] * 2
    assert transcript.messages_at(4)[3]["output"].startswith("T-0 is open")  # in full then
    assert transcript.messages_at(5)[3]["output"] == "[cleared]"
    assert transcript.messages_at(6)[7]["output"].startswith("T-1 is open")
    assert transcript.messages_at(7)[7]["output"] == "[cleared]"


def test_a_different_conversation_is_refused_after_compactions(
    server: FakeServer, tmp_path: Path
) -> None:
    session = RunContextSession(compacting(server, tmp_path), tmp_path / "t.jsonl")
    turns(server, session, RunContextFilter(builder(Clock()), session=session), 2)
    sent = len(server.requests)
    # Another SDK conversation (a new store) on the same transcript: same instructions, but
    # not the recorded conversation, compacted or not.
    other = RunContextSession(SQLiteSession("s2", str(tmp_path / "other.db")), tmp_path / "t.jsonl")
    with pytest.raises(ConversationMismatchError, match="last recorded message"):
        turns(server, other, RunContextFilter(builder(Clock()), session=other), 1)
    assert len(server.requests) == sent


def test_a_compaction_session_around_the_runcontext_session_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    # The other order: the compaction replaces the items under RunContextSession, which sees
    # no compaction; the next request no longer continues the transcript and is not sent.
    session = RunContextSession(SQLiteSession("s1", str(tmp_path / "sdk.db")), tmp_path / "t.jsonl")
    outer = OpenAIResponsesCompactionSession(
        "c1",
        session,
        client=client(server),
        compaction_mode="input",
        should_trigger_compaction=every_four,
    )
    context_filter = RunContextFilter(builder(Clock()), session=session)
    turns(server, outer, context_filter, 2)
    assert len(compactions(server)) == 1
    calls = len(model_calls(server))
    with pytest.raises(ConversationMismatchError, match="last recorded message"):
        turns(server, outer, context_filter, 1)
    assert len(model_calls(server)) == calls


def test_async_runs_record_compactions(server: FakeServer, tmp_path: Path) -> None:
    session = RunContextSession(compacting(server, tmp_path), tmp_path / "t.jsonl")
    context_filter = RunContextFilter(builder(Clock()), session=session)
    helper = agent(server)
    config = RunConfig(call_model_input_filter=context_filter)

    async def main() -> None:
        for turn in range(4):
            server.tool("lookup", call_id=f"call_{turn}", ticket=f"T-{turn}")
            server.text(f"T-{turn} is open ({turn}).")
            result = Runner.run_streamed(
                helper, f"Is T-{turn} open?", session=session, run_config=config
            )
            async for _ in result.stream_events():
                pass

    asyncio.run(main())
    transcript = Session.open(tmp_path / "t.jsonl")
    assert [edit.after_run for edit in transcript.edits()] == [4, 8]
    assert_every_run_is_the_wire(transcript, server)


def test_no_compaction_while_a_tool_call_waits_for_its_output(
    server: FakeServer, tmp_path: Path
) -> None:
    session = RunContextSession(compacting(server, tmp_path), tmp_path / "t.jsonl")
    call = {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": "{}"}
    items: list[Any] = [{"role": "user", "content": "Is T-9 open?"}, call]
    asyncio.run(session.add_items(items))
    asyncio.run(session.run_compaction({"force": True}))
    assert compactions(server) == []
    output = {"type": "function_call_output", "call_id": "call_9", "output": "open"}
    asyncio.run(session.add_items([output]))
    asyncio.run(session.run_compaction({"force": True}))
    (sent,) = compactions(server)
    assert sent.json["input"] == [*items, output]
    transcript = session.transcript
    assert transcript is not None
    # A session without a filter records the stored items alone.
    assert [(edit.start, edit.end, edit.mode) for edit in transcript.edits()] == [(0, 3, "summary")]
    assert transcript.messages() == asyncio.run(session.get_items())
