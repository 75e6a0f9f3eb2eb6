"""AsyncSession: the same transcript from asyncio code, over the file store and PostgreSQL,
without blocking the event loop while another writer holds the lock."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext
from runcontext.loop import Loop
from runcontext.transcript import AsyncSession, Session
from runcontext.transcript.files import FileStore

SEED = {"role": "system", "content": "seed"}


@pytest.fixture(params=["file", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return str(tmp_path / "t.jsonl")
    dsn: str = request.getfixturevalue("pg_dsn")
    return dsn + ("&" if "?" in dsn else "?") + "session=async-1"


def test_create_record_and_read_back(target: str) -> None:
    async def main() -> list[Any]:
        session = await AsyncSession.create(target, [SEED])
        async with session:
            run = await session.record_run(
                [SEED, {"role": "user", "content": "hi"}],
                RunContext(facts=[("date", "2026-12-01")]),
                {"role": "assistant", "content": "ok"},
            )
            assert run.number == 1
        reopened = await AsyncSession.open(target)
        async with reopened:
            assert [r.digest for r in await reopened.runs()] == [run.digest]
            return await reopened.messages()

    assert asyncio.run(main())[-1] == {"role": "assistant", "content": "ok"}


def test_loop_takes_an_async_session(target: str) -> None:
    async def main() -> int:
        session = await AsyncSession.create(target, [SEED])
        loop = Loop(lambda request: {"role": "assistant", "content": "ok"}, session=session)
        outcome = await loop.arun([SEED, {"role": "user", "content": "hi"}])
        await session.close()
        assert outcome.run is not None
        return outcome.run.number

    assert asyncio.run(main()) == 1


def test_waiting_for_another_writer_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [SEED]).close()
    holder = FileStore(path)
    holder.open(writable=True)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.writing():
            locked.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    locked.wait(30)

    async def main() -> int:
        session = await AsyncSession.open(path)
        append = asyncio.create_task(session.append_messages([{"role": "user", "content": "x"}]))
        ticks = 0
        for _ in range(20):  # the loop keeps running while the append waits for the lock
            await asyncio.sleep(0.005)
            ticks += 1
        assert not append.done()
        release.set()
        await append
        await session.close()
        return ticks

    assert asyncio.run(main()) == 20
    thread.join()
    holder.close()
    with Session.open(path) as reopened:
        assert reopened.messages()[-1] == {"role": "user", "content": "x"}


def test_open_or_create_by_path_on_the_first_and_the_second_run(tmp_path: Path) -> None:
    path = str(tmp_path / "agent.jsonl")
    first = [{"role": "user", "content": "hi"}]

    async def run() -> list[int]:
        counts = []
        for _ in range(2):
            session = await AsyncSession.open_or_create(path, first)
            counts.append(len(await session.runs()))
            await session.record_run(first, None, {"role": "assistant", "content": "hello"})
            first.append({"role": "assistant", "content": "hello"})
            await session.close()
        return counts

    assert asyncio.run(run()) == [0, 1]
