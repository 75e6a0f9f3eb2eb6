"""A Node writer and a Python writer on one transcript, as real processes: what the JavaScript
package can and cannot do without ``flock`` (docs/JAVASCRIPT.md, *Concurrent writers*).

Node cannot take Python's lock, but it sees it: an append waits while a Python writer holds it
(Linux's /proc/locks), then reads and verifies what that writer appended before it writes, so
a Node writer that fell behind is refused with the error Python gives (nothing written), and
one that did not continues the file Python wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runcontext.transcript import Session
from runcontext.transcript.memory import verify_bytes

from conftest import ROOT

INDEX = (ROOT / "js" / "src" / "index.js").as_uri()
SYSTEM = {"role": "system", "content": "You are a careful agent."}
USER = {"role": "user", "content": "Fix the test."}
PYTHON_TURN = {"role": "user", "content": "python's turn"}
NODE_TURN = {"role": "user", "content": "node's turn"}

# Opens the transcript, says "ready", waits for a line on stdin when asked to, records a run
# of the conversation given, and prints what happened.
SCRIPT = """
import { createInterface } from "node:readline";
import { Session } from "%s";
const [path, conversation, wait] = process.argv.slice(1);
const session = Session.open(path);
process.stdout.write("ready\\n");
if (wait === "wait") for await (const _ of createInterface({ input: process.stdin })) break;
try {
  const run = session.recordRun(JSON.parse(conversation), null);
  process.stdout.write(JSON.stringify({ ok: run.number }) + "\\n");
} catch (error) {
  process.stdout.write(JSON.stringify({ error: error.name, index: error.index ?? null }) + "\\n");
}
session.close();
process.exit(0);
"""


@pytest.fixture(autouse=True, scope="module")
def _needs_node() -> Iterator[None]:
    assert shutil.which("node") is not None, "the JavaScript package's tests need Node 20"
    wasm = ROOT / "js" / "runcontext.wasm"
    sources = [p.stat().st_mtime for p in (ROOT / "rust").rglob("*.rs")]
    if not wasm.exists() or wasm.stat().st_mtime < max(sources):
        subprocess.run(["make", "js"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    yield


def _node(path: Path, conversation: list[Any], *, wait: bool) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            "node",
            "--input-type=module",
            "-e",
            SCRIPT % INDEX,
            str(path),
            json.dumps(conversation),
            "wait" if wait else "go",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return process


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    answer: dict[str, Any] = json.loads(out)
    return answer


def _contents(path: Path) -> list[str]:
    return [message["content"] for message in verify_bytes(path.read_bytes()).messages]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/locks")
def test_a_node_append_waits_for_the_python_writer_s_lock_then_is_refused_for_falling_behind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [SYSTEM, USER]).close()
    with Session.open(path) as python:
        with python._store.writing():  # the lock a Python append holds, held for a while
            node = _node(path, [SYSTEM, USER, NODE_TURN], wait=False)
            time.sleep(0.5)  # Node is in its append now, waiting for the lock
            assert path.read_bytes().count(b"\n") == 3, "Node wrote while the lock was held"
            python.append_messages([PYTHON_TURN])
        before = path.read_bytes()
    # Node read Python's message before writing, and refused the conversation that no longer
    # continues the transcript, as a Python writer that fell behind is refused.
    assert _result(node) == {"error": "ConversationMismatchError", "index": 2}
    assert path.read_bytes() == before
    assert _contents(path) == [SYSTEM["content"], USER["content"], PYTHON_TURN["content"]]


def test_a_node_session_reads_what_python_appended_since_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [SYSTEM, USER]).close()
    behind = _node(path, [SYSTEM, USER, NODE_TURN], wait=True)
    along = _node(path, [SYSTEM, USER, PYTHON_TURN, NODE_TURN], wait=True)
    with Session.open(path) as python:
        python.record_run([SYSTEM, USER, PYTHON_TURN], None)
    grown = path.read_bytes()
    assert behind.stdin is not None and along.stdin is not None
    behind.stdin.write("go\n")
    behind.stdin.flush()
    assert _result(behind) == {"error": "ConversationMismatchError", "index": 2}
    assert path.read_bytes() == grown  # nothing written
    along.stdin.write("go\n")
    along.stdin.flush()
    assert _result(along) == {"ok": 2}
    with Session.open(path) as python:  # Python continues what Node appended
        assert [run.number for run in python.runs()] == [1, 2]
        python.append_messages([{"role": "assistant", "content": "done"}])
    assert _contents(path)[-2:] == [NODE_TURN["content"], "done"]
