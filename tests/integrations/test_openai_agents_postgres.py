"""``session=`` as a ``postgresql://`` URI: the filter creates the transcript on the first
request and a later filter (another process) opens it, as with a path."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from fakeserver import FakeServer
from frameworks import require

require("agents", "openai-agents")

from agents import RunConfig, Runner, SQLiteSession  # noqa: E402
from test_openai_agents import INSTRUCTIONS, agent  # noqa: E402

from runcontext import Session  # noqa: E402
from runcontext.integrations.openai_agents import (  # noqa: E402
    RunContextFilter,
    RunContextSession,
)

from turnfacts import Clock, builder  # noqa: E402


@pytest.fixture
def database() -> Iterator[str]:
    """A URI naming a new database with the runcontext schema, dropped afterwards. Without a
    server (``RUNCONTEXT_TEST_POSTGRES_DSN``) the test skips, or fails in CI."""
    dsn = os.environ.get("RUNCONTEXT_TEST_POSTGRES_DSN", "")
    if not dsn.startswith(("postgresql://", "postgres://")):
        if os.environ.get("CI"):
            pytest.fail("RUNCONTEXT_TEST_POSTGRES_DSN is not a postgresql:// URI")
        pytest.skip("PostgreSQL tests need RUNCONTEXT_TEST_POSTGRES_DSN (a postgresql:// URI)")
    psycopg = pytest.importorskip("psycopg")
    from runcontext.transcript.postgres import init_schema

    name = f"rc_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    parts = urlsplit(dsn)
    uri = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
    try:
        init_schema(uri)
        yield uri
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


def test_a_postgres_transcript_is_created_then_opened(server: FakeServer, database: str) -> None:
    uri = f"{database}&session=agents-1"
    sdk_session = SQLiteSession("c1")
    for run in range(2):  # two processes running the same script
        session = RunContextSession(sdk_session, uri)
        config = RunConfig(
            call_model_input_filter=RunContextFilter(builder(Clock()), session=session)
        )
        Runner.run_sync(agent(server), f"Question {run}?", session=session, run_config=config)
        assert session.transcript is not None
        session.transcript.close()
    with Session.open(uri) as transcript:
        messages = transcript.messages()
        assert messages[0] == INSTRUCTIONS
        assert [m.get("content") for m in messages if m.get("role") == "user"] == [
            "Question 0?",
            "Question 1?",
        ]
        assert len(transcript.runs()) == 2
