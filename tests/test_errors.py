"""Every exception runcontext exports survives pickle and copy, so it crosses process pools."""

from __future__ import annotations

import copy
import functools
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import runcontext
import runcontext.budget
import runcontext.transcript
from runcontext import RunContext, RunContextError, Session, canonical_json, canonicalize_text
from runcontext.errors import RunContextTypeError


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except Exception as error:
        return error
    raise AssertionError("expected an exception")


def _samples(tmp_path: Path) -> list[BaseException]:
    """One instance of each exported exception class, triggered for real where that is easy."""
    session_path = tmp_path / "s.jsonl"
    hi = {"role": "user", "content": "hi"}
    with Session.create(session_path, [hi, {"role": "assistant", "content": "hello"}]) as session:
        seed_mismatch = _raised(lambda: session.check_seed([{"role": "user", "content": "yo"}]))
        conversation_mismatch = _raised(
            lambda: session.check_conversation([hi, {"role": "assistant", "content": "bye"}])
        )
    with Session.create(tmp_path / "r.jsonl", [hi]) as replaced:
        os.replace(session_path, tmp_path / "r.jsonl")
        replaced_error = _raised(lambda: replaced.append_messages([hi]))
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"not json\n")
    where = tmp_path / "t.jsonl"
    return [
        _raised(lambda: canonicalize_text(b'{"a": 1, "a": 2}')),  # DuplicateKeyError
        _raised(lambda: canonical_json(float("nan"))),  # InvalidNumberError
        _raised(lambda: canonical_json("\ud800")),  # InvalidStringError
        _raised(lambda: canonicalize_text(b"[1,]")),  # JSONSyntaxError
        _raised(lambda: canonical_json(_nested(600))),  # NestingTooDeepError
        _raised(lambda: canonical_json(b"x")),  # UnsupportedTypeError
        runcontext.CanonicalJSONError("base", kind="k", path="$.a", line=1, column=2, offset=3),
        _raised(lambda: RunContext(facts={"a": "b"})),  # type: ignore[arg-type]  # RunContextTypeError
        _raised(lambda: RunContext(facts=[("a", "x"), ("a", "y")])),  # RunContextValueError
        RunContextError("base", kind="k", argument="facts", index=2),
        seed_mismatch,
        conversation_mismatch,
        _raised(lambda: Session.open(garbage)),  # TranscriptFormatError
        runcontext.TranscriptError("bad", path=where, line=None),
        runcontext.transcript.TranscriptVersionError("too new", path=where, line=1),
        runcontext.transcript.TranscriptDigestError("altered", path=where, line=4),
        runcontext.transcript.TornTranscriptError("torn", path=where, line=7),
        replaced_error,  # TranscriptReplacedError
        runcontext.transcript.TornTranscriptWarning("torn tail"),
        runcontext.transcript.UnchainedTranscriptWarning("version 1"),
        runcontext.budget.UnreadableUsageWarning("no usage"),
        runcontext.transcript.RunNotRecordedError("lost", path=where, outcome={"reply": 1}),
        _raised(
            lambda: runcontext.budget.Budget(context_window=10).check(
                runcontext.budget.RequestCount("m", 5, 5, 5, 0, "estimated")
            )
        ),  # BudgetExceededError
    ]


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def _exported_exception_classes() -> set[type[BaseException]]:
    found = set()
    for module in (runcontext, runcontext.errors, runcontext.transcript, runcontext.budget):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                found.add(obj)
    return found


def test_samples_cover_every_exported_exception(tmp_path: Path) -> None:
    assert {type(e) for e in _samples(tmp_path)} == _exported_exception_classes()


@pytest.mark.parametrize("duplicate", [pickle.loads, copy.copy, copy.deepcopy])
def test_round_trip_keeps_type_message_and_attributes(
    tmp_path: Path, duplicate: Callable[[object], object]
) -> None:
    for error in _samples(tmp_path):
        source = pickle.dumps(error) if duplicate is pickle.loads else error
        again = duplicate(source)
        assert type(again) is type(error)
        assert isinstance(again, BaseException)
        assert str(again) == str(error) and again.args == error.args
        assert again.__dict__ == error.__dict__
        if not isinstance(error, Warning):
            assert vars(again), f"{type(error).__name__} carries no attributes to compare"


def test_attributes_survive_with_their_values(tmp_path: Path) -> None:
    error = runcontext.transcript.ConversationMismatchError(
        "differs", path=tmp_path / "t.jsonl", line=3, index=1, recorded="blake3:a", given=None
    )
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == f"{tmp_path / 't.jsonl'}:3: differs"  # the path is not prefixed twice
    assert (again.file, again.line, again.index, again.recorded, again.given) == (
        str(tmp_path / "t.jsonl"),
        3,
        1,
        "blake3:a",
        None,
    )


def test_error_raised_in_a_process_pool_worker_reaches_the_parent() -> None:
    # The worker is a partial of RunContext itself, so the child needs no test module.
    build = functools.partial(RunContext, facts={"date": "today"})  # type: ignore[arg-type]
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(build)
        with pytest.raises(RunContextError) as info:
            future.result()
    assert type(info.value) is RunContextTypeError
    assert (info.value.kind, info.value.argument, info.value.index) == ("mapping", "facts", None)
