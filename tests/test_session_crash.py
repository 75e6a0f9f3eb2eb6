"""Crash safety and concurrent writers, with real processes.

Writers are subprocesses (``python -c``) that acknowledge each record on stdout after its
append returned; the parent reads those acknowledgements, so it knows which records must
survive, and uses them (not sleeps) to decide when to kill.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from runcontext.transcript import Session, TornTranscriptWarning

SEED = {"role": "system", "content": "crash test"}

# Deterministic content per record, so the parent can check every byte that survived. Some
# records are a megabyte or more, so a kill often lands inside a write (Linux stops a large
# write between pages when SIGKILL arrives, which is how a real torn line happens).
COMMON = r"""
import random
from runcontext import RunContext

def size(i):
    return random.Random(i).choice([40, 900, 5_000, 70_000, 1_500_000])

def content(i):
    return (f"record {i}:" + "abcdefghij" * (size(i) // 10 + 1))[: size(i)]

def context(i):
    return RunContext(head_sections=[("AGENTS.md", content(i))], facts=[("i", str(i))])
"""

WRITER = (
    COMMON
    + r"""
import sys
from runcontext.transcript.session import Session

session = Session.open(sys.argv[1])
conversation = session.messages()
i = len(conversation)
tear = int(sys.argv[2]) if len(sys.argv) > 2 else None
while True:
    message = {"role": "user", "content": content(i), "i": i}
    if tear is not None and i == tear:
        import os, signal
        real_write = os.write
        def torn_write(fd, data):  # half the line reaches the file, then the process dies
            real_write(fd, bytes(data[: len(data) // 2]))
            os.kill(os.getpid(), signal.SIGKILL)
        os.write = torn_write
    if i % 3 == 2:  # every third record is a run: its new section, its envelope, a reply
        run = session.record_run(conversation, context(i), message)
        print("run", run.number, flush=True)
    else:
        session.append_messages([message])
        print("message", i, flush=True)
    conversation.append(message)
    i += 1
"""
)

CONCURRENT_WRITER = r"""
import sys
from runcontext.transcript.session import Session

writer, count = int(sys.argv[2]), int(sys.argv[3])
session = Session.open(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()  # wait until every writer is ready, then append all at once
for i in range(count):
    length = (writer * 7919 + i * 104_729) % 6_000
    session.append_messages([{"role": "user", "content": f"{writer}:{i}:" + "x" * length}])
print("done", flush=True)
"""


def _expected(i: int) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(COMMON, namespace)
    content = namespace["content"]
    assert callable(content)
    return {"role": "user", "content": content(i), "i": i}


def _reopen(path: Path) -> tuple[Session, bool]:
    """Open the transcript (it must always open), repairing a torn tail if there is one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = Session.open(path)
    torn = session.torn is not None
    assert sum(issubclass(w.category, TornTranscriptWarning) for w in caught) == int(torn)
    if torn:
        session.close()
        session = Session.open(path, repair=True)
        assert session.repaired is not None
    return session, torn


def _spawn(code: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_complete_record(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    Session.create(path, [SEED]).close()
    rng = random.Random(20250131)
    kills = 16
    # One of the kills lands inside a write for certain (the writer writes half a record, then
    # SIGKILLs itself): at a seeded random kill and record. The others land wherever the writer
    # happens to be, which sometimes tears a line too.
    tearing_kill = rng.randrange(kills)
    acknowledged_messages = 1
    acknowledged_runs = 0
    torn_kills: list[int] = []
    for kill in range(kills):
        if kill == tearing_kill:
            tear = acknowledged_messages + rng.randrange(4)
            writer = _spawn(WRITER, path, tear)
            stdout, _ = writer.communicate()
            assert writer.returncode == -signal.SIGKILL
            acks = [ack.split() for ack in stdout.splitlines()]
            assert len(acks) == tear - acknowledged_messages  # every record before the torn one
        else:
            writer = _spawn(WRITER, path)
            assert writer.stdout is not None
            acks = [writer.stdout.readline().split() for _ in range(rng.randint(1, 5))]
            # The writer keeps appending while we read: the kill lands wherever it happens to be.
            writer.kill()
            writer.communicate()
        for kind, number in acks:
            if kind == "message":
                acknowledged_messages = int(number) + 1
            else:
                acknowledged_runs = int(number)

        session, torn = _reopen(path)
        with session:
            messages = session.messages()
            runs = session.runs()  # every run's context rebuilt and its digest verified
        # Every acknowledged record survived; every record present is exactly what was written.
        assert len(messages) >= acknowledged_messages
        assert len(runs) >= acknowledged_runs
        assert messages[0] == SEED
        assert messages[1:] == [_expected(i) for i in range(1, len(messages))]
        # A run is recorded by the writer's record i (i % 3 == 2) with the conversation up to
        # i; a kill between its envelope and its reply leaves the run without a reply, and the
        # next writer records record i again as a new run.
        for run in runs:
            assert run.messages % 3 == 2
            assert run.context.facts == (("i", str(run.messages)),)
            assert run.context.head_text == _expected(run.messages)["content"]
        acknowledged_messages = len(messages)  # the next writer starts after these
        if torn:
            torn_kills.append(kill)
    assert tearing_kill in torn_kills  # the torn line was exercised, detected and repaired


def test_sigkill_in_the_middle_of_a_write_leaves_one_torn_line_that_repair_removes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "torn.jsonl"
    Session.create(path, [SEED]).close()
    writer = _spawn(WRITER, path, 4)  # record 4's write is cut in half, then SIGKILL
    stdout, _ = writer.communicate()
    assert writer.returncode == -signal.SIGKILL
    assert stdout.split("\n")[:3] == ["message 1", "run 1", "message 3"]
    complete = path.read_bytes()[: path.read_bytes().rindex(b"\n") + 1]

    with pytest.warns(TornTranscriptWarning, match="the last record is torn"):
        session = Session.open(path)
    with session:
        assert session.torn is not None
        assert session.torn.offset == len(complete)
        assert [m.get("i") for m in session.messages()] == [None, 1, 2, 3]
    session, torn = _reopen(path)
    session.close()
    assert torn
    assert path.read_bytes() == complete

    # A new writer continues after the repair, from record 4.
    writer = _spawn(WRITER, path)
    assert writer.stdout is not None
    assert writer.stdout.readline().split() == ["message", "4"]
    writer.kill()
    writer.communicate()
    session, _ = _reopen(path)
    with session:
        assert session.messages()[4] == _expected(4)


@pytest.mark.slow
def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "concurrent.jsonl"
    Session.create(path, [SEED]).close()
    writers, count = 4, 1_500
    processes = [_spawn(CONCURRENT_WRITER, path, w, count) for w in range(writers)]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
    reader = Session.open(path, writable=False)
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    # A reader takes no lock: while the writers append, it reads whole records only and never
    # mistakes an append in progress for a torn line.
    seen_counts = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornTranscriptWarning)
        while any(process.poll() is None for process in processes):
            reader.refresh()
            assert reader.torn is None
            seen_counts.append(reader.message_count)
    for process in processes:
        stdout, _ = process.communicate(timeout=120)
        assert (process.returncode, stdout) == (0, "done\n")
    assert seen_counts == sorted(seen_counts)
    with reader, Session.open(path) as reopened:
        assert reader.messages() == reopened.messages()

    with Session.open(path) as session:  # every line parses: no two records share a line
        messages = session.messages()
    assert len(messages) == 1 + writers * count
    seen: dict[int, list[int]] = {w: [] for w in range(writers)}
    for message in messages[1:]:
        writer, i, padding = message["content"].split(":")
        assert padding == "x" * ((int(writer) * 7919 + int(i) * 104_729) % 6_000)
        seen[int(writer)].append(int(i))
    assert seen == {w: list(range(count)) for w in range(writers)}
    # The writers really did run at once: their records are mixed in the file.
    order = [int(m["content"].split(":")[0]) for m in messages[1:]]
    switches = sum(a != b for a, b in itertools.pairwise(order))
    assert switches > writers
    assert os.path.getsize(path) == sum(len(raw) for raw in path.read_bytes().splitlines(True))
