"""The records the extension hands out (Section, Run, TornTail): named fields, equality,
hashing, pickling, pattern matching; one shape from the core to the command line."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runcontext import RunContext
from runcontext.section import Section
from runcontext.transcript import Run, Session, TornTail

SEED = {"role": "user", "content": "Fix the test."}
TOKENS = {
    "conversation": 3,
    "head": 5,
    "quality": "estimated",
    "tail": 7,
    "tools": 0,
}


def recorded(tmp_path: Path) -> tuple[Run, RunContext]:
    context = RunContext(
        head_sections=[("rules", "Use tabs.")],
        facts=[("date", "2026-12-06")],
        tail_sections=[("notes", "None.")],
    )
    with Session.create(tmp_path / "t.jsonl", [SEED]) as session:
        run = session.record_run([SEED], context, tokens=TOKENS)
    return run, context


def test_a_section_has_named_fields_and_no_position_access() -> None:
    section = RunContext(head_sections=[("rules", "Use tabs.\n")]).sections[0]
    assert isinstance(section, Section)
    assert (section.position, section.name, section.text) == ("head", "rules", "Use tabs.")
    assert section.digest.startswith("blake3:")
    with pytest.raises(TypeError):
        section[0]  # type: ignore[index]
    with pytest.raises(AttributeError):
        section.name = "other"  # type: ignore[misc]


def test_sections_compare_hash_pickle_and_match_by_their_fields() -> None:
    a = Section("head", "rules", "Use tabs.", "blake3:00")
    assert a == Section("head", "rules", "Use tabs.", "blake3:00")
    assert a != Section("tail", "rules", "Use tabs.", "blake3:00")
    assert a != ("head", "rules", "Use tabs.", "blake3:00")
    assert len({a, Section("head", "rules", "Use tabs.", "blake3:00")}) == 1
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(a) == (
        "Section(position='head', name='rules', text='Use tabs.', digest='blake3:00')"
    )
    match a:
        case Section(position, name, text, digest):
            assert (position, name, text, digest) == ("head", "rules", "Use tabs.", "blake3:00")
        case _:
            pytest.fail("Section did not match by position")


def test_a_section_refuses_a_position_that_is_neither_head_nor_tail() -> None:
    with pytest.raises(ValueError, match="position: expected 'head' or 'tail', got 'middle'"):
        Section("middle", "rules", "Use tabs.", "blake3:00")  # type: ignore[arg-type]


def test_a_written_run_is_named_and_holds_the_context_it_was_given(tmp_path: Path) -> None:
    run, context = recorded(tmp_path)
    assert run.number == 1 and run.messages == 1
    assert run.digest == context.digest
    assert run.context is context
    assert run.sections == context.sections and run.facts == context.facts
    assert run.tokens == TOKENS
    assert isinstance(run.time, datetime) and run.time.tzinfo is not None
    assert run.time.astimezone(UTC).isoformat().replace("+00:00", "Z") == run.timestamp
    with pytest.raises(AttributeError):
        run.number = 2  # type: ignore[misc]


def test_a_run_read_back_equals_the_run_written(tmp_path: Path) -> None:
    written, context = recorded(tmp_path)
    with Session.open(tmp_path / "t.jsonl") as session:
        (read,) = session.runs()
    assert read == written and hash(read) == hash(written)
    assert read.context == context and read.context is not context
    assert read.sections == written.sections


def test_runs_pickle_and_match_by_their_fields(tmp_path: Path) -> None:
    run, context = recorded(tmp_path)
    again = pickle.loads(pickle.dumps(run))
    assert again == run and again.context == context
    match run:
        case Run(number, time, digest):
            assert (number, digest) == (1, context.digest)
            assert time == run.time
        case _:
            pytest.fail("Run did not match by position")


def test_runs_differing_in_any_field_are_not_equal(tmp_path: Path) -> None:
    run, _ = recorded(tmp_path)
    fields = (run.number, run.timestamp, run.digest, run.messages, run.tokens)
    same = Run(*fields, run.sections, run.facts)
    assert same == run
    assert Run(2, *fields[1:], run.sections, run.facts) != run
    assert Run(*fields[:4], None, run.sections, run.facts) != run
    assert Run(*fields, run.sections, (("date", "2026-12-07"),)) != run
    assert Run(*fields, (), run.facts) != run


def test_a_torn_tail_is_a_named_record() -> None:
    torn = TornTail(line=3, offset=120, length=17)
    assert (torn.line, torn.offset, torn.length) == (3, 120, 17)
    assert torn == TornTail(3, 120, 17) and torn != TornTail(3, 120, 18)
    assert len({torn, TornTail(3, 120, 17)}) == 1
    assert pickle.loads(pickle.dumps(torn)) == torn
    assert repr(torn) == "TornTail(line=3, offset=120, length=17)"
    match torn:
        case TornTail(line, offset, length):
            assert (line, offset, length) == (3, 120, 17)
        case _:
            pytest.fail("TornTail did not match by position")
