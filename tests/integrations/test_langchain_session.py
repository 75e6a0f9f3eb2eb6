"""RunContextMiddleware's ``session=``: a Session, a transcript path or a ``postgresql://`` URI,
opened or created on the first request, so the same program runs a first time and a hundredth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from frameworks import require
from turnfacts import Clock, builder

require("langchain.agents", "langchain")
require("langchain_openai", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from transcript.conftest import pg_database, pg_dsn, postgres_server  # noqa: E402, F401

from runcontext import Session  # noqa: E402
from runcontext.integrations.langchain import RunContextMiddleware  # noqa: E402
from runcontext.transcript import ConversationMismatchError, SeedMismatchError  # noqa: E402

# pg_database, pg_dsn, postgres_server: the store tests' PostgreSQL fixtures (a new database
# per test).
QUESTION = {"role": "user", "content": "What changed on this branch?"}


def program(
    server: FakeServer, target: Any, memory: Any = None, question: Any = QUESTION
) -> RunContextMiddleware:
    """The documented one-liner, run as a script: a new middleware every time; ``memory`` is
    the agent's persistent checkpointer (the conversation's thread continues run after run)."""
    middleware = RunContextMiddleware(builder(Clock()), session=target)
    model = ChatOpenAI(model="gpt-4.1", base_url=server.url + "/v1", api_key="sk-fake")
    agent = create_agent(
        model, system_prompt="Answer briefly.", middleware=[middleware], checkpointer=memory
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [question]}, config)
    return middleware


def test_a_path_is_created_then_opened(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    memory = InMemorySaver()
    for run in range(3):  # never FileExistsError
        question = QUESTION if run == 0 else {"role": "user", "content": f"And now ({run})?"}
        program(server, str(path), memory, question).close()
    with Session.open(path) as session:
        assert session.messages()[0] == {"role": "system", "content": "Answer briefly."}
        assert [run.messages for run in session.runs()] == [2, 4, 6]
        assert [dict(run.context.facts)["build"] for run in session.runs()] == ["1"] * 3


def test_a_conversation_started_afresh_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    """Without the agent's memory the second run is another conversation with the same first
    messages: the transcript, append-only, refuses it before anything is sent."""
    path = tmp_path / "agent.jsonl"
    program(server, path).close()
    with pytest.raises(ConversationMismatchError, match="a transcript is append-only"):
        program(server, path)
    assert len(server.requests) == 1


def test_a_path_of_another_conversation_is_refused_before_the_call(
    server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    Session.create(path, [{"role": "user", "content": "another conversation"}]).close()
    with pytest.raises(SeedMismatchError, match="does not continue this transcript"):
        program(server, path)
    assert server.requests == []


def test_a_postgresql_uri(server: FakeServer, pg_dsn: str) -> None:  # noqa: F811
    uri = pg_dsn + ("&" if "?" in pg_dsn else "?") + "session=lc-1"
    memory = InMemorySaver()
    program(server, uri, memory).close()
    program(server, uri, memory, {"role": "user", "content": "And now?"}).close()
    with Session.open(uri) as session:
        assert len(session.runs()) == 2
        assert session.messages()[1] == QUESTION


def test_a_session_that_is_not_one_is_refused() -> None:
    with pytest.raises(
        TypeError,
        match=r"session: expected a runcontext.Session, a transcript path or a postgresql:// "
        r"URI, or None, got int",
    ):
        RunContextMiddleware(builder(Clock()), session=3)  # type: ignore[arg-type]
