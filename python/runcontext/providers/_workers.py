"""Run every provider's collect under one deadline, at most one collect per provider at a time.

Sync providers run in daemon worker threads (a hung one can neither delay the build nor
block interpreter exit, which a ``ThreadPoolExecutor`` would: it joins its workers at exit),
at most one collect per provider at a time, so a provider hung forever holds one thread, not
one per build. Async providers run as tasks on the caller's loop in :func:`acollect_all`
and are cancelled at the deadline; in :func:`collect_all` each gets a private loop in a
worker. Results come back in the providers' order, never completion order.

What a provider returned is read by the ``finish`` function each build passes in
(:func:`runcontext.providers._contributions.check`), and it is called *in the worker*,
right after the collect: reading a returned value runs the provider's code (a lazy
sequence, a generator, an exception's ``__str__``), and that must count against the
deadline, not stall the caller after it. The caller only ever receives what ``finish``
made of it. An async provider under :func:`acollect_all` runs on the caller's loop, so its
result is handed to a worker to be finished too.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeGuard

from runcontext.providers.base import Provider

if TYPE_CHECKING:  # at run time asyncio is imported by the functions that use it
    import asyncio

__all__ = ["FLIGHTS", "DaemonPool", "Result", "StillRunning", "acollect_all", "collect_all"]

# An outcome is (True, what collect returned) or (False, the exception it raised).
Outcome = tuple[bool, object]
# Turns an outcome into plain data, in the worker; never raises.
Finish = Callable[[Outcome], object]


class StillRunning(NamedTuple):
    """The provider's collect from an earlier build has not returned: it was not started."""

    since: float  # time.monotonic() when that collect started


# What a build learns of each provider: what its finish made of the outcome, StillRunning,
# or None (nothing in time).
Result = object


class DaemonPool:
    """Reusable daemon worker threads, grown on demand and never joined.

    Reusing idle workers instead of starting a thread per provider per run keeps the
    builder's own overhead small. A worker stuck in a hung provider is simply not
    idle, so the next submit starts another (at most one per provider: see Flights). Idle
    workers exit after ``idle_timeout``. ``max_workers`` is the backstop for callers that
    make a new hung provider object every run: past it, submit raises RuntimeError, which
    the builder reports as that provider's error.
    """

    def __init__(self, idle_timeout: float = 60.0, max_workers: int = 256) -> None:
        self._idle_timeout = idle_timeout
        self._max_workers = max_workers
        self._reset()
        if hasattr(os, "register_at_fork"):
            # A forked child has none of the parent's threads; counting them as idle would
            # hand tasks to workers that do not exist.
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a task and not yet promised one
        self._workers = 0

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
            elif self._workers >= self._max_workers:
                raise RuntimeError(
                    f"all {self._max_workers} provider worker threads are busy in collects "
                    "that have not returned"
                )
            else:
                self._workers += 1
        if spawn:  # started before the task is queued: if it cannot start, nothing is queued
            try:
                thread = threading.Thread(
                    target=self._work, name="runcontext-provider", daemon=True
                )
                thread.start()
            except BaseException:
                with self._lock:
                    self._workers -= 1
                raise
        self._tasks.put(task)

    def _work(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody was promised this worker: leave
                        self._idle -= 1
                        self._workers -= 1
                        return
                continue  # a task was promised to a waiting worker: stay for it
            task()
            with self._lock:
                self._idle += 1


_POOL = DaemonPool()


class Flight:
    """One collect running in a worker thread, and the builds waiting for its outcome."""

    __slots__ = ("deadline", "finish", "provider", "started", "waiters")

    def __init__(self, provider: Provider, deadline: float, finish: Finish) -> None:
        self.provider = provider  # held, so its id() cannot be reused while it runs
        self.deadline = deadline
        # The starting build's: builds that join share what it made of the outcome.
        self.finish = finish
        self.started = time.monotonic()
        self.waiters: list[Callable[[Result], None]] = []


class Flights:
    """At most one collect in flight per provider object, across all builds and builders.

    A provider that hangs forever holds one worker thread, not one per build: while its
    collect from a build whose deadline has passed still runs, later builds report it as a
    timeout at once instead of starting another. Builds that overlap (two threads, or two
    ``abuild()`` tasks, sharing a provider) share the collect in flight: it was started
    within their deadline, so its result is as fresh as a new one.
    """

    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)  # no flight survives a fork

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, Flight] = {}

    def join(
        self, waits: Sequence[tuple[Provider, Finish, Callable[[Result], None]]], deadline: float
    ) -> list[Flight | StillRunning | None]:
        """For each ``(provider, finish, deliver)``, wait for the provider's result.

        Returns, for each, a new flight the caller must start, ``None`` when a flight of an
        overlapping build was joined, or :class:`StillRunning` (``deliver`` is then never
        called). One lock for the whole build: workers landing flights contend for it.
        """
        joined: list[Flight | StillRunning | None] = []
        with self._lock:
            now = time.monotonic()
            for provider, finish, deliver in waits:
                flight = self._running.get(id(provider))
                if flight is None:
                    flight = Flight(provider, deadline, finish)
                    self._running[id(provider)] = flight
                    joined.append(flight)
                elif flight.deadline <= now:
                    joined.append(StillRunning(flight.started))
                    continue
                else:
                    joined.append(None)
                flight.waiters.append(deliver)
        return joined

    def land(self, flight: Flight, outcome: Result) -> None:
        with self._lock:
            if self._running.get(id(flight.provider)) is flight:
                del self._running[id(flight.provider)]
            waiters, flight.waiters = flight.waiters, []
        for deliver in waiters:
            deliver(outcome)


