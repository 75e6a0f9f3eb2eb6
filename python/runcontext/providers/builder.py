"""ContextBuilder: run providers concurrently under one deadline and make a RunContext.

The builder is the composition root's side of a RunContext. Its one promise is that a run is
never delayed past its deadline or failed by a provider: a provider that raises, hangs,
returns garbage or too much contributes nothing to that run, and a :class:`Diagnostic` says
why. There is no retry: the next run simply asks again.

How providers are run (worker threads, at most one collect in flight per provider, async
providers on the caller's loop) is :mod:`runcontext.providers._workers`; how what they
returned is read, checked, bounded and redacted, in the worker and under the deadline, is
:mod:`runcontext.providers._contributions`. This module checks the providers at
construction and assembles the checked contributions in the providers' order, never
completion order, so the same environment gives the same digest however the threads were
scheduled. Assembling runs no provider code: everything it reads is plain data.
"""

from __future__ import annotations

import functools
import inspect
import math
import time
from collections.abc import Sequence

from runcontext._core import MAX_ENTRIES, RunContext, digest
from runcontext.providers._contributions import FIELDS, Checked, Text, check, message_text, resolve
from runcontext.providers._workers import FLIGHTS as _FLIGHTS  # noqa: F401  (tests reach it here)
from runcontext.providers._workers import DaemonPool as _DaemonPool  # noqa: F401  (tests reach it here)
from runcontext.providers._workers import (
    Finish,
    Result,
    StillRunning,
    acollect_all,
    collect_all,
)
from runcontext.providers.base import Diagnostic, Pairs, Provider
from runcontext.providers.redact import REVISION as REDACTION_REVISION

__all__ = ["BUILDER_REVISION", "ContextBuilder"]

# Duplicate names reported one by one per provider; past that, one count.
_MAX_DUPLICATES = 20

# Bump whenever the way contributions are checked, merged or bounded changes.
BUILDER_REVISION = "builder/2"


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


class ContextBuilder:
    """Builds a :class:`RunContext` per run from ``providers``, within ``deadline`` seconds.

    ``head_sections`` and ``tail_sections`` are the caller's own sections (named as in
    :class:`RunContext`), ``(name, text)`` pairs that are the same every run (a system prompt,
    a tool catalogue note): ``head_sections`` come first in the head message, before any
    provider's head sections, and ``tail_sections`` last in the tail message, after the
    providers' facts and tail sections. They are checked here (the
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
        head_sections: Pairs = (),
        tail_sections: Pairs = (),
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
        # raises RunContextError
        static = RunContext(head_sections=head_sections, tail_sections=tail_sections)
        self._providers: tuple[Provider, ...] = tuple(providers)
        # Decided once: looking `collect` up runs the provider's code (it may be a property).
        self._is_async = tuple(inspect.iscoroutinefunction(p.collect) for p in providers)
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
        return self._assemble(collect_all(self._providers, self._finishes(deadline), deadline))

    async def abuild(self) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """Like :meth:`build`, without blocking the running loop.

        Async providers run as tasks on this loop and are cancelled at the deadline (one
        that swallows the cancellation keeps running, but its result is discarded); sync
        providers run in worker threads as in :meth:`build`.
        """
        deadline = time.monotonic() + self._deadline
        finishes = self._finishes(deadline)
        return self._assemble(
            await acollect_all(self._providers, self._is_async, finishes, deadline)
        )

    def _finishes(self, deadline: float) -> list[Finish]:
        # What each worker does with its collect's outcome before handing it over.
        return [
            functools.partial(check, bound=bound, redact=self._redact, deadline=deadline)
            for bound in self._bounds
        ]

    def _assemble(self, results: Sequence[Result]) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """The context from the checked results: plain data, no provider code runs here."""
        diagnostics: list[Diagnostic] = []
        fields: tuple[list[tuple[str, str]], ...] = ([], list(self._head), [])
        # Cross-provider duplicates are a RunContext rule (facts one namespace, head and
        # tail sections another) restated here because the core would refuse the whole
        # context, and isolation wants only the second entry dropped, with a diagnostic.
        fact_names: set[str] = set()
        section_names = {name for name, _ in (*self._head, *self._tail)}
        seen = (fact_names, section_names, section_names)
        # The core's entry limit, restated for the same reason: each provider is within it
        # (the worker's RunContext said so), all of them together may not be, and the
        # entries past it are left out rather than the whole context refused. The number is
        # the core's own.
        room = [MAX_ENTRIES, MAX_ENTRIES - len(self._head), MAX_ENTRIES - len(self._tail)]
        for name, bound, result in zip(self._names, self._bounds, results, strict=True):
            if not isinstance(result, Checked):
                diagnostics.append(Diagnostic(name, "timeout", self._late(result)))
                continue
            for kind, note in result.notes:
                diagnostics.append(Diagnostic(name, kind, message_text(note, self._redact)))
            if result.failure is not None:
                kind, text = result.failure
                diagnostics.append(Diagnostic(name, kind, message_text(text, self._redact)))
                continue
            if result.size > bound:  # its characters were within the bound, its UTF-8 bytes not
                message = f"contribution left out: {result.size} bytes, over the {bound}-byte bound"
                diagnostics.append(Diagnostic(name, "too-large", message))
                continue
            duplicates = 0
            over = [0, 0, 0]
            for field, entry_name, text in result.entries:
                label = FIELDS[field][1]
                if entry_name in seen[field]:
                    duplicates += 1
                    if duplicates <= _MAX_DUPLICATES:
                        diagnostics.append(
                            Diagnostic(
                                name,
                                "duplicate",
                                f"{label} {entry_name!r} left out: an earlier provider or the "
                                "caller already uses that name",
                            )
                        )
                    continue
                if room[field] == 0:
                    over[field] += 1
                    continue
                room[field] -= 1
                seen[field].add(entry_name)
                fields[field].append(
                    (entry_name, self._value(name, label, entry_name, text, diagnostics))
                )
            if duplicates > _MAX_DUPLICATES:
                message = f"{duplicates - _MAX_DUPLICATES} more entries left out as duplicates"
                diagnostics.append(Diagnostic(name, "duplicate", message))
            for field, count in enumerate(over):
                if count:
                    message = (
                        f"{count} {FIELDS[field][1]}s left out: a RunContext holds at most "
                        f"{MAX_ENTRIES} per argument"
                    )
                    diagnostics.append(Diagnostic(name, "too-large", message))
        context = RunContext(
            head_sections=fields[1], facts=fields[0], tail_sections=[*fields[2], *self._tail]
        )
        return context, tuple(diagnostics)

    def _value(
        self, name: str, label: str, entry: str, text: Text, diagnostics: list[Diagnostic]
    ) -> str:
        """The entry's text as the context gets it, with a ``redacted`` diagnostic if it was."""
        if not self._redact:
            return text.raw
        text = resolve(text, redact=True)
        if text.found:
            counts = ", ".join(f"{count} {kind}" for kind, count in text.found)
            message = f"{label} {entry!r}: replaced {counts} with [redacted]"
            diagnostics.append(Diagnostic(name, "redacted", message))
        return text.redacted if text.redacted is not None else text.raw

    def _late(self, result: object) -> str:
        if isinstance(result, StillRunning):
            age = time.monotonic() - result.since
            return (
                f"still running since an earlier build ({age:.1f} s ago); not started again "
                "until that collect returns"
            )
        return (
            f"no result within the {self._deadline * 1000:.0f} ms deadline; a late result is "
            "discarded"
        )
