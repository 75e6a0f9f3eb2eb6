"""A session appends only to the file it opened and verified.

When the path names another file (the transcript was replaced by a rename, as an editor's
save, ``rsync`` and ``sed -i`` do, or the path is a symlink pointed elsewhere) or no file (it
was renamed away or deleted), an append would land in a file nobody finds at the path, or in
one whose records this session never verified. It is refused under the writer lock, before
anything is written, with a ``TranscriptReplacedError`` naming the path.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from runcontext import RunContext, Session
from runcontext.transcript import TranscriptError, TranscriptReplacedError

SEED = {"role": "system", "content": "seed"}
NEW = {"role": "user", "content": "new"}
REPLACED = (
    "the path names another file now than the one this session opened and verified (it was "
    "replaced, as an editor's save, rsync and sed -i do, or the path is a symlink pointed "
    "elsewhere since); nothing was written: open the path again (Session.open) to continue "
    "the file now there (its records are verified then)"
)
GONE = (
    "the path names no file now: the file this session opened was renamed or deleted; "
    "nothing was written: open the transcript where it is now (Session.open) to continue it, "
    "or start a new one (Session.create)"
)


def _replace_by_rename(path: Path) -> None:
    """What an editor's save or `sed -i` does: write a copy beside it, rename it over."""
    copy = path.with_name(path.name + ".tmp")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


def _append(session: Session) -> None:
    session.append_messages([NEW])


def _record(session: Session) -> None:
    session.record_run(
        [SEED], RunContext(facts=[("day", "1")]), {"role": "assistant", "content": "ok"}
    )


@pytest.mark.parametrize("write", [_append, _record], ids=["append_messages", "record_run"])
def test_an_append_after_the_file_was_replaced_is_refused_and_writes_nothing(
    tmp_path: Path, write: Callable[[Session], None]
) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        os.link(path, tmp_path / "opened.jsonl")  # the file the session opened, kept reachable
        _replace_by_rename(path)
        before = path.read_bytes()
        with pytest.raises(
            TranscriptReplacedError, match=f"^{re.escape(f'{path}: {REPLACED}')}$"
        ) as caught:
            write(session)
        assert isinstance(caught.value, TranscriptError)
        assert (caught.value.file, caught.value.line, caught.value.kind) == (str(path), None, None)
        # Neither the file at the path nor the one the session opened got a record.
        assert path.read_bytes() == before
        assert (tmp_path / "opened.jsonl").read_bytes() == before
        # The session is unchanged: it still holds what it had read.
        assert session.message_count == 1 and session.runs() == []


def test_reopening_the_path_continues_the_file_now_there(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        _replace_by_rename(path)
        with pytest.raises(TranscriptReplacedError):
            session.append_messages([NEW])
    with Session.open(path) as reopened:
        reopened.append_messages([NEW])
    with Session.open(path) as check:
        assert check.messages() == [SEED, NEW]


@pytest.mark.parametrize("how", ["deleted", "renamed away", "its directory replaced by a file"])
def test_an_append_after_the_file_was_deleted_or_renamed_away_is_refused(
    tmp_path: Path, how: str
) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    path = directory / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        if how == "deleted":
            path.unlink()
        elif how == "renamed away":
            path.rename(tmp_path / "elsewhere.jsonl")
        else:
            directory.rename(tmp_path / "moved")
            directory.write_bytes(b"")  # the path's directory is now a regular file
        with pytest.raises(TranscriptReplacedError, match=f"^{re.escape(f'{path}: {GONE}')}$"):
            session.append_messages([NEW])
    assert not path.exists()  # the append did not create a file either
    if how == "renamed away":
        with Session.open(tmp_path / "elsewhere.jsonl") as moved:
            assert moved.messages() == [SEED]


def test_check_appendable_reports_a_replaced_file_before_a_request_is_paid_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        session.check_appendable()  # the path names the file: nothing to report
        _replace_by_rename(path)
        with pytest.raises(TranscriptReplacedError, match=re.escape(REPLACED)):
            session.check_appendable()


def test_a_symlink_pointed_elsewhere_since_the_open_is_refused(tmp_path: Path) -> None:
    current = tmp_path / "current.jsonl"
    day1, day2 = tmp_path / "day1.jsonl", tmp_path / "day2.jsonl"
    Session.create(day1, [SEED]).close()
    Session.create(day2, [SEED]).close()
    current.symlink_to(day1.name)
    with Session.open(current) as session:
        session.append_messages([NEW])  # through the symlink, to the file it names
        current.unlink()
        current.symlink_to(day2.name)
        day2_before = day2.read_bytes()
        with pytest.raises(
            TranscriptReplacedError, match=f"^{re.escape(f'{current}: {REPLACED}')}$"
        ):
            session.append_messages([NEW])
    assert day2.read_bytes() == day2_before
    with Session.open(day1) as check:
        assert check.messages() == [SEED, NEW]


def test_an_edit_in_place_is_not_a_replacement(tmp_path: Path) -> None:
    """Appending to the same file by another program keeps its inode: the session reads the
    record (and verifies it) like any other writer's, and appends after it."""
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session, Session.open(path) as other:
        other.append_messages([{"role": "user", "content": "other"}])
        session.append_messages([NEW])
    with Session.open(path) as check:
        assert [m["content"] for m in check.messages()] == ["seed", "other", "new"]
