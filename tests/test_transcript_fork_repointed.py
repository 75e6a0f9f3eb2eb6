"""A forked child appends only to the file its parent opened and verified.

The child reopens the path before its first append (an inherited descriptor shares the
parent's lock). If the path is a symlink pointed at another file since (``current.jsonl``
rotated daily) or the file was replaced, the child finds another file there: it refuses the
append with ``TranscriptReplacedError`` instead of writing into a file it never verified.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from runcontext import Session
from runcontext.transcript import TranscriptReplacedError

SEED = {"role": "system", "content": "seed"}
NEW = {"role": "user", "content": "from the child"}
REFUSED = (
    "this forked process reopened the path to append and found another file than the one the "
    "session opened and verified (it was replaced, or the path is a symlink pointed elsewhere "
    "since); nothing was written: open the path again (Session.open) to continue the file now "
    "there (its records are verified then)"
)


def _append_in_child(session: Session) -> str:
    """Fork; the child appends once and reports what happened through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's clean-up
        status = 0
        try:
            os.close(read_end)
            try:
                session.append_messages([NEW])
                report = "appended"
            except TranscriptReplacedError as error:
                report = f"{type(error).__name__}|{error.file}|{error}"
            os.write(write_end, report.encode("utf-8", "surrogateescape"))
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return b"".join(chunks).decode("utf-8", "surrogateescape")


def test_a_child_whose_symlink_was_pointed_elsewhere_refuses_to_append(tmp_path: Path) -> None:
    current = tmp_path / "current.jsonl"
    day1, day2 = tmp_path / "day1.jsonl", tmp_path / "day2.jsonl"
    Session.create(day1, [SEED]).close()
    Session.create(day2, [SEED]).close()
    current.symlink_to(day1.name)
    with Session.open(current) as session:
        # Rotated after the parent opened it: the path now names day 2's file.
        current.unlink()
        current.symlink_to(day2.name)
        day1_before, day2_before = day1.read_bytes(), day2.read_bytes()
        report = _append_in_child(session)
    assert report == f"TranscriptReplacedError|{current}|{current}: {REFUSED}"
    assert day1.read_bytes() == day1_before
    assert day2.read_bytes() == day2_before


def test_a_child_appends_through_a_symlink_that_still_names_the_file(tmp_path: Path) -> None:
    current = tmp_path / "current.jsonl"
    day1 = tmp_path / "day1.jsonl"
    Session.create(day1, [SEED]).close()
    current.symlink_to(day1.name)
    with Session.open(current) as session:
        assert _append_in_child(session) == "appended"
        assert session.messages() == [SEED, NEW]  # the parent reads the child's record


def test_a_child_whose_file_was_deleted_refuses_to_append(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        path.unlink()
        report = _append_in_child(session)
    assert re.fullmatch(
        re.escape(f"TranscriptReplacedError|{path}|{path}: the path names no file now: ") + ".*",
        report,
    )
    assert not path.exists()