FLIGHTS = Flights()


def collect_all(
    providers: Sequence[Provider], finishes: Sequence[Finish], deadline: float
) -> list[Result]:
    """Each provider's finished result, blocking until all have answered or ``deadline``.

    ``deadline`` is a ``time.monotonic()`` value. A provider that has not answered by then
    gets ``None``; its late result lands in a queue nobody reads.
    """
    done: queue.SimpleQueue[tuple[int, Result]] = queue.SimpleQueue()
    results: list[Result] = [None] * len(providers)
    pending: set[int] = set()
    waits = [
        (provider, finish, _to_queue(done, index))
        for index, (provider, finish) in enumerate(zip(providers, finishes, strict=True))
    ]
    for index, flight in enumerate(FLIGHTS.join(waits, deadline)):
        if isinstance(flight, StillRunning):
            results[index] = flight
            continue
        pending.add(index)
        if flight is not None:
            _start(flight)
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            index, result = done.get(timeout=remaining)
        except queue.Empty:
            break
        results[index] = result
        pending.discard(index)
    return results


async def acollect_all(
    providers: Sequence[Provider],
    is_async: Sequence[bool],
    finishes: Sequence[Finish],
    deadline: float,
) -> list[Result]:
    """Like :func:`collect_all`, without blocking the running loop.

    Async providers (``is_async``, decided once by the caller: looking up ``collect`` runs
    the provider's code) run as tasks on this loop and are cancelled at the deadline (one
    that swallows the cancellation keeps running, but its result is discarded); sync
    providers run in worker threads as in :func:`collect_all`.
    """
    import asyncio  # on first use: a sync build runs without it

    loop = asyncio.get_running_loop()
    slots: list[asyncio.Future[Result] | StillRunning] = []
    waits: list[tuple[Provider, Finish, Callable[[Result], None]]] = []
    sync: list[int] = []
    for provider, coroutine, finish in zip(providers, is_async, finishes, strict=True):
        if coroutine:
            slots.append(loop.create_task(_acall(provider, deadline, finish)))
        else:
            future, deliver = _loop_future(loop)
            sync.append(len(slots))
            slots.append(future)
            waits.append((provider, finish, deliver))
    for index, flight in zip(sync, FLIGHTS.join(waits, deadline), strict=True):
        if isinstance(flight, StillRunning):
            slots[index] = flight
        elif flight is not None:
            _start(flight)
    waiting = [slot for slot in slots if isinstance(slot, asyncio.Future)]
    try:
        if waiting:
            await asyncio.wait(waiting, timeout=max(deadline - time.monotonic(), 0.0))
    except BaseException:  # abuild() itself cancelled: take its providers down with it
        for future in waiting:
            future.cancel()
        raise
    results: list[Result] = []
    for slot in slots:
        if isinstance(slot, StillRunning):
            results.append(slot)
        elif slot.done() and not slot.cancelled():
            results.append(slot.result())
        else:
            slot.cancel()
            results.append(None)
    return results


