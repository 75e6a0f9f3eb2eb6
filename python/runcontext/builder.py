"""ContextBuilder: run providers concurrently under one deadline and make a RunContext.

The builder is the composition root's side of a RunContext. Its one promise is that a run is
never delayed past its deadline or failed by a provider: a provider that raises, hangs,
returns garbage or too much contributes nothing to that run, and a :class:`Diagnostic` says
why. There is no retry: the next run simply asks again.

Sync providers run in daemon worker threads (a hung one can neither delay the build nor
block interpreter exit, which a ``ThreadPoolExecutor`` would: it joins its workers at exit),
at most one collect per provider at a time, so a provider hung forever holds one thread, not
one per build. Async providers run as tasks on the caller's loop in
:meth:`ContextBuilder.abuild` and are cancelled at the deadline; in
:meth:`ContextBuilder.build` each gets a private loop in a worker. Output follows the
providers' order, never completion order, so the same environment gives the same digest
however the threads were scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import itertools
import math
import os
import queue
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, NamedTuple

from runcontext._core import RunContext, digest
from runcontext.providers.base import Contribution, Diagnostic, Pairs, Provider
from runcontext.providers.redact import REVISION as REDACTION_REVISION
from runcontext.providers.redact import redact as redact_text

__all__ = ["BUILDER_REVISION", "ContextBuilder"]

# Bump whenever the way contributions are checked, merged or bounded changes.
BUILDER_REVISION = "builder/2"

_MAX_PROVIDER_DIAGNOSTICS = 20
_MAX_MESSAGE = 300
# Messages are redacted on a window this much longer than what is kept, so a secret that
# crosses the cut is still seen whole by the patterns.
_SECRET_MARGIN = 200
_WORD = re.compile(r"\S+")

# An outcome is (True, what collect returned) or (False, the exception it raised).
_Outcome = tuple[bool, object]


class _StillRunning(NamedTuple):
    """The provider's collect from an earlier build has not returned: it was not started."""

    since: float  # time.monotonic() when that collect started


# What a build learns of each provider: an outcome, still running, or nothing in time.
_Result = _Outcome | _StillRunning | None


