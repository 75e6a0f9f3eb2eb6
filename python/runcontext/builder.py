"""ContextBuilder: run providers concurrently under one deadline and make a RunContext.

The builder is the composition root's side of a RunContext. Its one promise is that a run is
never delayed past its deadline or failed by a provider: a provider that raises, hangs,
returns garbage or too much contributes nothing to that run, and a :class:`Diagnostic` says
why. There is no retry: the next run simply asks again.

Sync providers run in daemon worker threads (a hung one can neither delay the build nor
block interpreter exit, which a ``ThreadPoolExecutor`` would: it joins its workers at exit).
Async providers run as tasks on the caller's loop in :meth:`ContextBuilder.abuild` and are
cancelled at the deadline; in :meth:`ContextBuilder.build` each gets a private loop in a
worker. Output follows the providers' order, never completion order, so the same
environment gives the same digest however the threads were scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import math
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Sequence

from runcontext._core import RunContext, digest
from runcontext.errors import RunContextError
from runcontext.providers.base import Contribution, Diagnostic, Pairs, Provider
from runcontext.providers.redact import REVISION as REDACTION_REVISION
from runcontext.providers.redact import redact as redact_text

__all__ = ["BUILDER_REVISION", "ContextBuilder"]

# Bump whenever the way contributions are checked, merged or bounded changes.
BUILDER_REVISION = "builder/1"

_MAX_PROVIDER_DIAGNOSTICS = 20
_MAX_MESSAGE = 300

# An outcome is (True, what collect returned) or (False, the exception it raised); no outcome
# (None) means the provider did not finish in time.
_Outcome = tuple[bool, object]


class _DaemonPool:
    """Reusable daemon worker threads, grown on demand and never joined.

    Starting a thread per provider per run costs about 50-100 µs each; reusing idle workers
    keeps the builder's own overhead small. A worker stuck in a hung provider is simply not
    idle, so the next submit starts another. Idle workers exit after ``idle_timeout``.
    """

    def __init__(self, idle_timeout: float = 60.0) -> None:
        self._idle_timeout = idle_timeout
        self._reset()
        if hasattr(os, "register_at_fork"):
            # A forked child has none of the parent's threads; counting them as idle would
            # hand tasks to workers that do not exist.
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a task and not yet promised one

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        if spawn:  # started before the task is queued: if it cannot start, nothing is queued
            threading.Thread(target=self._work, name="runcontext-provider", daemon=True).start()
        self._tasks.put(task)

    def _work(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody was promised this worker: leave
                        self._idle -= 1
                        return
                continue  # a task was promised to a waiting worker: stay for it
            task()
            with self._lock:
                self._idle += 1


_POOL = _DaemonPool()


async def _bounded(awaitable: Awaitable[object], deadline: float) -> object:
    return await asyncio.wait_for(awaitable, max(deadline - time.monotonic(), 0.0))


def _call(provider: Provider, deadline: float) -> _Outcome | None:
    """Run ``collect`` to completion in this (worker) thread; never raises."""
    try:
        result: object = provider.collect(deadline)
        if inspect.isawaitable(result):
            # An async provider under build(): a private loop, cancelled at the deadline.
            try:
                result = asyncio.run(_bounded(result, deadline))
            except TimeoutError:
                return None
        return True, result
    except BaseException as error:  # the contract has no error path
        return False, error


def _check_provider(index: int, provider: object) -> tuple[str, str]:
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
    return name, revision


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


class ContextBuilder:
    """Builds a :class:`RunContext` per run from ``providers``, within ``deadline`` seconds.

    ``head`` and ``tail`` are the caller's own sections, ``(name, text)`` pairs that are the
    same every run (a system prompt, a tool catalogue note): ``head`` comes first in the
    head message, before any provider's head sections, and ``tail`` comes last in the tail
    message, after the providers' facts and tail sections. They are checked here (the
    RunContext rules, reported under ``head_sections``/``tail_sections``) and passed
    through as written: redaction is for what providers read from the environment.

    ``max_bytes`` bounds each provider's contribution (UTF-8 bytes of its names and
    values); ``redact`` replaces recognisable secrets in providers' output. Providers
    without a non-empty ``revision``, duplicate names or a non-positive deadline are
    refused here, with a message saying which.
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
        names: list[str] = []
        revisions: list[list[str]] = []
        for index, provider in enumerate(providers):
            name, revision = _check_provider(index, provider)
            if name in names:
                raise ValueError(
                    f"providers[{index}]: the name {name!r} is already used by "
                    f"providers[{names.index(name)}]; provider names must be unique"
                )
            names.append(name)
            revisions.append([name, revision])
        if not isinstance(deadline, int | float) or not math.isfinite(deadline) or deadline <= 0:
            raise ValueError(f"deadline: expected a positive number of seconds, got {deadline!r}")
        if max_bytes <= 0:
            raise ValueError(f"max_bytes: expected a positive byte count, got {max_bytes!r}")
        static = RunContext(head_sections=head, tail_sections=tail)  # raises RunContextError
        self._providers: tuple[Provider, ...] = tuple(providers)
        self._names = tuple(names)
        self._head = static.head_sections
        self._tail = static.tail_sections
        self._deadline = float(deadline)
        self._redact = redact
        self._max_bytes = max_bytes
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
        """A digest of the builder's own rules and each provider's name and revision.

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
        done: queue.SimpleQueue[tuple[int, _Outcome | None]] = queue.SimpleQueue()
        for index, provider in enumerate(self._providers):
            _submit_to_queue(done, index, provider, deadline)
        outcomes: list[_Outcome | None] = [None] * len(self._providers)
        pending = set(range(len(self._providers)))
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                index, outcome = done.get(timeout=remaining)
            except queue.Empty:
                break
            outcomes[index] = outcome
            pending.discard(index)
        return self._assemble(outcomes)

    async def abuild(self) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """Like :meth:`build`, without blocking the running loop.

        Async providers run as tasks on this loop and are cancelled at the deadline (one
        that swallows the cancellation keeps running, but its result is discarded); sync
        providers run in worker threads as in :meth:`build`.
        """
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self._deadline
        waiting: list[asyncio.Future[_Outcome | None]] = []
        for provider in self._providers:
            if inspect.iscoroutinefunction(provider.collect):
                waiting.append(loop.create_task(_acall(provider, deadline)))
            else:
                waiting.append(_submit_to_loop(loop, provider, deadline))
        try:
            if waiting:
                await asyncio.wait(waiting, timeout=max(deadline - time.monotonic(), 0.0))
        except BaseException:  # abuild() itself cancelled: take its providers down with it
            for future in waiting:
                future.cancel()
            raise
        outcomes: list[_Outcome | None] = []
        for future in waiting:
            if future.done() and not future.cancelled():
                outcomes.append(future.result())
            else:
                future.cancel()
                outcomes.append(None)
        return self._assemble(outcomes)

    def _assemble(
        self, outcomes: Sequence[_Outcome | None]
    ) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        diagnostics: list[Diagnostic] = []
        facts: list[tuple[str, str]] = []
        head: list[tuple[str, str]] = list(self._head)
        tail: list[tuple[str, str]] = []
        fact_names: set[str] = set()
        section_names = {name for name, _ in (*self._head, *self._tail)}
        for name, outcome in zip(self._names, outcomes, strict=True):
            contribution = self._check(name, outcome, diagnostics)
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
        self, name: str, outcome: _Outcome | None, diagnostics: list[Diagnostic]
    ) -> RunContext | None:
        """The provider's contribution as a validated RunContext, or ``None`` and a reason."""
        if outcome is None:
            diagnostics.append(
                Diagnostic(
                    name,
                    "timeout",
                    f"no result within the {self._deadline * 1000:.0f} ms deadline; "
                    "a late result is discarded",
                )
            )
            return None
        ok, value = outcome
        if not ok:
            message = f"raised {type(value).__name__}: {value}"
            diagnostics.append(Diagnostic(name, "error", self._clean(message)))
            return None
        if value is None:
            return None
        if not isinstance(value, Contribution):
            diagnostics.append(
                Diagnostic(
                    name,
                    "invalid",
                    f"collect() returned {type(value).__name__}; expected a Contribution or None",
                )
            )
            return None
        self._relay(name, value.diagnostics, diagnostics)
        try:
            # Cheap refusal first: a str has at least as many UTF-8 bytes as characters, so
            # 10 MB of text is refused without encoding or hashing it.
            if _char_count(value) > self._max_bytes:
                raise _TooLarge
            # Then the RunContext rules (types, names, duplicates within the provider).
            checked = RunContext(
                head_sections=value.head, facts=value.facts, tail_sections=value.tail
            )
        except _TooLarge:
            checked = None
        except (RunContextError, TypeError, ValueError) as error:
            message = f"contribution refused: {error}"
            diagnostics.append(Diagnostic(name, "invalid", self._clean(message)))
            return None
        size = -1 if checked is None else _byte_count(checked)
        if checked is None or size > self._max_bytes:
            shown = "more than" if checked is None else f"{size} bytes,"
            diagnostics.append(
                Diagnostic(
                    name,
                    "too-large",
                    f"contribution left out: {shown} over the {self._max_bytes}-byte bound",
                )
            )
            return None
        return checked

    def _relay(self, name: str, notes: object, diagnostics: list[Diagnostic]) -> None:
        """Pass on a provider's own diagnostics, bounded in count and length."""
        try:
            pairs = list(notes)[:_MAX_PROVIDER_DIAGNOSTICS]  # type: ignore[call-overload]
        except TypeError:
            pairs = [("invalid", "diagnostics was not a sequence of (kind, message) pairs")]
        for pair in pairs:
            if (
                isinstance(pair, tuple | list)
                and len(pair) == 2
                and all(isinstance(part, str) for part in pair)
            ):
                kind, message = pair
                diagnostics.append(Diagnostic(name, _short(kind), self._clean(message)))
            else:
                diagnostics.append(Diagnostic(name, "invalid", "a diagnostic was not a pair"))

    def _clean(self, message: str) -> str:
        # Exception texts and provider notes can quote what they read; redact them too.
        return _short(redact_text(message)[0] if self._redact else message)

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


