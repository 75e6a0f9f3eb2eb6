"""RunContextCapability's transcript and budget through a real Pydantic AI agent: ``session=``
a path or a ``postgresql://`` URI, opened or created on the first request, on the first run
and the hundredth; the agent's instructions and every message recorded as sent; a budget
checked before the request is sent and each run's billed tokens recorded
(docs/INTEGRATIONS.md, *Pydantic AI*)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import HEAD, Clock, builder

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessagesTypeAdapter  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from runcontext import Session  # noqa: E402
from runcontext.budget import Budget, BudgetExceededError, RequestCounter  # noqa: E402
from runcontext.integrations.pydantic_ai import RunContextCapability  # noqa: E402
from runcontext.transcript import ConversationMismatchError  # noqa: E402

INSTRUCTIONS = "Answer in one short sentence."
SEED = {"role": "system", "kind": "instructions", "content": INSTRUCTIONS}
DOC = Path(__file__).resolve().parents[2] / "docs" / "INTEGRATIONS.md"


def make_agent(
    server: FakeServer, capability: RunContextCapability, instructions: str = INSTRUCTIONS
) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=server.url + "/v1", api_key="sk-fake")
    agent: Agent[None, str] = Agent(
        OpenAIChatModel("gpt-6-luna", provider=provider),
        instructions=instructions,
        capabilities=[capability],
        model_settings={"thinking": False},
    )

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return "T-1 is open."

    return agent


def test_a_path_is_created_on_the_first_request_and_continued_by_the_next_process(
    server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(builder(Clock()), session=str(path))
    assert capability.session is None and not path.exists()  # nothing before the first request
    server.tool("lookup", ticket="T-1")
    first = make_agent(server, capability).run_sync("Is T-1 open?")
    assert capability.session is not None
    saved = first.all_messages_json()  # what an application keeps between processes
    # Another process: a new capability on the same path, the history loaded back.
    later = RunContextCapability(builder(Clock()), session=path)
    history = ModelMessagesTypeAdapter.validate_json(saved)
    make_agent(server, later).run_sync("Still?", message_history=history)
    with Session.open(path) as session:
        runs = session.runs()
        messages = session.messages()
    assert [run.messages for run in runs] == [2, 4, 6]
    assert messages[0] == SEED
    assert [m["kind"] for m in messages] == [
        "instructions",
        "request",
        "response",
        "request",
        "response",
        "request",
        "response",
    ]
    assert messages[1]["parts"] == [{"part_kind": "user-prompt", "content": "Is T-1 open?"}]
    assert messages[2]["parts"] == [
        {
            "part_kind": "tool-call",
            "tool_name": "lookup",
            "args": '{"ticket":"T-1"}',  # as sent back, not as the model spaced it
            "tool_call_id": "call_1",
        }
    ]
    assert "timestamp" not in json.dumps(messages)


def test_runcontext_log_shows_what_the_model_received(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    make_agent(server, RunContextCapability(builder(Clock()), session=path)).run_sync("Hi")
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from runcontext.cli import main; main()",
            "log",
            str(path),
            "--run",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for text in (HEAD, INSTRUCTIONS, "Hi", "build: 1"):
        assert text in shown, shown


def test_the_documented_example_runs_twice(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = re.search(
        r"<!-- tested: pydantic-ai -->\n```python\n(.*?)```",
        DOC.read_text(encoding="utf-8"),
        re.DOTALL,
    )
    assert example is not None
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.chdir(tmp_path)
    code = compile(example.group(1), f"{DOC.name}:pydantic-ai", "exec")
    for _ in range(2):  # the first run creates the transcript, the second continues it
        exec(code, {"__name__": "__example__"})
    with Session.open(tmp_path / "agent.jsonl") as session:
        assert len(session.runs()) == len(server.requests) == 2
        assert session.messages()[0]["kind"] == "request"


def test_changed_instructions_are_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """The transcript records the agent's instructions as the conversation's first message:
    instructions that change between runs of one conversation do not continue it."""
    path = tmp_path / "agent.jsonl"
    first = make_agent(server, RunContextCapability(builder(Clock()), session=path)).run_sync("Hi")
    agent = make_agent(
        server, RunContextCapability(builder(Clock()), session=path), instructions="Be terse."
    )
    with pytest.raises(ConversationMismatchError):
        agent.run_sync("Again", message_history=first.all_messages())
    assert len(server.requests) == 1


def test_session_argument(server: FakeServer) -> None:
    with pytest.raises(
        TypeError,
        match=r"session: expected a runcontext.Session, a transcript "
        r"path or a postgresql:// URI, got int",
    ):
        RunContextCapability(builder(Clock()), session=3)  # type: ignore[arg-type]


def test_a_budget_by_model_is_checked_before_the_request(server: FakeServer) -> None:
    """The budget of the model the agent calls (its ``model_name``), counted before sending."""
    capability = RunContextCapability(
        builder(Clock()), budget={"gpt-6-luna": Budget(context_window=40)}, counter=len
    )
    with pytest.raises(BudgetExceededError, match="window"):
        make_agent(server, capability).run_sync("Is T-1 open?")
    assert server.requests == []
    with pytest.raises(ValueError, match=r"no Budget for the model 'gpt-4.1'"):
        RunContextCapability(
            builder(Clock()),
            budget={"gpt-6-luna": Budget(context_window=40)},
            counter=len,
            model="gpt-4.1",
        )


def test_each_run_records_its_count_and_what_was_billed(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(
        builder(Clock()), session=path, budget=Budget(context_window=100_000), counter=len
    )
    server.tool("lookup", ticket="T-1")
    make_agent(server, capability).run_sync("Is T-1 open?")
    with Session.open(path) as session:
        runs = session.runs()
    assert len(runs) == 2
    head, _ = RequestCounter(len).count_context(builder(Clock()).build()[0])
    for run in runs:
        tokens: Any = run.tokens
        assert tokens["head"] == head and tokens["limit"] == 100_000
        assert tokens["tools"] > 0  # the lookup tool's declaration is counted
        # The fake server bills 10 prompt tokens and 5 completion tokens, none cached.
        assert tokens["billed"] == {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}


@pytest.fixture
def postgres_uri() -> Iterator[str]:
    """A ``postgresql://`` URI naming a new session in a new database with the schema."""
    dsn = os.environ.get("RUNCONTEXT_TEST_POSTGRES_DSN")
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail("RUNCONTEXT_TEST_POSTGRES_DSN is not set (CI is set: a failure)")
        pytest.skip("PostgreSQL tests need a server: RUNCONTEXT_TEST_POSTGRES_DSN is not set")
    import psycopg

    from runcontext.transcript.postgres import init_schema

    name = f"rc_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        base, _, query = dsn.partition("?")
        database = base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")
        init_schema(database)
        yield database + ("&" if query else "?") + "session=conversation-1"
    finally:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


