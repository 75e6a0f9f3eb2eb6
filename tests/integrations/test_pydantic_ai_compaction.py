"""History processors that shrink or edit the conversation, through a real Pydantic AI agent
and ``RunContextCapability``: a processor that keeps the last messages (a trim), one that
clears old tool results (an elision), one that summarises old messages with another model
(a summary). The transcript records each as a compaction or an elision, and for every run
``session.messages_at(N)`` is what went on the wire (docs/INTEGRATIONS.md, *Pydantic AI*,
*History processors*)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer, Recorded
from frameworks import require

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    CompactionPart,
    ModelMessage,
    ModelRequest,
    SystemPromptPart,
    ToolReturnPart,
)
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from runcontext import RunContext, Session  # noqa: E402
from runcontext.budget import RequestCounter  # noqa: E402
from runcontext.integrations.pydantic_ai import RunContextCapability  # noqa: E402
from runcontext.transcript import (  # noqa: E402
    Compaction,
    ConversationMismatchError,
    Elision,
    SeedMismatchError,
)

from rows.pydantic_ai import wire  # noqa: E402

INSTRUCTIONS = "Answer in one short sentence."
SEED = {"role": "system", "kind": "instructions", "content": INSTRUCTIONS}
HEAD = "You are a careful support agent."
CONTEXT = RunContext(head_sections=[("identity", HEAD)], facts=[("date", "2026-12-06")])
SUMMARY = "Summary of the conversation so far: tickets were looked up."
FRAME = "<pyai:conversation_summary>\n"  # how Pydantic AI sends a CompactionPart
ANNOUNCEMENT = "When a user message, a file or a tool result contains text that looks like"
Processor = Callable[..., Any]


def make_agent(
    server: FakeServer, capability: RunContextCapability, processor: Processor, *, first: bool
) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
    history: Any = ProcessHistory(processor)
    agent: Agent[None, str] = Agent(
        OpenAIChatModel("gpt-6-luna", provider=provider),
        instructions=INSTRUCTIONS,
        # Either order: the capability's hook runs after every history processor.
        capabilities=[history, capability] if first else [capability, history],
        model_settings={"thinking": False},
    )

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return f"{ticket} is open; its log is 40 lines of output."

    return agent


def sent(request: Recorded) -> list[Mapping[str, Any]]:
    """The conversation a request carried, in the transcript's form: the agent's instructions
    first, then the messages between the head and the tail (the contract's mapping); a summary
    (a ``CompactionPart``) is sent as user text that frames it, and recorded as its part."""
    return [
        {**message, "parts": [_part(part) for part in message["parts"]]}
        if "parts" in message
        else message
        for message in wire(request).conversation
        # Pydantic AI's fixed paragraph about its frames, sent once a request carries one (a
        # summary): the framework's text, not the agent's, and not recorded.
        if not str(message.get("content", "")).startswith(ANNOUNCEMENT)
    ]


def _part(part: Mapping[str, Any]) -> Mapping[str, Any]:
    content = part.get("content")
    framed = (
        isinstance(content, str)
        and content.startswith(FRAME)
        and content.endswith(f"{SUMMARY}\n</pyai:conversation_summary>")
    )
    if part["part_kind"] == "user-prompt" and framed:
        return {"part_kind": "compaction", "content": SUMMARY}
    return part


def assert_runs_are_the_wire(session: Session, server: FakeServer) -> None:
    runs = session.runs()
    assert len(runs) == len(server.requests)
    for run, request in zip(runs, server.requests, strict=True):
        assert session.messages_at(run.number) == sent(request), run.number
        assert wire(request).head == HEAD
        assert wire(request).tail is not None


def ask(agent: Agent[None, str], question: str, history: list[ModelMessage] | None) -> Any:
    return agent.run_sync(question, message_history=history).all_messages()


@pytest.fixture(params=[True, False], ids=["processor-first", "capability-first"])
def first(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield request.param


# --- a trim: keep the last messages ---------------------------------------------------------


def keep_last(count: int) -> Processor:
    def keep(messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages[-count:] if len(messages) > count else messages

    return keep


def test_a_trim_is_recorded_as_a_compaction(
    server: FakeServer, tmp_path: Path, first: bool
) -> None:
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(CONTEXT, session=path)
    agent = make_agent(server, capability, keep_last(3), first=first)
    history = None
    for number in range(1, 7):
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    assert len(history) == 3 + 1  # the processor's result is the run's history, and the reply
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        edits = session.edits()
        assert [type(edit) for edit in edits] == [Compaction] * 4
        for edit in edits:
            assert isinstance(edit, Compaction)
            assert (edit.start, edit.mode, edit.messages) == (1, "trim", 0)
        assert [edit.replaced for edit in edits] == [2, 2, 2, 2]  # runs 3 to 6 drop a pair each
        assert session.messages()[0] == SEED
        assert len(session.messages()) == 1 + 3 + 1  # instructions, 3 kept, the last reply


def test_a_trim_when_the_model_says_the_same_thing_twice(
    server: FakeServer, tmp_path: Path
) -> None:
    """Every reply is "done": the last recorded reply occurs twice in what is sent, so where
    the new messages begin is told from the conversation before the processor, and the range
    dropped is still exactly what the processor dropped."""
    path = tmp_path / "agent.jsonl"
    agent = make_agent(
        server, RunContextCapability(CONTEXT, session=path), keep_last(4), first=True
    )
    history = None
    for number in range(1, 6):
        history = ask(agent, f"question {number}", history)  # the server answers "done"
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        edits = session.edits()
        assert all(isinstance(edit, Compaction) and edit.mode == "trim" for edit in edits)
        assert [(edit.start, edit.replaced) for edit in edits if isinstance(edit, Compaction)] == [
            (1, 1),  # run 3 drops question 1
            (2, 2),  # runs 4 and 5 drop a question and its answer, after a kept "done"
            (2, 2),
        ]


def test_a_trim_in_streamed_and_async_runs(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    agent = make_agent(
        server, RunContextCapability(CONTEXT, session=path), keep_last(3), first=True
    )

    async def streamed(question: str, history: Any) -> Any:
        async with agent.run_stream(question, message_history=history) as result:
            await result.get_output()
        return result.all_messages()

    history = None
    for number in range(1, 6):
        server.text(f"answer {number}")
        if number % 2:
            history = asyncio.run(streamed(f"question {number}", history))
        else:
            history = asyncio.run(agent.run(f"question {number}", message_history=history))
            history = history.all_messages()
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        assert [edit.replaced for edit in session.edits() if isinstance(edit, Compaction)] == [
            2,
            2,
            2,
        ]


class WatchedCounter(RequestCounter):
    """A request counter that remembers the positions it was told were compacted."""

    def __init__(self) -> None:
        super().__init__(lambda text: len(text) // 4)
        self.starts: list[int] = []

    def compacted(self, start: int) -> None:
        self.starts.append(start)
        super().compacted(start)


def test_an_edit_makes_the_counter_forget_what_it_replaced(
    server: FakeServer, tmp_path: Path
) -> None:
    counter = WatchedCounter()
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(CONTEXT, session=path, counter=counter)
    agent = make_agent(server, capability, keep_last(3), first=True)
    history = None
    for number in range(1, 5):
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    assert counter.starts == [1, 1]  # runs 3 and 4 each dropped a pair from position 1
    with Session.open(path) as session:
        assert all(run.tokens is not None for run in session.runs())


def test_a_trim_that_splits_a_tool_call_records_what_was_sent(
    server: FakeServer, tmp_path: Path
) -> None:
    """Keeping the last three messages after a tool loop leaves a tool result without its
    call: Pydantic AI drops that result before the request, and the transcript records the
    request as sent, without it."""
    path = tmp_path / "agent.jsonl"
    agent = make_agent(
        server, RunContextCapability(CONTEXT, session=path), keep_last(3), first=True
    )
    history = None
    for number in range(1, 4):
        server.tool("lookup", call_id=f"call_{number}", ticket=f"T-{number}")
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        assert all(isinstance(edit, Compaction) for edit in session.edits())
        # Run 3 (run 2's first request) is sent its answer and question without the result.
        kinds = [message["kind"] for message in session.messages_at(3)]
        assert kinds == ["instructions", "response", "request"]


# --- an elision: clear old tool results ----------------------------------------------------


def clear_old_tool_results(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Replace every tool result but the latest with a stub (new message objects, as Pydantic
    AI asks of a processor)."""
    returns = [
        (i, j)
        for i, message in enumerate(messages)
        if isinstance(message, ModelRequest)
        for j, part in enumerate(message.parts)
        if isinstance(part, ToolReturnPart)
    ]
    edited = list(messages)
    for i, j in returns[:-1]:
        message = edited[i]
        assert isinstance(message, ModelRequest)
        part = message.parts[j]
        if part.content != "[cleared]":
            parts = list(message.parts)
            parts[j] = dataclasses.replace(part, content="[cleared]")
            edited[i] = dataclasses.replace(message, parts=parts)
    return edited


def test_clearing_tool_results_is_recorded_as_elisions(
    server: FakeServer, tmp_path: Path, first: bool
) -> None:
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(CONTEXT, session=path)
    agent = make_agent(server, capability, clear_old_tool_results, first=first)
    history = None
    for number in range(1, 5):
        server.tool("lookup", call_id=f"call_{number}", ticket=f"T-{number}")
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        edits = session.edits()
        assert [type(edit) for edit in edits] == [Elision] * 3
        # Run 2k (the second request of run k + 1) clears the result run k looked up: the
        # message at 3 + 4 (k - 1) (instructions, question, call, result, answer, ...).
        assert [list(edit.indices) for edit in edits] == [[3], [7], [11]]
        assert [edit.after_run for edit in edits] == [3, 5, 7]
        for index in range(len(edits)):
            (stub,) = session.edit_messages(index)
            assert stub["parts"][0]["content"] == "[cleared]"
        # What run 3 was sent still holds run 1's full result; run 4 was sent the stub.
        assert "40 lines" in str(session.messages_at(3)[3])
        assert "[cleared]" in str(session.messages_at(4)[3])


# --- a summary: another model summarises old messages ---------------------------------------


@pytest.fixture
def summariser() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def summarise_old(summariser: FakeServer, keep: int) -> Processor:
    """When the history is longer than ``keep`` + 2 messages, summarise all but the last
    ``keep`` with another model (its own agent and server), as Pydantic AI suggests: the
    summary in a ``CompactionPart`` that replaces what it summarises."""
    provider = OpenAIProvider(base_url=summariser.url + "/v1", api_key="sk-fake")
    model = OpenAIChatModel("gpt-6-luna-mini", provider=provider)
    writer: Agent[None, str] = Agent(model, instructions="Summarise the conversation.")

    async def summarise(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) <= keep + 2:
            return messages
        old, recent = messages[:-keep], messages[-keep:]
        summariser.text(SUMMARY)
        result = await writer.run("Summarise it.", message_history=old)
        return [ModelRequest(parts=[CompactionPart(content=result.output)]), *recent]

    return summarise


@pytest.mark.parametrize("keep", [1, 3])
def test_a_summary_is_recorded_as_a_compaction(
    server: FakeServer, summariser: FakeServer, tmp_path: Path, first: bool, keep: int
) -> None:
    """``keep=1`` summarises everything but the new question, the last reply too; ``keep=3``
    keeps the last exchange."""
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(CONTEXT, session=path)
    agent = make_agent(server, capability, summarise_old(summariser, keep), first=first)
    history = None
    for number in range(1, 8):
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    assert summariser.requests  # the summaries were written by another model call
    with Session.open(path) as session:
        assert_runs_are_the_wire(session, server)
        edits = session.edits()
        assert edits and all(isinstance(edit, Compaction) for edit in edits)
        for index, edit in enumerate(edits):
            assert isinstance(edit, Compaction)
            assert (edit.start, edit.mode, edit.messages) == (1, "summary", 1)
            # Pydantic AI merges the summary's request with the request after it (the kept
            # question, or the new one), and sends them as one turn: the replacement is it.
            (replacement,) = session.edit_messages(index)
            assert replacement["kind"] == "request"
            assert replacement["parts"][0] == {"part_kind": "compaction", "content": SUMMARY}
            assert replacement["parts"][1]["part_kind"] == "user-prompt"
        assert session.messages()[0] == SEED


# --- what is refused, what stays out of history ---------------------------------------------


def test_a_processor_that_changes_the_new_messages_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """A processor that rewrites the question being sent, and the last reply before it, is
    not one edit of the recorded conversation: refused, nothing sent."""

    def rewrite(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) < 3:
            return messages
        return [ModelRequest.user_text_prompt("a different question")]

    path = tmp_path / "agent.jsonl"
    agent = make_agent(server, RunContextCapability(CONTEXT, session=path), rewrite, first=True)
    server.text("answer 1")
    history = ask(agent, "question 1", None)
    with pytest.raises(ConversationMismatchError, match=r"the last recorded message \(message 2\)"):
        ask(agent, "question 2", history)
    assert len(server.requests) == 1
    with Session.open(path) as session:
        assert session.edits() == []


def test_other_instructions_are_another_conversation(server: FakeServer, tmp_path: Path) -> None:
    """The agent's instructions are the seed: no history processor edits them, and other
    instructions are refused before the call, not recorded as an edit of message 0."""
    path = tmp_path / "agent.jsonl"
    agent = make_agent(
        server, RunContextCapability(CONTEXT, session=path), keep_last(2), first=True
    )
    server.text("answer 1")
    history = ask(agent, "question 1", None)
    other: Agent[None, str] = Agent(
        OpenAIChatModel(
            "gpt-6-luna",
            provider=OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake"),
        ),
        instructions="Be terse.",
        capabilities=[ProcessHistory(keep_last(2)), RunContextCapability(CONTEXT, session=path)],
        model_settings={"thinking": False},
    )
    with pytest.raises(SeedMismatchError):
        other.run_sync("question 2", message_history=history)
    assert len(server.requests) == 1


def test_the_tail_stays_out_of_the_history_a_processor_keeps(server: FakeServer) -> None:
    """``ProcessHistory`` writes its result back into the run's history: the tail, added for
    the request only, must not be in what it processes."""
    seen: list[list[ModelMessage]] = []

    def keep_all(messages: list[ModelMessage]) -> list[ModelMessage]:
        seen.append(list(messages))
        return messages

    agent = make_agent(server, RunContextCapability(CONTEXT), keep_all, first=False)
    history = None
    for number in range(1, 3):
        server.text(f"answer {number}")
        history = ask(agent, f"question {number}", history)
    assert history is not None
    for messages in [history, *seen]:
        for message in messages:
            assert not any(
                isinstance(part, SystemPromptPart) for part in getattr(message, "parts", [])
            ), message
    assert [wire(request).tail for request in server.requests] == [
        wire(server.requests[0]).tail
    ] * 2
