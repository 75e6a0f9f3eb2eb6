"""prune over a directory of transcript files: old transcripts by their last write, never a
file being written, never anything that is not a transcript; and ``runcontext transcript
prune`` (text, JSON, the dry run, errors) over files and PostgreSQL."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from fleet_data import context, file_session

from runcontext.cli import main
from runcontext.transcript import Session
from runcontext.transcript.errors import TranscriptReplacedError
from runcontext.transcript.files import FileStore
from runcontext.transcript.prune import prune

OLD = timedelta(days=30)


def age(path: Path, days: float = 40) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then), follow_symlinks=False)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """old.jsonl (40 days idle), new.jsonl (written now), and old files that are not
    transcripts: notes.txt, data.jsonl (JSON lines, not a transcript), a dot-file holding a
    transcript (a create's temporary file), a symlink to old.jsonl, a subdirectory."""
    age(file_session(tmp_path, "old.jsonl", [context(1, "main")]))
    file_session(tmp_path, "new.jsonl", [context(1, "main")])
    (tmp_path / "notes.txt").write_text("keep me\n")
    (tmp_path / "data.jsonl").write_text('{"type": "header"}\n')
    (tmp_path / ".new.jsonl.0a1b.tmp").write_bytes((tmp_path / "old.jsonl").read_bytes())
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "old.jsonl")
    (tmp_path / "sub").mkdir()
    for name in ("notes.txt", "data.jsonl", ".new.jsonl.0a1b.tmp", "link.jsonl", "sub"):
        age(tmp_path / name)
    return tmp_path


def names(directory: Path) -> set[str]:
    return set(os.listdir(directory))


def test_old_transcripts_go_and_nothing_else(directory: Path) -> None:
    before = names(directory)
    plan = prune(directory, older_than=OLD)
    assert [(s.session_id, s.bytes) for s in plan.sessions] == [
        ("old.jsonl", (directory / "old.jsonl").stat().st_size)
    ]
    assert names(directory) == before
    done = prune(directory, older_than=OLD, delete=True)
    assert [s.session_id for s in done.sessions] == ["old.jsonl"]
    assert names(directory) == before - {"old.jsonl"}
    assert prune(directory, older_than=OLD, delete=True).sessions == []


def test_by_name(directory: Path) -> None:
    assert [s.session_id for s in prune(directory, session_ids=["new.jsonl"]).sessions] == [
        "new.jsonl"
    ]
    assert prune(directory, session_ids=["notes.txt"]).sessions == []
    assert prune(directory, session_ids=["new.jsonl"], older_than=OLD).sessions == []


def test_a_file_being_written_is_kept(directory: Path) -> None:
    store = FileStore(directory / "old.jsonl")
    store.open(writable=True)
    try:
        with store.writing():  # a writer holds the lock, in the middle of an append
            report = prune(directory, older_than=OLD, delete=True)
    finally:
        store.close()
    assert report.sessions == []
    assert [s.session_id for s in report.kept] == ["old.jsonl"]
    assert "old.jsonl" in names(directory)


def test_a_writer_of_a_pruned_file_writes_nothing(directory: Path) -> None:
    with Session.open(directory / "old.jsonl") as session:
        prune(directory, older_than=OLD, delete=True)
        messages = [*session.messages(), {"role": "user", "content": "hello?"}]
        with pytest.raises(TranscriptReplacedError, match="the path names no file now"):
            session.record_run(messages, context(1, "main"))
    assert "old.jsonl" not in names(directory)


def test_bad_arguments(directory: Path) -> None:
    with pytest.raises(ValueError, match="nothing chooses what to prune"):
        prune(directory)
    with pytest.raises(ValueError, match="tenant is for a PostgreSQL URI"):
        prune(directory, tenant="acme", older_than=OLD)
    with pytest.raises(TypeError, match="older_than must be a timedelta, not int"):
        prune(directory, older_than=30)  # type: ignore[arg-type]
    with pytest.raises(NotADirectoryError, match="not a directory"):
        prune(directory / "old.jsonl", older_than=OLD)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_dry_run_then_yes(directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    size = (directory / "old.jsonl").stat().st_size
    status, out, err = run(capsys, "transcript", "prune", str(directory), "--older-than", "30d")
    assert (status, err) == (0, "")
    assert out == (
        f"would delete  old.jsonl  {size} bytes\n"
        f"would delete 1 sessions ({size} bytes); pass --yes to delete them\n"
    )
    assert (directory / "old.jsonl").exists()
    status, out, err = run(
        capsys, "transcript", "prune", str(directory), "--older-than", "30d", "--yes", "--json"
    )
    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "deleted": True,
        "sessions": [{"tenant": None, "session": "old.jsonl", "bytes": size, "records": None}],
        "session_bytes": size,
        "sections": 0,
        "section_bytes": 0,
        "kept": [],
    }
    assert not (directory / "old.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "nothing chooses what to prune: pass --older-than AGE, --tenant T or --session ID "
         "(the whole store is never pruned by default)"),
        (["--older-than", "30"], "--older-than '30': expected an age, a whole number and a "
         "unit: 45s, 90m, 12h, 30d or 2w"),
        (["--older-than", "30d", "--tenant", "acme"],
         "--tenant is for a PostgreSQL URI; a directory of files has no tenants"),
    ],
)  # fmt: skip
def test_cli_errors(
    directory: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(capsys, "transcript", "prune", str(directory), *argv) == (
        1,
        "",
        f"runcontext transcript prune: {message}\n",
    )
    assert "old.jsonl" in names(directory)


def test_cli_over_postgres(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    from fleet_data import record

    record(pg_dsn, [context(1, "main")], session_id="s\x1b[2J", tenant="acme")
    record(pg_dsn, [context(2, "main")], session_id="t", tenant="acme")
    status, out, err = run(
        capsys, "transcript", "prune", pg_dsn, "--tenant", "acme", "--session", "s\x1b[2J"
    )
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("would delete  acme  s\\x1b[2J  ")
    assert lines[1].startswith("would delete 1 sessions (")
    assert lines[1].endswith(
        f"bytes) and 1 section bodies no other session names "
        f"({len(context(1, 'x').sections[0].text)} bytes); pass --yes to delete them"
    )
    status, out, _ = run(capsys, "transcript", "prune", pg_dsn, "--tenant", "acme", "--yes")
    assert status == 0
    assert out.splitlines()[-1].startswith("deleted 2 sessions (")
