"""A forked process appending to a Session it inherited takes a lock of its own.

An inherited descriptor shares the parent's open file description, and so its ``flock``: if
the children appended through it, the lock would exclude none of them, and two children would
write the same message index. Every record must be present once and the file must verify.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from runcontext import Session

SEED = {"role": "system", "content": "seed"}
CHILDREN = 4
EACH = 150


def _append_many(session: Session, who: int) -> None:
    for n in range(EACH):
        session.append_messages([{"role": "user", "content": f"{who}:{n}"}])


def _check(path: Path) -> None:
    with Session.open(path) as reopened:
        messages = reopened.messages()
    assert messages[0] == SEED
    contents = [m["content"] for m in messages[1:]]
    assert sorted(contents) == sorted(f"{w}:{n}" for w in range(CHILDREN) for n in range(EACH))
    for who in range(CHILDREN):  # each child's records in its own order
        mine = [c for c in contents if c.startswith(f"{who}:")]
        assert mine == [f"{who}:{n}" for n in range(EACH)]


@pytest.mark.slow
def test_children_forked_with_os_fork_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    session = Session.create(path, [SEED])
    pids = []
    for who in range(CHILDREN):
        pid = os.fork()
        if pid == 0:  # the child: append, then leave without running the parent's cleanup
            status = 0
            try:
                _append_many(session, who)
            except BaseException:
                status = 1
            os._exit(status)
        pids.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    assert statuses == [0] * CHILDREN
    # The parent's own session still appends after its children, and sees their records.
    session.append_messages([{"role": "user", "content": "parent"}])
    assert session.message_count == 1 + CHILDREN * EACH + 1
    session.close()
    with Session.open(path) as reopened:
        assert reopened.messages()[-1]["content"] == "parent"
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1 + 1 + CHILDREN * EACH + 1


_INHERITED: Session | None = None


def _pool_worker(who: int) -> int:
    assert _INHERITED is not None
    _append_many(_INHERITED, who)
    return who


@pytest.mark.slow
def test_multiprocessing_fork_workers_exclude_each_other(tmp_path: Path) -> None:
    global _INHERITED
    path = tmp_path / "t.jsonl"
    _INHERITED = Session.create(path, [SEED])
    try:
        with multiprocessing.get_context("fork").Pool(CHILDREN) as pool:
            assert sorted(pool.map(_pool_worker, range(CHILDREN))) == list(range(CHILDREN))
    finally:
        _INHERITED.close()
        _INHERITED = None
    _check(path)