class _DaemonPool:
    """Reusable daemon worker threads, grown on demand and never joined.

    Starting a thread per provider per run costs about 50-100 µs each; reusing idle workers
    keeps the builder's own overhead small. A worker stuck in a hung provider is simply not
    idle, so the next submit starts another (at most one per provider: see _Flights). Idle
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


_POOL = _DaemonPool()


class _Flight:
    """One collect running in a worker thread, and the builds waiting for its outcome."""

    __slots__ = ("deadline", "provider", "started", "waiters")

    def __init__(self, provider: Provider, deadline: float) -> None:
        self.provider = provider  # held, so its id() cannot be reused while it runs
        self.deadline = deadline
        self.started = time.monotonic()
        self.waiters: list[Callable[[_Result], None]] = []


class _Flights:
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
        self._running: dict[int, _Flight] = {}

    def join(
        self, waits: Sequence[tuple[Provider, Callable[[_Result], None]]], deadline: float
    ) -> list[_Flight | _StillRunning | None]:
        """For each ``(provider, deliver)``, wait for the provider's outcome with ``deliver``.

        Returns, for each, a new flight the caller must start, ``None`` when a flight of an
        overlapping build was joined, or :class:`_StillRunning` (``deliver`` is then never
        called). One lock for the whole build: workers landing flights contend for it.
        """
        joined: list[_Flight | _StillRunning | None] = []
        with self._lock:
            now = time.monotonic()
            for provider, deliver in waits:
                flight = self._running.get(id(provider))
                if flight is None:
                    flight = _Flight(provider, deadline)
                    self._running[id(provider)] = flight
                    joined.append(flight)
                elif flight.deadline <= now:
                    joined.append(_StillRunning(flight.started))
                    continue
                else:
                    joined.append(None)
                flight.waiters.append(deliver)
        return joined

    def land(self, flight: _Flight, outcome: _Result) -> None:
        with self._lock:
            if self._running.get(id(flight.provider)) is flight:
                del self._running[id(flight.provider)]
            waiters, flight.waiters = flight.waiters, []
        for deliver in waiters:
            deliver(outcome)


_FLIGHTS = _Flights()


def _start(flight: _Flight) -> None:
    """Run ``flight``'s collect in a worker thread, in the caller's context variables."""
    context = contextvars.copy_context()

    def task() -> None:
        _FLIGHTS.land(flight, context.run(_call, flight.provider, flight.deadline))

    try:
        _POOL.submit(task)
    except RuntimeError as error:  # no thread to be had (interpreter exit, thread limit)
        _FLIGHTS.land(flight, (False, error))


class _Late:
    pass


_LATE = _Late()


async def _bounded(awaitable: Awaitable[object], deadline: float) -> object:
    # Not asyncio.wait_for: a TimeoutError the provider raises itself must stay an error,
    # as it is under abuild(), and not pass for the deadline.
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=max(deadline - time.monotonic(), 0.0))
    if not done:
        task.cancel()
        return _LATE
    return task.result()


def _call(provider: Provider, deadline: float) -> _Outcome | None:
    """Run ``collect`` to completion in this (worker) thread; never raises."""
    try:
        result: object = provider.collect(deadline)
        if inspect.isawaitable(result):
            # An async provider under build(): a private loop, cancelled at the deadline.
            result = asyncio.run(_bounded(result, deadline))
            if result is _LATE:
                return None
        return True, result
    except BaseException as error:  # the contract has no error path
        return False, error


def _check_provider(index: int, provider: object, max_bytes: int) -> tuple[str, str, int]:
    where = f"providers[{index}]"
    name = getattr(provider, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"{where}: {provider!r} has no name; give it a non-empty `name` string")
    revision = getattr(provider, "revision", None)
    if not isinstance(revision, str) or not revision.strip():
        raise ValueError(
            f"{where} ({name!r}) has no revision: set `revision` to a non-empty string such "
            f"as '{name}/1' and change it whenever its output could change, so request "
            "fingerprints tell its versions apart"
        )
    if not callable(getattr(provider, "collect", None)):
        raise TypeError(f"{where} ({name!r}) has no collect(deadline) method")
    declared = getattr(provider, "max_output_bytes", None)
    if declared is None:
        return name, revision, max_bytes
    if isinstance(declared, bool) or not isinstance(declared, int) or declared <= 0:
        raise ValueError(
            f"{where} ({name!r}): max_output_bytes must be a positive int, got {declared!r}"
        )
    return name, revision, max(declared, max_bytes)


def _short(text: str, limit: int = _MAX_MESSAGE) -> str:
    """White space collapsed, cut to ``limit`` characters; reads only what it keeps."""
    kept: list[str] = []
    length = -1
    for word in _WORD.finditer(text):
        kept.append(word.group())
        length += len(kept[-1]) + 1
        if length > limit:
            break
    joined = " ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _describe(error: object) -> str:
    try:
        return f"raised {type(error).__name__}: {error}"
    except Exception:  # a __str__ that raises: the type is all there is to say
        return f"raised {type(error).__name__} (its message could not be read)"


class ContextBuilder:
    """Builds a :class:`RunContext` per run from ``providers``, within ``deadline`` seconds.

    ``head`` and ``tail`` are the caller's own sections, ``(name, text)`` pairs that are the
    same every run (a system prompt, a tool catalogue note): ``head`` comes first in the
    head message, before any provider's head sections, and ``tail`` comes last in the tail
    message, after the providers' facts and tail sections. They are checked here (the
    RunContext rules, reported under ``head_sections``/``tail_sections``) and passed
    through as written: redaction is for what providers read from the environment.

    ``max_bytes`` bounds each provider's contribution (UTF-8 bytes of all its names and
    values); a provider whose ``max_output_bytes`` attribute says it may return more (the
    instructions provider with a large budget) gets that bound instead. ``redact`` replaces
    recognisable secrets in providers' output. Providers without a non-empty ``revision``,
    duplicate names or a non-positive deadline are refused here, with a message saying
    which.
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        head: Pairs = (),
        tail: Pairs = (),
        deadline: float = 0.25,
        redact: bool = True,
        max_bytes: int = 64 * 1024,
    ) -> None:
        if isinstance(providers, str | bytes) or not isinstance(providers, Sequence):
            raise TypeError(
                f"providers: expected a sequence of providers, got {type(providers).__name__}"
            )
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError(f"max_bytes: expected a positive byte count, got {max_bytes!r}")
        names: list[str] = []
        bounds: list[int] = []
        revisions: list[list[object]] = []
        for index, provider in enumerate(providers):
            name, revision, bound = _check_provider(index, provider, max_bytes)
            if name in names:
                raise ValueError(
                    f"providers[{index}]: the name {name!r} is already used by "
                    f"providers[{names.index(name)}]; provider names must be unique"
                )
            names.append(name)
            bounds.append(bound)
            revisions.append([name, revision, bound])
        if not isinstance(deadline, int | float) or not math.isfinite(deadline) or deadline <= 0:
            raise ValueError(f"deadline: expected a positive number of seconds, got {deadline!r}")
        static = RunContext(head_sections=head, tail_sections=tail)  # raises RunContextError
        self._providers: tuple[Provider, ...] = tuple(providers)
        self._names = tuple(names)
        self._bounds = tuple(bounds)
        self._head = static.head_sections
        self._tail = static.tail_sections
        self._deadline = float(deadline)
        self._redact = redact
        self._revision = digest(
            {
                "builder": BUILDER_REVISION,
                "redaction": REDACTION_REVISION if redact else None,
                "max_bytes": max_bytes,
                "providers": revisions,
            }
        )

    @property
    def revision(self) -> str:
        """A digest of the builder's own rules and each provider's name, revision and bound.

        Read once at construction: a provider whose revision changes later needs a new
        builder. It enters :func:`runcontext.fingerprint.request_fingerprint`.
        """
        return self._revision

    @property
    def providers(self) -> tuple[Provider, ...]:
        return self._providers

    @property
    def deadline(self) -> float:
        return self._deadline

    def build(self) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """Run every provider and return the context and diagnostics, within the deadline."""
        deadline = time.monotonic() + self._deadline
        done: queue.SimpleQueue[tuple[int, _Result]] = queue.SimpleQueue()
        results: list[_Result] = [None] * len(self._providers)
        pending: set[int] = set()
        waits = [
            (provider, _to_queue(done, index)) for index, provider in enumerate(self._providers)
        ]
        for index, flight in enumerate(_FLIGHTS.join(waits, deadline)):
            if isinstance(flight, _StillRunning):
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
        return self._assemble(results)

    async def abuild(self) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """Like :meth:`build`, without blocking the running loop.

        Async providers run as tasks on this loop and are cancelled at the deadline (one
        that swallows the cancellation keeps running, but its result is discarded); sync
        providers run in worker threads as in :meth:`build`.
        """
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self._deadline
        slots: list[asyncio.Future[_Result] | _StillRunning] = []
        waits: list[tuple[Provider, Callable[[_Result], None]]] = []
        sync: list[int] = []
        for provider in self._providers:
            if inspect.iscoroutinefunction(provider.collect):
                slots.append(loop.create_task(_acall(provider, deadline)))
            else:
                future, deliver = _loop_future(loop)
                sync.append(len(slots))
                slots.append(future)
                waits.append((provider, deliver))
        for index, flight in zip(sync, _FLIGHTS.join(waits, deadline), strict=True):
            if isinstance(flight, _StillRunning):
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
        results: list[_Result] = []
        for slot in slots:
            if isinstance(slot, _StillRunning):
                results.append(slot)
            elif slot.done() and not slot.cancelled():
                results.append(slot.result())
            else:
                slot.cancel()
                results.append(None)
        return self._assemble(results)

    def _assemble(self, results: Sequence[_Result]) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        diagnostics: list[Diagnostic] = []
        facts: list[tuple[str, str]] = []
        head: list[tuple[str, str]] = list(self._head)
        tail: list[tuple[str, str]] = []
        fact_names: set[str] = set()
        section_names = {name for name, _ in (*self._head, *self._tail)}
        for name, bound, result in zip(self._names, self._bounds, results, strict=True):
            contribution = self._check(name, bound, result, diagnostics)
            if contribution is None:
                continue
            for kind, entries, target, seen in (
                ("fact", contribution.facts, facts, fact_names),
                ("head section", contribution.head_sections, head, section_names),
                ("tail section", contribution.tail_sections, tail, section_names),
            ):
                for entry_name, value in entries:
                    if entry_name in seen:
                        diagnostics.append(
                            Diagnostic(
                                name,
                                "duplicate",
                                f"{kind} {entry_name!r} left out: an earlier provider or the "
                                "caller already uses that name",
                            )
                        )
                        continue
                    seen.add(entry_name)
                    if self._redact:
                        value = self._redacted(name, kind, entry_name, value, diagnostics)
                    target.append((entry_name, value))
        context = RunContext(head_sections=head, facts=facts, tail_sections=[*tail, *self._tail])
        return context, tuple(diagnostics)

    def _check(
        self, name: str, bound: int, result: _Result, diagnostics: list[Diagnostic]
    ) -> RunContext | None:
        """The provider's contribution as a validated RunContext, or ``None`` and a reason.

        Everything a provider returned is untrusted: any exception reading it (a generator
        that raises, a ``str`` subclass whose ``__len__`` raises) makes it ``invalid``, and
        nothing is iterated without a bound, so an infinite iterator cannot stall the build.
        """
        if result is None:
            message = (
                f"no result within the {self._deadline * 1000:.0f} ms deadline; "
                "a late result is discarded"
            )
            diagnostics.append(Diagnostic(name, "timeout", message))
            return None
        if isinstance(result, _StillRunning):
            age = time.monotonic() - result.since
            message = (
                f"still running since an earlier build ({age:.1f} s ago); not started again "
                "until that collect returns"
            )
            diagnostics.append(Diagnostic(name, "timeout", message))
            return None
        ok, value = result
        if not ok:
            diagnostics.append(Diagnostic(name, "error", self._clean(_describe(value))))
            return None
        if value is None:
            return None
        if not isinstance(value, Contribution):
            message = f"collect() returned {type(value).__name__}; expected a Contribution or None"
            diagnostics.append(Diagnostic(name, "invalid", message))
            return None
        self._relay(name, value, diagnostics)
        try:
            facts, head, tail, size = _take_entries(value, bound)
        except _TooLarge:
            message = f"contribution left out: more than the {bound}-byte bound"
            diagnostics.append(Diagnostic(name, "too-large", message))
            return None
        except Exception as error:
            message = f"contribution refused: {_describe(error)}"
            diagnostics.append(Diagnostic(name, "invalid", self._clean(message)))
            return None
        try:
            # The RunContext rules: types, names, duplicates within the provider.
            checked = RunContext(head_sections=head, facts=facts, tail_sections=tail)
            size = _byte_count((facts, head, tail))
        except Exception as error:
            try:
                message = f"contribution refused: {error}"
            except Exception:
                message = f"contribution refused: {type(error).__name__}"
            diagnostics.append(Diagnostic(name, "invalid", self._clean(message)))
            return None
        if size > bound:
            message = f"contribution left out: {size} bytes, over the {bound}-byte bound"
            diagnostics.append(Diagnostic(name, "too-large", message))
            return None
        return checked

    def _relay(self, name: str, contribution: Contribution, diagnostics: list[Diagnostic]) -> None:
        """Pass on a provider's own diagnostics, bounded in count and length."""
        try:
            notes = contribution.diagnostics
            if type(notes) in (tuple, list) and not notes:
                return  # the common case: nothing to relay
            if isinstance(notes, str | bytes) or not isinstance(notes, Iterable):
                raise TypeError(type(notes).__name__)
            pairs = list(itertools.islice(notes, _MAX_PROVIDER_DIAGNOSTICS))
        except Exception:
            message = "diagnostics was not a sequence of (kind, message) pairs"
            diagnostics.append(Diagnostic(name, "invalid", message))
            return
        for pair in pairs:
            try:
                parts = tuple(itertools.islice(pair, 3)) if isinstance(pair, tuple | list) else ()
                if len(parts) != 2 or not all(isinstance(part, str) for part in parts):
                    raise TypeError
                # str.__str__ gives a plain str, whatever a subclass overrides.
                kind, message = (str.__str__(part) for part in parts)
                diagnostics.append(Diagnostic(name, _short(kind), self._clean(message)))
            except Exception:
                message = "a diagnostic was not a (kind, message) pair of strings"
                diagnostics.append(Diagnostic(name, "invalid", message))

    def _clean(self, message: str) -> str:
        # Exception texts and provider notes can quote what they read; redact them too. Cut
        # first (with a margin, so a secret across the cut is still recognised): redaction
        # is linear, but a 10 MB exception message would still cost 10 MB of it.
        window = _short(message, _MAX_MESSAGE + _SECRET_MARGIN)
        return _short(redact_text(window)[0] if self._redact else window)

    def _redacted(
        self, name: str, kind: str, entry: str, value: str, diagnostics: list[Diagnostic]
    ) -> str:
        redacted, found = redact_text(value)
        if found:
            counts = ", ".join(f"{count} {label}" for label, count in sorted(found.items()))
            diagnostics.append(
                Diagnostic(name, "redacted", f"{kind} {entry!r}: replaced {counts} with [redacted]")
            )
        return redacted