def test_a_postgresql_uri(server: FakeServer, postgres_uri: str) -> None:
    first = make_agent(server, RunContextCapability(builder(Clock()), session=postgres_uri))
    result = first.run_sync("Hi")
    later = make_agent(server, RunContextCapability(builder(Clock()), session=postgres_uri))
    later.run_sync("Again", message_history=result.all_messages())
    with Session.open(postgres_uri) as session:
        assert [run.messages for run in session.runs()] == [2, 4]
        assert session.messages()[0] == SEED


def test_an_implausible_bill_is_warned_and_the_reply_recorded(tmp_path: Path) -> None:
    """More cached tokens than the prompt had: not a bill the budget can use. The reply was
    paid for, so the run is recorded, without ``billed``, as ``Loop`` records it."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    from runcontext.budget import UnreadableUsageWarning

    def answer(messages: Any, info: Any) -> ModelResponse:
        return ModelResponse(
            [TextPart("ok")], usage=RequestUsage(input_tokens=5, cache_read_tokens=9)
        )

    path = tmp_path / "agent.jsonl"
    capability = RunContextCapability(builder(Clock()), session=path, counter=len)
    agent: Agent[None, str] = Agent(FunctionModel(answer), capabilities=[capability])
    with pytest.warns(UnreadableUsageWarning, match=r"cache_read.*is recorded without it"):
        assert agent.run_sync("Hi").output == "ok"
    with Session.open(path) as session:
        (run,) = session.runs()
        tokens: Any = run.tokens
        assert "billed" not in tokens and tokens["head"] > 0
        assert session.messages()[-1]["parts"] == [{"part_kind": "text", "content": "ok"}]
