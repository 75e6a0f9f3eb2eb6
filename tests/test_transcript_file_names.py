"""A transcript whose file name is not UTF-8, or holds control characters, works end to end.

Linux file names are bytes: ``caf\\xe9.jsonl`` (Latin-1) is legal, and Python holds it as the
str ``'caf\\udce9.jsonl'`` (``os.fsdecode``) or as bytes. Such a name can be created, opened,
appended to and read by the command line; wherever it is shown (messages, ``repr``, command
output) a byte that is not UTF-8 reads ``\\xe9`` and a control character ``\\x1b``: no raw
bytes, nothing a terminal obeys.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runcontext import RunContext, Session
from runcontext.transcript import TranscriptFormatError
from runcontext.transcript.errors import shown_name

SEED = {"role": "user", "content": "hi"}
LATIN1 = b"caf\xe9.jsonl"  # not UTF-8
STR = os.fsdecode(LATIN1)  # 'caf\udce9.jsonl'


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the names are relative: messages show the name alone
    return tmp_path


@pytest.mark.parametrize("name", [STR, LATIN1, Path(STR)], ids=["str", "bytes", "Path"])
def test_create_open_and_append_under_a_name_that_is_not_utf8(
    directory: Path, name: str | bytes | Path
) -> None:
    with Session.create(name, [SEED]) as session:
        session.append_messages([{"role": "user", "content": "more"}])
        session.record_run(
            [SEED, {"role": "user", "content": "more"}], RunContext(facts=[("day", "1")])
        )
        assert session.path == Path(STR)
        assert session.store.name == STR  # the exact name: os functions give back the byte
        assert repr(session) == "<Session 'caf\\xe9.jsonl': 2 messages, 1 runs>"
    assert os.listdir(b".") == [LATIN1]  # the file has the byte, not an escape of it
    with Session.open(name) as reopened:
        assert [m["content"] for m in reopened.messages()] == ["hi", "more"]
        assert len(reopened.runs()) == 1


def test_messages_show_the_name_escaped_and_errors_keep_it_exact(directory: Path) -> None:
    Session.create(LATIN1, [SEED]).close()
    with pytest.raises(FileExistsError, match=r"^\[Errno 17\] caf\\xe9\.jsonl already exists; "):
        Session.create(STR, [SEED])
    with pytest.raises(FileNotFoundError, match=r"^\[Errno 2\] No such file: x\\xff\.jsonl; "):
        Session.open(b"x\xff.jsonl")
    with open(LATIN1, "ab") as file:
        file.write(b"{bad}\n")
    # The core reads the record and names the file: shown in the message, exact in .file.
    with pytest.raises(TranscriptFormatError, match=r"^caf\\xe9\.jsonl:3: not JSON: ") as caught:
        Session.open(LATIN1)
    assert caught.value.file == STR


def test_control_characters_in_a_name_are_shown_as_escapes(directory: Path) -> None:
    name = "evil\x1b]52;c;aGk=\x07\u202e.jsonl"
    with Session.create(name, [SEED]) as session:
        assert (
            repr(session) == "<Session 'evil\\x1b]52;c;aGk=\\x07\\u202e.jsonl': 1 messages, 0 runs>"
        )
        session.close()
        with pytest.raises(
            ValueError, match=r"^evil\\x1b\]52;c;aGk=\\x07\\u202e\.jsonl: the session is closed$"
        ):
            session.append_messages([SEED])


def test_shown_name() -> None:
    assert shown_name("plain/名前 with space.jsonl") == "plain/名前 with space.jsonl"
    assert shown_name("caf\udce9\n\t\x9b\ud800.jsonl") == "caf\\xe9\\x0a\\x09\\u009b\\ud800.jsonl"


def test_a_surrogate_that_stands_for_no_byte_is_refused_naming_the_path(directory: Path) -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "path: a\\ud800.jsonl holds \\ud800, a lone surrogate that stands for no byte of a "
            "file name; pass the name as bytes, or as os.fsdecode(bytes) gives it"
        ),
    ):
        Session.create("a\ud800.jsonl", [SEED])


def _cli(*args: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "runcontext", *args], capture_output=True, check=False
    )


def test_the_command_line_opens_such_a_name_and_shows_it_escaped(directory: Path) -> None:
    name = b"caf\xe9\x1b[2J.jsonl"
    with Session.create(name, [SEED]) as session:
        session.record_run([SEED], RunContext(facts=[("day", "1")]))
    listed = _cli(b"log", name)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(b"run 1  ")
    missing = _cli(b"log", b"--run", b"7", name)
    assert missing.returncode == 1
    assert missing.stderr == (
        b"runcontext log: caf\\xe9\\x1b[2J.jsonl: no run 7: the transcript has runs 1 to 1\n"
    )
    copied = _cli(b"transcript", b"copy", name, b"copy\xff.jsonl")
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout == b"copied 3 records from caf\\xe9\\x1b[2J.jsonl to copy\\xff.jsonl\n"
    with Session.open(b"copy\xff.jsonl") as copy:
        assert len(copy.runs()) == 1
    absent = _cli(b"log", b"gone\xe9.jsonl")
    assert absent.returncode == 1
    assert absent.stderr == b"runcontext log: no such file: gone\\xe9.jsonl\n"