class _TooLarge(Exception):
    pass


# Entries as a provider returned them: RunContext checks their types.
_Unchecked = list[Any]


def _take_entries(
    contribution: Contribution, bound: int
) -> tuple[_Unchecked, _Unchecked, _Unchecked, int]:
    """Facts, head and tail as lists, never reading more than ``bound`` characters' worth.

    Each entry counts its names' and values' characters (at least one: a name is never
    empty), and a str has at least as many UTF-8 bytes as characters, so 10 MB of text or an
    endless sequence is refused after ``bound`` characters, without encoding anything.
    """
    total = 0
    taken: list[_Unchecked] = []
    for field in ("facts", "head", "tail"):
        entries = getattr(contribution, field)
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise TypeError(
                f"{field}: expected a sequence of (name, value) pairs, got {type(entries).__name__}"
            )
        # A list or tuple has the length it says; any other sequence is read one past the
        # bound at most (each entry counts at least one).
        plain = type(entries) in (list, tuple) and len(entries) <= bound
        kept: _Unchecked = []
        for entry in entries if plain else itertools.islice(entries, bound + 1):
            if type(entry) is tuple and len(entry) == 2:
                name, value = entry
                length = (str.__len__(name) if isinstance(name, str) else 0) + (
                    str.__len__(value) if isinstance(value, str) else 0
                )
            elif isinstance(entry, tuple | list):  # a pair has 2 items; a third says "not a pair"
                entry = tuple(itertools.islice(entry, 3))
                length = sum(str.__len__(part) for part in entry if isinstance(part, str))
            else:  # not a pair at all: RunContext says so, naming its type
                length = str.__len__(entry) if isinstance(entry, str) else 0
            total += max(length, 1)
            if total > bound:
                raise _TooLarge
            kept.append(entry)
        taken.append(kept)
    return taken[0], taken[1], taken[2], total


