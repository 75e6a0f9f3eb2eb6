"""Every command's error paths speak the command line's language: one line on stderr, exit
status 1, flags and file names instead of Python arguments, methods and ``[Errno N]``."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import RunContext, cli
from runcontext.transcript.session import Session

# What only a program could act on, or what the OS module prints for one.
PYTHON_ADVICE = (
    "Session.",
    "session_id",
    "max_line_bytes",
    "writable=",
    "repair=",
    "=True",
    "DSN",
    "[Errno",
    "Traceback",
    "Error:",  # an exception's class name
)
SEED = {"role": "system", "content": "You are a careful coding agent."}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    transcript = tmp_path / "t.jsonl"
    with Session.create(transcript, [SEED]) as session:
        session.record_run([SEED], RunContext(facts=[("date", "2026-12-01")]))
    other = tmp_path / "other.jsonl"
    with Session.create(other, [{"role": "user", "content": "another session"}]):
        pass
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_bytes(b"\n" + transcript.read_bytes())
    (tmp_path / "dir").mkdir()
    return {
        "t": str(transcript),
        "other": str(other),
        "empty": str(tmp_path / "empty.jsonl"),
        "blank": str(tmp_path / "blank.jsonl"),
        "dir": str(tmp_path / "dir"),
        "missing": str(tmp_path / "missing.jsonl"),
        "new": str(tmp_path / "new.jsonl"),
    }


CASES = [
    (["log", "{missing}"], "runcontext log: no such file: {missing}"),
    (["log", "{dir}"], "runcontext log: {dir}: a directory, not a regular file"),
    (
        ["log", "{empty}"],
        "runcontext log: {empty}:1: no header record: the file is empty or holds only a torn "
        "first line; it is not a transcript\n",
    ),
    (["log", "{blank}"], "{blank}:1: the file is empty or starts with a blank line: it is not a"),
    (["log", "{t}", "--session", "a"], "{t}: --session and --tenant are for a PostgreSQL URI"),
    (
        ["log", "postgresql://db.invalid/agents"],
        "runcontext log: postgresql://db.invalid/agents: no session id; pass --session ID or "
        "add ?session=ID to the URI",
    ),
    (
        ["log", "postgresql://db.invalid/agents?session=a", "--session", "b"],
        "runcontext log: --session 'b' differs from the URI's session='a'; give it once",
    ),
    (
        ["log", "postgresql://db.invalid/agents?session=a&tenant=t1", "--tenant", "t2"],
        "runcontext log: --tenant 't2' differs from the URI's tenant='t1'; give it once\n",
    ),
    (["log", "{t}", "--max-line-bytes", "10"], "read it with a larger --max-line-bytes N"),
    (["log", "{t}", "--run", "2"], "runcontext log: {t}: no run 2: the transcript has runs 1 to 1"),
    (["canon", "{missing}"], "runcontext canon: no such file: {missing}"),
    (["canon", "{dir}"], "runcontext canon: {dir}: is a directory"),
    (["verify-vectors", "{missing}"], "runcontext verify-vectors: no such file: {missing}"),
    (["verify-vectors", "--results", "{t}"], "--results compares against one vectors file"),
    (["show", "{missing}"], "runcontext show: {missing}: no such directory"),
    (["show", "{t}"], "runcontext show: {t}: is not a directory"),
    (
        ["transcript", "copy", "{missing}", "{new}"],
        "runcontext transcript copy: no such file: {missing}",
    ),
    (["transcript", "copy", "{empty}", "{new}"], "{empty}:1: no header record: the file is"),
    (["transcript", "copy", "s3://bucket/t", "{new}"], "s3://bucket/t: unknown store scheme"),
    (["transcript", "copy", "{t}", "{dir}"], "runcontext transcript copy: {dir}: "),
    (
        ["transcript", "copy", "{t}", "{other}"],
        "runcontext transcript copy: {other} already exists and is not a copy of {t}: its "
        "record 1 differs; nothing was written: choose another DST",
    ),
    (
        ["transcript", "init", "postgresql://nobody@/nodb?host=/nonexistent"],
        "runcontext transcript init: postgresql://nobody@/nodb?host=/nonexistent: cannot "
        "connect to PostgreSQL",
    ),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_errors_are_one_line_in_command_line_terms(
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    expected: str,
) -> None:
    assert cli.main([word.format(**files) for word in argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected.format(**files) in captured.err
    assert captured.err.startswith(
        f"runcontext {' '.join(argv[: 2 if argv[0] == 'transcript' else 1])}: "
    )
    assert captured.err.count("\n") == 1, captured.err
    assert not [advice for advice in PYTHON_ADVICE if advice in captured.err], captured.err
