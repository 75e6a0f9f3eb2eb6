"""``runcontext transcript copy`` between files is open-or-create: a destination that holds
the first records of the source (an earlier copy) gets the ones it lacks; one that holds all
of them is left as it is; any other existing destination is refused and left untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.transcript.session import Session

SEED = {"role": "system", "content": "You are a careful coding agent."}


def record(path: Path, runs: int, *, start: int = 0) -> None:
    """Runs ``start`` to ``runs - 1`` of one conversation (creating the file if ``start`` is 0)."""
    conversation = [SEED]
    for n in range(start):
        conversation += [
            {"role": "user", "content": f"turn {n}"},
            {"role": "assistant", "content": "ok"},
        ]
    session = Session.create(path, conversation) if start == 0 else Session.open(path)
    with session:
        for n in range(start, runs):
            conversation = [*conversation, {"role": "user", "content": f"turn {n}"}]
            context = RunContext(facts=[("turn", str(n))])
            session.record_run(conversation, context, {"role": "assistant", "content": "ok"})
            conversation = [*conversation, {"role": "assistant", "content": "ok"}]


def copy(capsys: pytest.CaptureFixture[str], source: Path, target: Path) -> tuple[int, str, str]:
    status = cli.main(["transcript", "copy", str(source), str(target)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_an_earlier_copy_is_brought_up_to_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "agent.jsonl", tmp_path / "backup.jsonl"
    record(source, 2)
    assert copy(capsys, source, target) == (
        0,
        f"copied 8 records from {source} to {target}\n",
        "",
    )
    record(source, 4, start=2)  # the session went on
    assert copy(capsys, source, target) == (
        0,
        f"appended 6 records from {source} to {target}, which held the first 8\n",
        "",
    )
    assert target.read_bytes() == source.read_bytes()
    assert copy(capsys, source, target) == (
        0,
        f"{target} already holds the 14 records of {source}: nothing to copy\n",
        "",
    )
    with Session.open(target, writable=False) as copied:
        assert len(copied.runs()) == 4


def test_another_destination_is_refused_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, other = tmp_path / "agent.jsonl", tmp_path / "other.jsonl"
    record(source, 2)
    record(other, 1)  # the same first messages, recorded at another time: another session
    before = other.read_bytes()
    status, out, err = copy(capsys, source, other)
    assert (status, out) == (1, "")
    assert err == (
        f"runcontext transcript copy: {other} already exists and is not a copy of {source}: "
        "its record 1 differs; nothing was written: choose another DST\n"
    )
    assert other.read_bytes() == before

    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(source.read_bytes()[:-40])  # an earlier copy cut mid-record
    before = torn.read_bytes()
    status, out, err = copy(capsys, source, torn)
    assert (status, out) == (1, "")
    assert err == (
        f"runcontext transcript copy: {torn} already exists and its last record is torn (a "
        "writer stopped mid-line); nothing was written: choose another DST\n"
    )
    assert torn.read_bytes() == before
