"""What is written with a reader's settings reads with them: one message rule and one line cap
for the writer and the reader (docs/TRANSCRIPT.md, ``message`` and *Limits*), refused before
anything is written; and what ``verify_bytes`` answers for a version 1 file and a cap of 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import runcontext
from runcontext import canonical_json
from runcontext._core import DEFAULT_MAX_LINE_BYTES
from runcontext.transcript import (
    Session,
    TranscriptFormatError,
    UnchainedTranscriptWarning,
    verify_bytes,
)

SEED = {"role": "user", "content": "Summarise the log."}
VECTORS = Path(__file__).resolve().parent.parent / "docs" / "vectors" / "transcript-v2.json"


def _record_len(index: int, message: dict[str, Any]) -> int:
    """The length of a message's record line without its newline (docs/TRANSCRIPT.md)."""
    body = {"index": index, "message": message, "type": "message"}
    return len(canonical_json({**body, "chain": "blake3:" + "0" * 64}))


# --- the message rule -----------------------------------------------------------------------


def test_a_role_that_is_not_a_string_beside_a_string_type_is_written_and_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    reasoning = {"role": None, "type": "reasoning", "id": "rs_1", "summary": []}
    output = {"role": 3, "type": "function_call_output", "call_id": "c1", "output": "ok"}
    reply = {"role": None, "type": "message", "content": "Done."}
    with Session.create(path, [SEED, reasoning]) as session:
        session.append_messages([output])
        session.check_recordable([SEED, reasoning, output])
        session.record_run([SEED, reasoning, output], None, reply)
    with Session.open(path) as session:
        assert session.messages() == [SEED, reasoning, output, reply]
    assert verify_bytes(path.read_bytes()).messages == [SEED, reasoning, output, reply]


BAD_MESSAGES = [
    (
        {"role": None},
        "a message needs a string 'role' (a chat message) or a string 'type' "
        "(a Responses item), got 'role' None and 'type' missing",
    ),
    ({"role": 1, "type": None, "content": "x"}, "got 'role' 1 and 'type' None"),
    ({"content": "x"}, "the message has no 'role' key (or, for a Responses item, 'type')"),
]


@pytest.mark.parametrize(("bad", "shown"), BAD_MESSAGES)
def test_a_message_without_a_string_role_or_type_is_refused_before_writing(
    tmp_path: Path, bad: dict[str, Any], shown: str
) -> None:
    path = tmp_path / "t.jsonl"
    with pytest.raises(TypeError, match=r"^messages\[1\]: ") as refused:
        Session.create(path, [SEED, bad])
    assert shown in str(refused.value)
    assert not path.exists(), "nothing was written"
    with Session.create(path, [SEED]) as session:
        before = path.read_bytes()
        with pytest.raises(TypeError, match=r"^messages\[0\]: ") as refused:
            session.append_messages([bad])
        assert shown in str(refused.value)
        for call in (session.check_recordable, session.record_run):
            with pytest.raises(TypeError, match=r"^messages\[1\]: ") as refused:
                call([SEED, bad])
            assert shown in str(refused.value)
        with pytest.raises(TypeError, match=r"^reply: ") as refused:
            session.record_run([SEED], None, bad)
        assert shown in str(refused.value)
        assert path.read_bytes() == before
    with Session.open(path) as session:
        assert session.messages() == [SEED]