def _start(flight: Flight) -> None:
    """Run ``flight``'s collect in a worker thread, in the caller's context variables."""
    context = contextvars.copy_context()

    def task() -> None:
        outcome = context.run(_call, flight.provider, flight.deadline)
        FLIGHTS.land(flight, None if outcome is None else flight.finish(outcome))

    try:
        _POOL.submit(task)
    except RuntimeError as error:  # no thread to be had (interpreter exit, thread limit)
        FLIGHTS.land(flight, flight.finish((False, error)))  # our own error: safe to read here


_LATE = object()  # what _bounded returns when the deadline passed first


async def _bounded(awaitable: Awaitable[object], deadline: float) -> object:
    # Not asyncio.wait_for: a TimeoutError the provider raises itself must stay an error,
    # as it is under abuild(), and not pass for the deadline.
    import asyncio  # on first use: a sync build runs without it

    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=max(deadline - time.monotonic(), 0.0))
    if not done:
        task.cancel()
        return _LATE
    return task.result()


def _is_awaitable(value: object) -> TypeGuard[Awaitable[object]]:
    return inspect.isawaitable(value)


def _call(provider: Provider, deadline: float) -> Outcome | None:
    """Run ``collect`` to completion in this (worker) thread; never raises."""
    try:
        result: object = provider.collect(deadline)
        if _is_awaitable(result):
            import asyncio  # only for an async provider: a sync build runs without it

            # An async provider under collect_all(): a private loop, cancelled at the deadline.
            result = asyncio.run(_bounded(result, deadline))
            if result is _LATE:
                return None
        return True, result
    except BaseException as error:  # the contract has no error path
        return False, error


async def _acall(provider: Provider, deadline: float, finish: Finish) -> Result:
    import asyncio  # on first use: a sync build runs without it

    outcome: Outcome
    try:
        # No timeout of its own: acollect_all() cancels it at the deadline (a timeout).
        outcome = True, await provider.collect(deadline)  # type: ignore[misc]
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # the contract has no error path
        outcome = False, error
    # Reading the result runs the provider's code: in a worker, not on this loop, where a
    # slow read would block the very wait that enforces the deadline.
    future, deliver = _loop_future(asyncio.get_running_loop())
    try:
        _POOL.submit(lambda: deliver(finish(outcome)))
    except RuntimeError as error:  # no thread to be had: the outcome is not read at all
        return finish((False, error))
    return await future


def _to_queue(done: queue.SimpleQueue[tuple[int, Result]], index: int) -> Callable[[Result], None]:
    def deliver(result: Result) -> None:
        done.put((index, result))  # after the deadline, into a queue nobody reads

    return deliver


def _loop_future(
    loop: asyncio.AbstractEventLoop,
) -> tuple[asyncio.Future[Result], Callable[[Result], None]]:
    """A future on ``loop`` and a function any thread may call to settle it."""

    future: asyncio.Future[Result] = loop.create_future()

    def settle(result: Result) -> None:
        if not future.done():  # cancelled at the deadline: the late result is dropped
            future.set_result(result)

    def deliver(result: Result) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(settle, result)

    return future, deliver