def _char_count(contribution: Contribution) -> int:
    total = 0
    for entries in (contribution.facts, contribution.head, contribution.tail):
        if isinstance(entries, Sequence):
            for entry in entries:
                if isinstance(entry, tuple | list):
                    total += sum(len(part) for part in entry if isinstance(part, str))
    return total


def _byte_count(context: RunContext) -> int:
    return sum(
        len(name.encode()) + len(value.encode())
        for entries in (context.facts, context.head_sections, context.tail_sections)
        for name, value in entries
    )


async def _acall(provider: Provider, deadline: float) -> _Outcome | None:
    try:
        # No timeout of its own: abuild() cancels it at the deadline, reported as a timeout.
        return True, await provider.collect(deadline)  # type: ignore[misc]
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # the contract has no error path
        return False, error


def _submit_to_queue(
    done: queue.SimpleQueue[tuple[int, _Outcome | None]],
    index: int,
    provider: Provider,
    deadline: float,
) -> None:
    context = contextvars.copy_context()  # providers see the caller's context variables

    def task() -> None:
        done.put((index, context.run(_call, provider, deadline)))

    try:
        _POOL.submit(task)
    except RuntimeError as error:  # no thread to be had (interpreter exit, thread limit)
        done.put((index, (False, error)))


def _submit_to_loop(
    loop: asyncio.AbstractEventLoop, provider: Provider, deadline: float
) -> asyncio.Future[_Outcome | None]:
    future: asyncio.Future[_Outcome | None] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(outcome: _Outcome | None) -> None:
        if not future.done():  # cancelled at the deadline: the late result is dropped
            future.set_result(outcome)

    def task() -> None:
        outcome = context.run(_call, provider, deadline)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(deliver, outcome)

    try:
        _POOL.submit(task)
    except RuntimeError as error:  # no thread to be had (interpreter exit, thread limit)
        future.set_result((False, error))
    return future