def test_the_reader_refuses_what_the_writer_refuses(tmp_path: Path) -> None:
    """A file holding such a message (written by another tool) is refused as member-value."""
    cases = {case["name"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    case = cases["message-role-null-without-type"]
    with pytest.raises(TranscriptFormatError, match=r"got 'role' null and 'type' nothing") as e:
        verify_bytes(case["text"].encode())
    assert (e.value.kind, e.value.line) == ("member-value", 3)


# --- the line cap ---------------------------------------------------------------------------


def test_a_record_over_the_line_cap_is_refused_before_writing(tmp_path: Path) -> None:
    cap = 400
    path = tmp_path / "t.jsonl"
    empty = {"content": "", "role": "user"}
    exact = {"content": "x" * (cap - _record_len(1, empty)), "role": "user"}
    over = {"content": "x" * (cap - _record_len(1, empty) + 1), "role": "user"}
    assert (_record_len(1, exact), _record_len(1, over)) == (cap, cap + 1)
    refusal = (
        r"^messages\[1\]: the message cannot be stored in a transcript: the message would "
        r"make a 401-byte record, longer than the transcript's line cap of 400 bytes, so a "
        r"reader with that cap would refuse the whole transcript; store less in one record, "
        r"or give a larger max_line_bytes= to Session.create or Session.open"
    )
    with pytest.raises(ValueError, match=refusal):
        Session.create(path, [SEED, over], max_line_bytes=cap)
    assert not path.exists(), "nothing was written"
    with Session.create(path, [SEED], max_line_bytes=cap) as session:
        before = path.read_bytes()
        with pytest.raises(ValueError, match=refusal.replace("1", "0", 1)):
            session.append_messages([over])
        with pytest.raises(ValueError, match=refusal):
            session.check_recordable([SEED, over])
        with pytest.raises(ValueError, match=refusal):
            session.record_run([SEED, over])
        big_section = runcontext.RunContext(head_sections=[("AGENTS.md", "y" * cap)])
        with pytest.raises(ValueError, match=r'^section "AGENTS.md" would make a \d+-byte rec'):
            session.record_run([SEED], big_section)
        big_fact = runcontext.RunContext(facts=[("f", "z" * cap)])
        with pytest.raises(ValueError, match=r"^the run-context record would make a \d+-byte"):
            session.record_run([SEED], big_fact)
        assert path.read_bytes() == before
        session.append_messages([exact])
    assert max(len(line) for line in path.read_bytes().split(b"\n")) == cap
    with Session.open(path, max_line_bytes=cap) as session:
        assert session.messages() == [SEED, exact]


def test_the_default_cap_is_the_default_readers(tmp_path: Path) -> None:
    """A message whose record is one byte over 64 MiB is refused with the defaults, so the
    default Session.open and runcontext log never meet it."""
    path = tmp_path / "t.jsonl"
    empty = {"content": "", "role": "user"}
    over = {"content": "x" * (DEFAULT_MAX_LINE_BYTES - _record_len(1, empty) + 1), "role": "user"}
    with Session.create(path, [SEED]) as session:
        before = path.read_bytes()
        refusal = (
            r"^messages\[{}\]: the message cannot be stored in a transcript: the message would "
            r"make a 67108865-byte record, longer than the transcript's line cap of 67108864 "
        )
        with pytest.raises(ValueError, match=refusal.format(1)):
            session.check_recordable([SEED, over])
        with pytest.raises(ValueError, match=refusal.format(0)):
            session.append_messages([over])
        assert path.read_bytes() == before


# --- verify_bytes -----------------------------------------------------------------------------


def test_verify_bytes_gives_no_chain_for_a_version_1_file() -> None:
    cases = {case["name"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    case = cases["v1-transcript"]
    assert case["expect"]["chain"] is None
    with pytest.warns(UnchainedTranscriptWarning):
        verified = verify_bytes(case["text"].encode())
    assert (verified.chain, verified.unchained) == (None, True)


@pytest.mark.parametrize("call", ["verify_bytes", "open", "create"])
def test_a_line_cap_of_0_is_refused_with_its_reason(tmp_path: Path, call: str) -> None:
    refusal = (
        r"^max_line_bytes: expected at least 1, got 0 \(there is no 'unlimited': every record "
        r"is longer than 0 bytes; give a large cap instead\)$"
    )
    with pytest.raises(ValueError, match=refusal):
        if call == "verify_bytes":
            verify_bytes(b"", max_line_bytes=0)
        elif call == "open":
            Session.open(tmp_path / "t.jsonl", max_line_bytes=0)
        else:
            Session.create(tmp_path / "t.jsonl", [SEED], max_line_bytes=0)
    assert not (tmp_path / "t.jsonl").exists()
