"""A transcript with compactions and elisions goes file → PostgreSQL → file byte for byte
(``runcontext transcript copy``), and reads back from PostgreSQL with its edits and each
run's conversation as it was sent."""

from __future__ import annotations

import importlib
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.cli import main  # noqa: E402
from runcontext.transcript import Compaction, Elision, Session  # noqa: E402

MOMENT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SYSTEM = {"role": "system", "content": "Be careful."}
USER = {"role": "user", "content": "Read the logs."}
REPLY = {"role": "assistant", "content": "The logs say X."}
MORE = {"role": "user", "content": "And then?"}
SUMMARY = {"role": "user", "content": "Summary: the logs say X."}


def test_a_compacted_transcript_copies_to_postgres_and_back_byte_identically(
    tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "agent.jsonl"
    with Session.create(source, [SYSTEM, USER], clock=lambda: MOMENT) as session:
        session.record_run([SYSTEM, USER], None, REPLY)
        session.record_run([SYSTEM, USER, REPLY, MORE], None, REPLY)
        session.compact(1, 4, [SUMMARY], tokens_before=80, tokens_after=9)
        session.elide({2: {"role": "assistant", "content": "[cleared]"}})
        session.record_run([*session.messages(), MORE], None, REPLY)
    target = f"{pg_dsn}&session=compacted&tenant=acme"
    assert main(["transcript", "copy", str(source), target]) == 0
    back = tmp_path / "back.jsonl"
    assert main(["transcript", "copy", target, str(back)]) == 0
    capsys.readouterr()
    assert back.read_bytes() == source.read_bytes()
    with Session.open(target) as stored:
        edits = stored.edits()
        assert [type(edit) for edit in edits] == [Compaction, Elision]
        assert stored.messages_at(2) == [SYSTEM, USER, REPLY, MORE]
        assert stored.messages_at(3)[:2] == [SYSTEM, SUMMARY]
        # Appending after the edits over PostgreSQL continues the compacted conversation.
        stored.record_run([*stored.messages(), MORE], None, REPLY)
        assert stored.runs()[-1].messages == 6
