"""LangChain's own compaction and context editing, recorded: ``SummarizationMiddleware`` (in
either order relative to ``RunContextMiddleware``) becomes ``compaction`` records and
``ContextEditingMiddleware`` (listed before it) ``elision`` records, so every run's
``session.messages_at(N)`` is exactly the conversation that went on the wire."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakeserver import FakeServer, Reply, ToolCall
from frameworks import require
from turnfacts import Clock, builder

require("langchain.agents", "langchain")
require("langchain_openai", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import (  # noqa: E402
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
    wrap_model_call,
)
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from runcontext import Session  # noqa: E402
from runcontext.integrations.langchain import RunContextMiddleware  # noqa: E402
from runcontext.transcript import Compaction, ConversationMismatchError, Elision  # noqa: E402

SYSTEM = "Answer briefly."
SUMMARY = "Here is a summary of the conversation to date:\n\n"


@tool
def run_tests(suite: str) -> str:
    """Run a test suite and return its output."""
    return "\n".join(f"{suite}: test {n} passed" for n in range(40))


def queue_turn(server: FakeServer, turn: int) -> None:
    """One agent run: two tool calls, then an answer (three model calls)."""
    for step in "ab":
        call = ToolCall("run_tests", {"suite": f"suite-{turn}{step}"}, f"call_{turn}{step}")
        server.queue(Reply(tools=(call,)))
    server.queue(Reply(text=f"All green, turn {turn}."))


def model(server: FakeServer) -> ChatOpenAI:
    # An async HTTP client belongs to the event loop it first ran in: one per agent.
    return ChatOpenAI(
        model="gpt-4.1",
        base_url=server.url + "/v1",
        api_key="sk-fake",
        max_retries=0,
        http_async_client=httpx.AsyncClient(),
    )


def wire_conversation(body: Any) -> list[Any]:
    """What the model was sent between the runcontext head and the tail."""
    head, *conversation, tail = body["messages"]
    assert head["role"] == "system" and tail["role"] == "system"
    return conversation


def run_agent(
    server: FakeServer,
    middleware: list[Any],
    turns: range,
    *,
    system_prompt: str | None = SYSTEM,
    asynchronous: bool = False,
    memory: InMemorySaver | None = None,
) -> None:
    """Agent runs ``turns`` of one conversation (a thread of ``memory``)."""
    memory = memory or InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in turns:
        queue_turn(server, turn)
        agent = create_agent(
            model(server),
            tools=[run_tests],
            system_prompt=system_prompt,
            middleware=middleware,
            checkpointer=memory,
        )
        question = {"messages": [{"role": "user", "content": f"Run the suites ({turn})."}]}
        if asynchronous:
            asyncio.run(agent.ainvoke(question, config))
        else:
            agent.invoke(question, config)


def assert_every_run_as_sent(session: Session, server: FakeServer) -> None:
    bodies = server.bodies()
    runs = session.runs()
    assert len(runs) == len(bodies)
    differ = [
        run.number
        for run, body in zip(runs, bodies, strict=True)
        if session.messages_at(run.number) != wire_conversation(body)
    ]
    assert differ == []


def summarization(server: FakeServer, keep: int = 4) -> SummarizationMiddleware:
    summaries = itertools.count(1)

    def summarizer(messages: Sequence[Any]) -> str:
        return f"Summary {next(summaries)} of {len(messages)} messages: the suites passed."

    return SummarizationMiddleware(
        model(server), trigger=("messages", 12), keep=("messages", keep), summarizer=summarizer
    )


@pytest.mark.parametrize("order", ["summarization-first", "runcontext-first"])
def test_summarization_is_recorded_as_compactions(
    server: FakeServer, tmp_path: Path, order: str
) -> None:
    """SummarizationMiddleware rewrites the agent's state before the model call
    (``before_model``), so RunContextMiddleware (``wrap_model_call``) reads the summarised
    conversation in either order; the system prompt stays at position 0."""
    session = Session.create(tmp_path / "agent.jsonl", [{"role": "system", "content": SYSTEM}])
    runcontext = RunContextMiddleware(
        builder(Clock()), session=session, counter=lambda text: len(text) // 4
    )
    middleware = [summarization(server), runcontext]
    if order == "runcontext-first":
        middleware.reverse()
    run_agent(server, middleware, turns=range(8))

    assert_every_run_as_sent(session, server)
    edits = session.edits()
    assert len(edits) >= 3
    for index, edit in enumerate(edits):
        assert isinstance(edit, Compaction)
        assert (edit.start, edit.mode, edit.messages) == (1, "summary", 1)
        assert edit.replaced >= 8
        # The counts of the conversation before and after (the fake server bills 10 tokens a
        # request, so the calibrated count before is small: only their presence is checked).
        assert edit.tokens_before is not None and edit.tokens_after is not None
        assert edit.quality == "estimated"
        (summary,) = session.edit_messages(index)
        assert summary["role"] == "user"
        assert summary["content"].startswith(SUMMARY)
    assert session.messages()[0] == {"role": "system", "content": SYSTEM}
    # Reopened, the transcript replays the same: the current conversation is the next request's.
    with Session.open(session.path) as reopened:
        assert reopened.messages() == session.messages()
        assert reopened.messages_at(24) == wire_conversation(server.bodies()[-1])
    session.close()


def test_summarization_of_the_first_message_is_recorded(server: FakeServer, tmp_path: Path) -> None:
    """Without a system prompt the summary replaces message 0, the transcript's seed: the
    compaction is recorded and the next runs continue it (never SeedMismatchError)."""
    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    run_agent(server, [summarization(server), runcontext], turns=range(6), system_prompt=None)
    session = runcontext.session
    assert session is not None
    assert_every_run_as_sent(session, server)
    edits = session.edits()
    assert edits and all(isinstance(edit, Compaction) and edit.start == 0 for edit in edits)
    assert session.messages()[0]["content"].startswith(SUMMARY)
    runcontext.close()


def context_editing() -> ContextEditingMiddleware:
    return ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=600, keep=2)])


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_context_editing_is_recorded_as_elisions(
    server: FakeServer, tmp_path: Path, asynchronous: bool
) -> None:
    """ContextEditingMiddleware clears old tool results in the request only: every run's
    recorded conversation has the ``[cleared]`` stubs the model was sent, and the full outputs
    stay in the transcript as the earlier runs were sent them."""
    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    run_agent(server, [context_editing(), runcontext], turns=range(8), asynchronous=asynchronous)
    session = runcontext.session
    assert session is not None
    assert len(session.runs()) == 24
    assert_every_run_as_sent(session, server)
    edits = session.edits()
    assert len(edits) >= 5
    assert all(isinstance(edit, Elision) for edit in edits)
    cleared = [stub for index in range(len(edits)) for stub in session.edit_messages(index)]
    assert {stub["role"] for stub in cleared} == {"tool"}
    assert {stub["content"] for stub in cleared} == {"[cleared]"}
    # The first tool result: in full where run 2 was sent it, a stub where the last run was.
    first_result = session.messages_at(2)[3]
    assert first_result["tool_call_id"] == "call_0a"
    assert first_result["content"].startswith("suite-0a: test 0 passed")
    assert session.messages_at(24)[3] == {
        "content": "[cleared]",
        "role": "tool",
        "tool_call_id": "call_0a",
    }
    runcontext.close()


def test_both_middlewares_together(server: FakeServer, tmp_path: Path) -> None:
    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    run_agent(server, [summarization(server), context_editing(), runcontext], turns=range(8))
    session = runcontext.session
    assert session is not None
    assert_every_run_as_sent(session, server)
    kinds = {type(edit) for edit in session.edits()}
    assert kinds == {Compaction, Elision}
    runcontext.close()


def test_context_editing_inside_runcontext_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """Listed after RunContextMiddleware, the editor changes the request after it was read:
    the transcript could not record what was sent, so nothing is sent."""
    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    with pytest.raises(ValueError, match="list the editing middleware first"):
        run_agent(server, [runcontext, context_editing()], turns=range(1))
    assert server.requests == []
    runcontext.close()


def test_an_edit_the_transcript_cannot_represent_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """Keeping one message, the summary replaces the last recorded reply too: where the new
    messages begin cannot be told, so the run is refused before it is sent."""
    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    middleware = [summarization(server, keep=1), runcontext]
    memory = InMemorySaver()
    run_agent(server, middleware, turns=range(2), memory=memory)
    sent = len(server.requests)
    with pytest.raises(ConversationMismatchError, match="a transcript is append-only") as caught:
        run_agent(server, middleware, turns=range(2, 3), memory=memory)
    assert "SummarizationMiddleware whose keep= summarised" in caught.value.__notes__[0]
    assert len(server.requests) == sent
    runcontext.close()


def test_an_unmarked_edit_of_an_earlier_message_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """A middleware that rewrites an earlier message in place, with no mark of LangChain's
    editors: the whole conversation is compared, so the change is refused, never ignored."""

    @wrap_model_call
    def rewrite(request: Any, handler: Any) -> Any:
        first, *rest = request.messages
        if len(rest) > 11:  # from the third agent run on
            first = HumanMessage(content="A question never asked.", id=first.id)
        return handler(request.override(messages=[first, *rest]))

    runcontext = RunContextMiddleware(builder(Clock()), session=tmp_path / "agent.jsonl")
    memory = InMemorySaver()
    run_agent(server, [rewrite, runcontext], turns=range(2), memory=memory)
    sent = len(server.requests)
    with pytest.raises(ConversationMismatchError, match=r"messages\[1\] differs") as caught:
        run_agent(server, [rewrite, runcontext], turns=range(2, 3), memory=memory)
    assert caught.value.index == 1
    assert (
        "without a SummarizationMiddleware or ContextEditingMiddleware mark"
        in (caught.value.__notes__[0])
    )
    assert len(server.requests) == sent
    runcontext.close()
