"""``Session.create`` on an existing file and ``Session.open`` on a missing one: each error
names the transcript (never the hidden temporary file) and the other method."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}


def test_create_on_an_existing_file_points_to_open(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    Session.create(path, [SEED]).close()
    before = path.read_bytes()
    with pytest.raises(FileExistsError) as caught:
        Session.create(path, [SEED])
    message = str(caught.value)
    assert "agent.jsonl already exists; open it with Session.open(path) to resume it" in message
    assert ".tmp" not in message and caught.value.filename is None
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.jsonl"]  # no temporary left


def test_open_of_a_missing_file_points_to_create(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        Session.open(tmp_path / "agent.jsonl")
    message = str(caught.value)
    assert "No such file: " in message and "agent.jsonl" in message
    assert "start a transcript with Session.create(path, messages)" in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
