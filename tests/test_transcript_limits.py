"""The transcript's limits (docs/TRANSCRIPT.md, Limits): what is not a regular file is refused
before it is read, a record longer than the line cap is refused without being read into
memory, and what is written can always be read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from runcontext import MAX_DEPTH, Session
from runcontext.transcript import TranscriptError, TranscriptFormatError

SEED = {"role": "system", "content": "seed"}


def _within_seconds(call: object, seconds: float = 30.0) -> BaseException | None:
    """Run ``call`` in a thread; fail (instead of hanging the suite) if it blocks."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()  # type: ignore[operator]
        except BaseException as error:
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked: the call never returned"
    return outcome[0]


@pytest.mark.parametrize("writable", [None, False, True])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, writable: bool | None) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    error = _within_seconds(lambda: Session.open(fifo, writable=writable))
    assert isinstance(error, TranscriptError)
    assert str(error) == (
        f"{fifo}: a FIFO, not a regular file: a transcript is a regular file (nothing was read "
        "from it)"
    )


@pytest.mark.parametrize(
    ("target", "kind"), [("/dev/null", "a character device"), (".", "a directory")]
)
def test_other_non_regular_files_are_refused(tmp_path: Path, target: str, kind: str) -> None:
    path = tmp_path if target == "." else Path(target)
    with pytest.raises(TranscriptError, match=f"^{path}: {kind}, not a regular file"):
        Session.open(path, writable=False)


def test_runcontext_log_refuses_a_fifo_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-m", "runcontext", "log", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"runcontext log: {fifo}: a FIFO, not a regular file: a transcript is a regular file "
        "(nothing was read from it)\n"
    )


def test_a_record_longer_than_the_cap_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        session.append_messages([{"role": "user", "content": "x" * 5000}])
    Session.open(path, max_line_bytes=6000).close()
    with pytest.raises(TranscriptFormatError) as info:
        Session.open(path, max_line_bytes=4096)
    assert (info.value.kind, info.value.line) == ("too-long", 3)
    assert "longer than the 4096-byte line cap" in str(info.value)


_SPARSE = """
import resource, sys
from runcontext import Session
from runcontext.transcript import TranscriptFormatError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    Session.open(sys.argv[1])
except TranscriptFormatError as error:
    print(error.kind, error.line)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)  # MiB of peak RSS the open added
"""


@pytest.mark.slow
def test_a_sparse_hole_of_gigabytes_costs_the_cap_not_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [SEED]).close()
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size + 4 * 1024**3)  # 4 GiB of NULs, no newline
    result = subprocess.run(
        [sys.executable, "-c", _SPARSE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    kind_line, grown = result.stdout.splitlines()
    assert kind_line == "too-long 3"
    # The default cap is 64 MiB and the read buffer 1 MiB; the bytearray may over-allocate.
    assert int(grown) < 160, f"opening the file grew the peak RSS by {grown} MiB"


def _nested(depth: int) -> dict[str, object]:
    """A message whose nesting, the message object included, is ``depth``."""
    value: object = {}
    for _ in range(depth - 2):
        value = [value]
    return {"role": "user", "content": value}


def test_what_is_written_at_the_depth_limit_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    deepest = _nested(MAX_DEPTH - 1)  # the record around it is one level more: MAX_DEPTH
    with Session.create(path, [SEED]) as session:
        session.append_messages([deepest])
    with Session.open(path) as reopened:
        assert reopened.messages()[1] == deepest


def test_one_level_past_the_limit_is_refused_on_write_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        size = path.stat().st_size
        with pytest.raises(ValueError) as info:
            session.append_messages([{"role": "user", "content": "fine"}, _nested(MAX_DEPTH)])
        assert path.stat().st_size == size
        assert session.messages() == [SEED]
    assert str(info.value).startswith(
        "messages[1]: the message cannot be stored in a transcript: the message nests 512 "
    )
    assert "holds at most 511" in str(info.value)


def test_a_record_nested_past_the_limit_is_refused_on_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [SEED]).close()
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    with path.open("ab") as file:
        file.write(
            (
                '{"chain":"blake3:'
                + "0" * 64
                + '","index":1,"message":{"content":'
                + deep
                + ',"role":"user"},"type":"message"}\n'
            ).encode()
        )
    with pytest.raises(TranscriptFormatError) as info:
        Session.open(path)
    assert (info.value.kind, info.value.line) == ("too-deep", 3)


def test_responses_items_are_recorded_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    call = {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "README.md"}
    reasoning = {"type": "reasoning", "id": "r1", "summary": []}
    with Session.create(path, [{"role": "user", "content": "list files"}]) as session:
        session.record_run([{"role": "user", "content": "list files"}], None, call)
        session.append_messages([output, reasoning])
    with Session.open(path) as reopened:
        assert reopened.messages()[1:] == [call, output, reasoning]
    assert [json.loads(line)["type"] for line in path.read_bytes().splitlines()] == [
        "header",
        "message",
        "run-context",
        "message",
        "message",
        "message",
    ]


def test_runcontext_log_takes_the_line_cap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [SEED]) as session:
        session.append_messages([{"role": "user", "content": "x" * 5000}])
    command = [sys.executable, "-m", "runcontext", "log", str(path)]
    refused = subprocess.run(
        [*command, "--max-line-bytes", "4096"], capture_output=True, text=True, check=False
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"runcontext log: {path}:3: the record ")
    assert "longer than the 4096-byte line cap" in refused.stderr
    assert subprocess.run(command, capture_output=True, check=False).returncode == 0