def _byte_count(fields: Iterable[_Unchecked]) -> int:
    """UTF-8 bytes of every name and value, entries with an empty or no value included."""
    return sum(
        len(str.encode(part))
        for entries in fields
        for entry in entries
        if isinstance(entry, tuple)
        for part in entry
        if isinstance(part, str)
    )


async def _acall(provider: Provider, deadline: float) -> _Result:
    try:
        # No timeout of its own: abuild() cancels it at the deadline, reported as a timeout.
        return True, await provider.collect(deadline)  # type: ignore[misc]
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # the contract has no error path
        return False, error


def _to_queue(
    done: queue.SimpleQueue[tuple[int, _Result]], index: int
) -> Callable[[_Result], None]:
    def deliver(result: _Result) -> None:
        done.put((index, result))  # after the deadline, into a queue nobody reads

    return deliver


def _loop_future(
    loop: asyncio.AbstractEventLoop,
) -> tuple[asyncio.Future[_Result], Callable[[_Result], None]]:
    """A future on ``loop`` and a function any thread may call to settle it."""
    future: asyncio.Future[_Result] = loop.create_future()

    def settle(result: _Result) -> None:
        if not future.done():  # cancelled at the deadline: the late result is dropped
            future.set_result(result)

    def deliver(result: _Result) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(settle, result)

    return future, deliver
