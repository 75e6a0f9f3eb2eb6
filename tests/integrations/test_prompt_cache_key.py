"""prompt_cache_key: one stable key per conversation, from its transcript's seed."""

from __future__ import annotations

from pathlib import Path

import pytest

import runcontext
from runcontext import Session
from runcontext.integrations import prompt_cache_key


def test_from_a_session_and_from_its_seed(tmp_path: Path) -> None:
    first = {"role": "user", "content": "hi"}
    session = Session.create(tmp_path / "t.jsonl", [first])
    key = prompt_cache_key(session)
    assert key == prompt_cache_key(runcontext.digest(first)) == "rc-" + session.seed[7:39]
    assert len(key) == 35
    assert prompt_cache_key(runcontext.digest({"role": "user", "content": "other"})) != key


def test_refuses_what_is_not_a_seed() -> None:
    with pytest.raises(ValueError, match=r"seed: expected a runcontext.Session or a 'blake3:…'"):
        prompt_cache_key("conversation-1")
