"""ContextBuilder: run providers concurrently under one deadline and make a RunContext.

The builder is the composition root's side of a RunContext. Its one promise is that a run is
never delayed past its deadline or failed by a provider: a provider that raises, hangs,
returns garbage or too much contributes nothing to that run, and a :class:`Diagnostic` says
why. There is no retry: the next run simply asks again.

How providers are run (worker threads, at most one collect in flight per provider, async
providers on the caller's loop) is :mod:`runcontext.providers._workers`; how what they returned is
checked, bounded and redacted is :mod:`runcontext.providers._contributions`. This module checks the
providers at construction and assembles the checked contributions in the providers' order,
never completion order, so the same environment gives the same digest however the threads
were scheduled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from runcontext._core import RunContext, digest
from runcontext.providers._contributions import check, redact_value
from runcontext.providers._workers import FLIGHTS as _FLIGHTS  # noqa: F401  (tests reach it here)
from runcontext.providers._workers import DaemonPool as _DaemonPool  # noqa: F401  (tests reach it here)
from runcontext.providers._workers import Result, acollect_all, collect_all
from runcontext.providers.base import Diagnostic, Pairs, Provider
from runcontext.providers.redact import REVISION as REDACTION_REVISION

__all__ = ["BUILDER_REVISION", "ContextBuilder"]

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
        return self._assemble(collect_all(self._providers, time.monotonic() + self._deadline))

    async def abuild(self) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        """Like :meth:`build`, without blocking the running loop.

        Async providers run as tasks on this loop and are cancelled at the deadline (one
        that swallows the cancellation keeps running, but its result is discarded); sync
        providers run in worker threads as in :meth:`build`.
        """
        deadline = time.monotonic() + self._deadline
        return self._assemble(await acollect_all(self._providers, deadline))

    def _assemble(self, results: Sequence[Result]) -> tuple[RunContext, tuple[Diagnostic, ...]]:
        diagnostics: list[Diagnostic] = []
        facts: list[tuple[str, str]] = []
        head: list[tuple[str, str]] = list(self._head)
        tail: list[tuple[str, str]] = []
        fact_names: set[str] = set()
        section_names = {name for name, _ in (*self._head, *self._tail)}
        for name, bound, result in zip(self._names, self._bounds, results, strict=True):
            contribution = check(
                name,
                bound,
                result,
                deadline=self._deadline,
                redact=self._redact,
                diagnostics=diagnostics,
            )
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
                        value = redact_value(name, kind, entry_name, value, diagnostics)
                    target.append((entry_name, value))
        context = RunContext(head_sections=head, facts=facts, tail_sections=[*tail, *self._tail])
        return context, tuple(diagnostics)
