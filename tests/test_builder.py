"""ContextBuilder: concurrency, deadlines, failure isolation, order, bounds and revisions.

No test sleeps to synchronise: providers that must finish in a given order wait on events,
and hung providers wait on an event the test sets when it is done with them. The only time
bounds asserted are generous ones (deadline + 0.5 s) that show the build did not wait for a
provider that never finishes.
"""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runcontext import RunContext, RunContextError
from runcontext.providers import Contribution, Diagnostic
from runcontext.providers.builder import _FLIGHTS, ContextBuilder, _DaemonPool

SLACK = 0.5  # how far past its deadline a build may return on a busy 2-core machine


class Static:
    """A provider that returns a fixed contribution (or anything else)."""

    def __init__(self, name: str, result: object = None, revision: str = "static/1") -> None:
        self.name = name
        self.revision = revision
        self.result = result
        self.deadlines: list[float] = []

    def collect(self, deadline: float) -> Any:
        self.deadlines.append(deadline)
        return self.result


def fact(name: str, value: str) -> Static:
    return Static(name, Contribution(facts=[(name, value)]))


class Hang:
    """A sync provider that blocks until the test releases it."""

    name = "hang"
    revision = "hang/1"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def collect(self, deadline: float) -> Contribution:
        self.release.wait(timeout=60)
        self.finished.set()
        return Contribution(facts=[("late", "should never appear")])


class Raises:
    name = "raises"
    revision = "raises/1"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def collect(self, deadline: float) -> Contribution:
        raise self.error


class AsyncFact:
    name = "async"
    revision = "async/1"

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate

    async def collect(self, deadline: float) -> Contribution:
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)
        return Contribution(facts=[("async", "yes")])


class AsyncHang:
    name = "async-hang"
    revision = "async-hang/1"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def collect(self, deadline: float) -> Contribution:
        self.started.set()
        try:
            await asyncio.Event().wait()  # never set
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")


@pytest.fixture
def hang() -> Iterator[Hang]:
    provider = Hang()
    yield provider
    provider.release.set()  # let the worker thread finish after the test


def facts_of(context: RunContext) -> dict[str, str]:
    return dict(context.facts)


def kinds(diagnostics: tuple[Diagnostic, ...]) -> list[tuple[str, str]]:
    return [(d.provider, d.kind) for d in diagnostics]


# -- order and composition --------------------------------------------------------------


def test_output_follows_provider_order_not_completion_order() -> None:
    first_may_finish = threading.Event()

    class First:
        name = "first"
        revision = "first/1"

        def collect(self, deadline: float) -> Contribution:
            assert first_may_finish.wait(timeout=10)
            return Contribution(facts=[("first", "1")], head=[("h-first", "one")])

    class Second:
        name = "second"
        revision = "second/1"

        def collect(self, deadline: float) -> Contribution:
            first_may_finish.set()  # so the first provider finishes after this one
            return Contribution(facts=[("second", "2")], head=[("h-second", "two")])

    context, diagnostics = ContextBuilder([First(), Second()], deadline=10).build()
    assert diagnostics == ()
    assert context.facts == (("first", "1"), ("second", "2"))
    assert context.head_sections == (("h-first", "one"), ("h-second", "two"))


def test_static_head_comes_first_and_static_tail_last() -> None:
    provider = Static(
        "p", Contribution(head=[("p-head", "provider head")], tail=[("p-tail", "pt")])
    )
    builder = ContextBuilder(
        [provider],
        head_sections=[("system", "You are helpful.")],
        tail_sections=[("closing", "Be brief.")],
    )
    context, diagnostics = builder.build()
    assert diagnostics == ()
    assert context.head_sections == (("system", "You are helpful."), ("p-head", "provider head"))
    assert context.tail_sections == (("p-tail", "pt"), ("closing", "Be brief."))
    assert context == RunContext(
        head_sections=[("system", "You are helpful."), ("p-head", "provider head")],
        tail_sections=[("p-tail", "pt"), ("closing", "Be brief.")],
    )


def test_no_providers_gives_the_static_context() -> None:
    context, diagnostics = ContextBuilder([], head_sections=[("s", "static")]).build()
    assert context == RunContext(head_sections=[("s", "static")]) and diagnostics == ()


def test_none_contributes_nothing_and_is_not_a_diagnostic() -> None:
    context, diagnostics = ContextBuilder([Static("nothing"), fact("a", "1")]).build()
    assert context.facts == (("a", "1"),) and diagnostics == ()


def test_duplicate_names_keep_the_first_and_say_so() -> None:
    one = Static("one", Contribution(facts=[("x", "1")], head=[("s", "first")]))
    two = Static("two", Contribution(facts=[("x", "2"), ("y", "2")], tail=[("s", "second")]))
    context, diagnostics = ContextBuilder(
        [one, two], tail_sections=[("static", "t")], deadline=30
    ).build()
    assert context.facts == (("x", "1"), ("y", "2"))
    assert context.head_sections == (("s", "first"),)
    assert kinds(diagnostics) == [("two", "duplicate"), ("two", "duplicate")]
    assert "fact 'x'" in diagnostics[0].message and "tail section 's'" in diagnostics[1].message


def test_provider_section_cannot_take_a_static_name() -> None:
    provider = Static("p", Contribution(tail=[("closing", "mine")]))
    context, diagnostics = ContextBuilder(
        [provider], tail_sections=[("closing", "caller's")]
    ).build()
    assert context.tail_sections == (("closing", "caller's"),)
    assert kinds(diagnostics) == [("p", "duplicate")]


def test_collect_gets_an_absolute_monotonic_deadline() -> None:
    provider = Static("p")
    before = time.monotonic()
    ContextBuilder([provider], deadline=2.0).build()
    after = time.monotonic()
    [deadline] = provider.deadlines
    assert before + 2.0 <= deadline <= after + 2.0


def test_providers_see_the_callers_context_variables() -> None:
    variable: contextvars.ContextVar[str] = contextvars.ContextVar("variable", default="unset")

    class Reader:
        name = "reader"
        revision = "reader/1"

        def collect(self, deadline: float) -> Contribution:
            return Contribution(facts=[("seen", variable.get())])

    variable.set("from the caller")
    context, _ = ContextBuilder([Reader()]).build()
    assert facts_of(context) == {"seen": "from the caller"}


# -- failure isolation ------------------------------------------------------------------


def test_hung_raising_and_huge_providers_leave_the_others(hang: Hang) -> None:
    huge = Static("huge", Contribution(head=[("huge", "x" * 10_000_000)]))
    providers: list[Any] = [fact("before", "1"), hang, Raises(RuntimeError("boom")), huge]
    providers.append(fact("after", "2"))
    builder = ContextBuilder(providers, deadline=0.3)
    started = time.monotonic()
    context, diagnostics = builder.build()
    elapsed = time.monotonic() - started
    assert elapsed < 0.3 + SLACK
    assert context.facts == (("before", "1"), ("after", "2"))
    assert context.head_sections == ()
    assert kinds(diagnostics) == [("hang", "timeout"), ("raises", "error"), ("huge", "too-large")]
    assert "300 ms deadline" in diagnostics[0].message
    assert diagnostics[1].message == "raised RuntimeError: boom"
    assert "65536-byte bound" in diagnostics[2].message
    hang.release.set()
    assert hang.finished.wait(timeout=10)
    assert "late" not in facts_of(context)  # the late result went nowhere


def test_repeated_builds_with_hung_providers_stay_bounded(hang: Hang) -> None:
    builder = ContextBuilder([hang, fact("ok", "1")], deadline=0.05)
    context, diagnostics = builder.build()  # starts the collect that will hang
    assert kinds(diagnostics) == [("hang", "timeout")]
    threads = threading.active_count()
    for _ in range(30):
        context, diagnostics = builder.build()
        assert facts_of(context) == {"ok": "1"}
        [diagnostic] = diagnostics
        assert diagnostic.kind == "timeout"
        assert diagnostic.message.startswith("still running since an earlier build")
    # One worker stays stuck in the hung collect; without the bound it would be 31. (A few
    # more may start when a build finds no idle worker in the instant one is freed.)
    assert threading.active_count() <= threads + 3
    # Nor does abuild(), or a new builder with the same provider object.
    _, diagnostics = asyncio.run(builder.abuild())
    assert "still running since an earlier build" in diagnostics[0].message
    _, diagnostics = ContextBuilder([hang], deadline=0.05).build()
    assert "still running since an earlier build" in diagnostics[0].message
    assert threading.active_count() <= threads + 3
    hang.release.set()
    assert hang.finished.wait(timeout=10)
    limit = time.monotonic() + 10  # the worker hands the outcome back just after `finished`
    while time.monotonic() < limit:
        context, diagnostics = builder.build()
        if not diagnostics:
            break
    assert facts_of(context) == {"late": "should never appear", "ok": "1"}  # started again


def test_overlapping_builds_share_one_collect() -> None:
    class Gate:
        name = "gate"
        revision = "gate/1"

        def __init__(self) -> None:
            self.started = threading.Event()
            self.release = threading.Event()
            self.calls = 0

        def collect(self, deadline: float) -> Contribution:
            self.calls += 1
            self.started.set()
            assert self.release.wait(timeout=10)
            return Contribution(facts=[("gate", "open")])

    gate = Gate()
    builder = ContextBuilder([gate], deadline=30)
    results: list[tuple[RunContext, tuple[Diagnostic, ...]]] = []
    threads = [threading.Thread(target=lambda: results.append(builder.build())) for _ in "ab"]
    try:
        threads[0].start()
        assert gate.started.wait(timeout=10)
        threads[1].start()
        limit = time.monotonic() + 10
        while len(_FLIGHTS._running[id(gate)].waiters) < 2 and time.monotonic() < limit:
            pass  # until the second build has joined the collect in flight
    finally:
        gate.release.set()
        for thread in threads:
            thread.join(timeout=10)
    assert gate.calls == 1
    assert [(facts_of(context), diagnostics) for context, diagnostics in results] == [
        ({"gate": "open"}, ()),
        ({"gate": "open"}, ()),
    ]


def test_the_worker_pool_has_a_ceiling() -> None:
    pool = _DaemonPool(max_workers=2)
    release = threading.Event()
    try:
        pool.submit(lambda: release.wait(10) and None)
        pool.submit(lambda: release.wait(10) and None)
        with pytest.raises(RuntimeError, match="all 2 provider worker threads are busy"):
            pool.submit(lambda: None)
    finally:
        release.set()


@pytest.mark.parametrize(
    "error", [ValueError("bad"), KeyboardInterrupt(), SystemExit(3), RecursionError("deep")]
)
def test_any_exception_is_a_diagnostic(error: BaseException) -> None:
    context, diagnostics = ContextBuilder([Raises(error), fact("ok", "1")]).build()
    assert facts_of(context) == {"ok": "1"}
    assert kinds(diagnostics) == [("raises", "error")]
    assert diagnostics[0].message.startswith(f"raised {type(error).__name__}")


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"facts": [("a", "b")]}, "returned dict; expected a Contribution or None"),
        ("text", "returned str; expected a Contribution or None"),
        (Contribution(facts=[("", "empty name")]), "contribution refused"),
        (Contribution(facts=[("a\nb", "control")]), "contribution refused"),
        (Contribution(facts=[("a", 3)]), "contribution refused"),  # type: ignore[list-item]
        (Contribution(facts={"a": "b"}), "contribution refused"),  # type: ignore[arg-type]
        (Contribution(head=[("a", "x"), ("a", "y")]), "contribution refused"),
        (Contribution(facts=42), "contribution refused"),  # type: ignore[arg-type]
    ],
)
def test_garbage_contributes_nothing(result: object, message: str) -> None:
    context, diagnostics = ContextBuilder([Static("bad", result), fact("ok", "1")]).build()
    assert facts_of(context) == {"ok": "1"} and context.head_sections == ()
    [diagnostic] = diagnostics
    assert diagnostic.provider == "bad" and diagnostic.kind == "invalid"
    assert message in diagnostic.message


def test_byte_bound_counts_utf8_bytes() -> None:
    # 600 three-byte characters: 600 characters pass the quick check, 1800 bytes do not.
    provider = Static("wide", Contribution(facts=[("w", "€" * 600)]))
    _, diagnostics = ContextBuilder([provider], max_bytes=1000).build()
    assert kinds(diagnostics) == [("wide", "too-large")]
    assert "1801 bytes" in diagnostics[0].message
    context, diagnostics = ContextBuilder([provider], max_bytes=2000).build()
    assert facts_of(context) == {"w": "€" * 600} and diagnostics == ()


def test_too_large_message_before_encoding() -> None:
    provider = Static("big", Contribution(facts=[("big", "x" * 70_000)]))
    _, diagnostics = ContextBuilder([provider]).build()
    assert diagnostics == (
        Diagnostic("big", "too-large", "contribution left out: more than the 65536-byte bound"),
    )


def test_every_entry_counts_towards_the_bound() -> None:
    # Entries left out for an empty value still count their names: an endless supply of
    # them is refused, not iterated for ever.
    empties = [(f"name-{index}", "") for index in range(200)]
    _, diagnostics = ContextBuilder(
        [Static("e", Contribution(facts=empties))], max_bytes=1000
    ).build()
    assert kinds(diagnostics) == [("e", "too-large")]


def test_a_provider_may_declare_a_larger_bound() -> None:
    class Large(Static):
        max_output_bytes = 200_000

    provider = Large("large", Contribution(head=[("large", "x" * 150_000)]))
    context, diagnostics = ContextBuilder([provider]).build()
    assert diagnostics == () and len(context.head_sections[0][1]) == 150_000
    small = ContextBuilder([Large("l"), fact("a", "1")])
    assert small.revision != ContextBuilder([Static("l"), fact("a", "1")]).revision
    Large.max_output_bytes = 0
    with pytest.raises(ValueError, match=r"\('l'\): max_output_bytes must be a positive int"):
        ContextBuilder([Large("l")])


class Weird(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class Unmeasurable(str):
    """A str whose own __len__ and __str__ raise: the builder must not rely on them."""

    def __len__(self) -> int:
        raise RuntimeError("no length")

    def __str__(self) -> str:
        raise RuntimeError("no text")


def broken_notes() -> Iterator[tuple[str, str]]:
    yield ("note", "first")
    raise RuntimeError("the generator broke")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (Contribution(facts=[("kept", "1")], diagnostics=broken_notes()), ("bad", "invalid")),
        (Contribution(facts=[("kept", "1")], diagnostics=42), ("bad", "invalid")),  # type: ignore[arg-type]
    ],
)
def test_unreadable_diagnostics_are_invalid_and_the_facts_stay(
    result: Contribution, expected: tuple[str, str]
) -> None:
    context, diagnostics = ContextBuilder([Static("bad", result)]).build()
    assert facts_of(context) == {"kept": "1"}
    assert kinds(diagnostics) == [expected]
    assert diagnostics[0].message == "diagnostics was not a sequence of (kind, message) pairs"


def test_hostile_strings_and_exceptions_never_escape_build() -> None:
    odd = Static(
        "odd",
        Contribution(
            facts=[(Unmeasurable("name"), Unmeasurable("value"))],
            diagnostics=[(Unmeasurable("kind"), Unmeasurable("message"))],
        ),
    )
    context, diagnostics = ContextBuilder([odd, Raises(Weird()), fact("ok", "1")]).build()
    assert facts_of(context) == {"name": "value", "ok": "1"}
    assert type(context.facts[0][1]) is str
    assert [tuple(d) for d in diagnostics] == [
        ("odd", "kind", "message"),
        ("raises", "error", "raised Weird (its message could not be read)"),
    ]


def test_long_messages_are_cut_after_redacting_across_the_cut() -> None:
    secret = "hunter2" + "x" * 40
    message = (
        "a" * 262 + " password=" + secret
    )  # the secret crosses character 300 + " " + "b " * 100_000
    _, diagnostics = ContextBuilder([Raises(ValueError(message))]).build()
    [diagnostic] = diagnostics
    assert len(diagnostic.message) == 300 and diagnostic.message.endswith("…")
    assert "hunt" not in diagnostic.message
    assert "password=[redac" in diagnostic.message


GUARDED_BUILDS = """
import itertools
from collections.abc import Sequence
from runcontext.providers.builder import _FLIGHTS, ContextBuilder, _DaemonPool
from runcontext.providers import Contribution

class P:
    revision = "p/1"
    def __init__(self, name, result):
        self.name, self.result = name, result
    def collect(self, deadline):
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result

class Endless(Sequence):
    def __len__(self):
        return 1
    def __getitem__(self, index):
        return ("", "")  # never an IndexError: iterating it never ends

class EndlessPair(tuple):
    def __iter__(self):
        return itertools.repeat("x")

cases = [
    Contribution(diagnostics=itertools.repeat(("kind", "message"))),
    Contribution(diagnostics=[("kind", "x " * 5_000_000)]),
    Contribution(facts=Endless()),
    Contribution(facts=[EndlessPair(("a", "b"))]),
    Contribution(facts=[("x", "password" * 8000)]),
    ValueError("secret" * 200_000),
]
for index, case in enumerate(cases):
    context, diagnostics = ContextBuilder([P(f"p{index}", case)]).build()
    print(index, len(diagnostics), *sorted({d.kind for d in diagnostics}))
"""


def test_pathological_contributions_do_not_stall_the_build() -> None:
    # Each of these hung build() or took seconds; the guard trips only on such a blow-up.
    result = subprocess.run(
        [sys.executable, "-c", GUARDED_BUILDS],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    assert result.stdout.splitlines() == [
        "0 20 kind",  # relayed, at most 20
        "1 1 kind",
        "2 1 too-large",
        "3 1 invalid",
        "4 0",
        "5 1 error",
    ]


def test_provider_diagnostics_are_relayed_bounded_and_checked() -> None:
    notes = [("note", f"n{index}") for index in range(30)]
    many = Static("many", Contribution(diagnostics=notes))
    odd = Static("odd", Contribution(diagnostics=["not a pair"]))  # type: ignore[list-item]
    _, diagnostics = ContextBuilder([many, odd]).build()
    assert [d.message for d in diagnostics if d.provider == "many"] == [
        f"n{index}" for index in range(20)
    ]
    assert kinds(diagnostics)[-1] == ("odd", "invalid")


# -- redaction --------------------------------------------------------------------------

TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCabcd"


def test_provider_output_is_redacted_with_a_diagnostic() -> None:
    provider = Static(
        "leaky",
        Contribution(facts=[("remote", f"uses {TOKEN}")], head=[("notes", "password=hunter2")]),
    )
    context, diagnostics = ContextBuilder([provider]).build()
    assert facts_of(context) == {"remote": "uses [redacted]"}
    assert context.head_sections == (("notes", "password=[redacted]"),)
    assert [d.message for d in diagnostics] == [
        "fact 'remote': replaced 1 github-token with [redacted]",
        "head section 'notes': replaced 1 password-assignment with [redacted]",
    ]
    assert all(d.kind == "redacted" for d in diagnostics)
    assert TOKEN not in repr(context.head_text) + repr(context.tail_text) + repr(diagnostics)


def test_exception_messages_and_notes_are_redacted() -> None:
    class Leaks:
        name = "leaks"
        revision = "leaks/1"

        def collect(self, deadline: float) -> Contribution:
            raise ValueError(f"could not use {TOKEN}")

    noted = Static("noted", Contribution(diagnostics=[("note", f"saw {TOKEN}")]))
    _, diagnostics = ContextBuilder([Leaks(), noted]).build()
    assert TOKEN not in repr(diagnostics)
    assert diagnostics[0].message == "raised ValueError: could not use [redacted]"


def test_redaction_can_be_turned_off_and_static_sections_are_never_redacted() -> None:
    provider = Static("leaky", Contribution(facts=[("remote", TOKEN)]))
    context, diagnostics = ContextBuilder([provider], redact=False).build()
    assert facts_of(context) == {"remote": TOKEN} and diagnostics == ()
    context, diagnostics = ContextBuilder(
        [], head_sections=[("mine", "password=on purpose")]
    ).build()
    assert context.head_sections == (("mine", "password=on purpose"),)


# -- async providers --------------------------------------------------------------------


def test_async_provider_under_build() -> None:
    context, diagnostics = ContextBuilder([AsyncFact(), fact("sync", "1")]).build()
    assert context.facts == (("async", "yes"), ("sync", "1")) and diagnostics == ()


def test_async_hang_under_build_is_a_timeout() -> None:
    provider = AsyncHang()
    started = time.monotonic()
    context, diagnostics = ContextBuilder([provider, fact("ok", "1")], deadline=0.2).build()
    assert time.monotonic() - started < 0.2 + SLACK
    assert facts_of(context) == {"ok": "1"}
    assert kinds(diagnostics) == [("async-hang", "timeout")]
    assert provider.cancelled.wait(timeout=10)  # its private loop cancelled it


def test_an_async_providers_own_timeout_error_is_an_error_under_both() -> None:
    class OwnTimeout:
        name = "own-timeout"
        revision = "own-timeout/1"

        async def collect(self, deadline: float) -> Contribution:
            await asyncio.sleep(0)
            raise TimeoutError("the provider's own")

    builder = ContextBuilder([OwnTimeout()], deadline=10)
    expected = (Diagnostic("own-timeout", "error", "raised TimeoutError: the provider's own"),)
    assert builder.build()[1] == expected
    assert asyncio.run(builder.abuild())[1] == expected


def test_abuild_mixes_sync_and_async_in_provider_order() -> None:
    async def main() -> tuple[RunContext, tuple[Diagnostic, ...]]:
        gate = asyncio.Event()

        class Opener:
            name = "opener"
            revision = "opener/1"

            async def collect(self, deadline: float) -> Contribution:
                gate.set()  # lets the first provider finish only after this one
                return Contribution(facts=[("opener", "2")])

        builder = ContextBuilder([AsyncFact(gate), Opener(), fact("sync", "3")], deadline=10)
        return await builder.abuild()

    context, diagnostics = asyncio.run(main())
    assert context.facts == (("async", "yes"), ("opener", "2"), ("sync", "3"))
    assert diagnostics == ()


def test_abuild_cancels_async_and_abandons_sync_at_the_deadline(hang: Hang) -> None:
    async_hang = AsyncHang()

    async def main() -> tuple[float, RunContext, tuple[Diagnostic, ...]]:
        builder = ContextBuilder(
            [async_hang, hang, Raises(OSError("gone")), fact("ok", "1")], deadline=0.2
        )
        started = time.monotonic()
        context, diagnostics = await builder.abuild()
        elapsed = time.monotonic() - started
        await asyncio.wait_for(asyncio.to_thread(async_hang.cancelled.wait, 10), 10)
        return elapsed, context, diagnostics

    elapsed, context, diagnostics = asyncio.run(main())
    assert elapsed < 0.2 + SLACK
    assert facts_of(context) == {"ok": "1"}
    assert kinds(diagnostics) == [
        ("async-hang", "timeout"),
        ("hang", "timeout"),
        ("raises", "error"),
    ]
    assert async_hang.cancelled.is_set()


def test_abuild_late_sync_result_after_the_loop_closed_is_dropped(hang: Hang) -> None:
    async def main() -> RunContext:
        context, _ = await ContextBuilder([hang], deadline=0.1).abuild()
        return context

    context = asyncio.run(main())  # the loop is closed when this returns
    hang.release.set()
    assert hang.finished.wait(timeout=10)  # delivering to a closed loop did not raise
    assert context.facts == ()


# -- construction -----------------------------------------------------------------------


class NoRevision:
    name = "norev"

    def collect(self, deadline: float) -> None:
        return None


@pytest.mark.parametrize("revision", [None, "", "   ", 3])
def test_provider_without_revision_is_refused(revision: object) -> None:
    provider = Static("p", revision=revision)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"providers\[1\] \('p'\) has no revision"):
        ContextBuilder([fact("ok", "1"), provider])


def test_provider_missing_the_revision_attribute_is_refused() -> None:
    with pytest.raises(ValueError, match="has no revision: set `revision`"):
        ContextBuilder([NoRevision()])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("providers", "options", "error", "message"),
    [
        ([object()], {}, TypeError, r"providers\[0\]: .* has no name"),
        ([fact("a", "1"), fact("a", "2")], {}, ValueError, "already used by providers"),
        (fact("a", "1"), {}, TypeError, "expected a sequence of providers"),
        ([], {"deadline": 0}, ValueError, "deadline: expected a positive number"),
        ([], {"deadline": float("inf")}, ValueError, "deadline"),
        ([], {"max_bytes": 0}, ValueError, "max_bytes"),
    ],
)
def test_construction_refusals(
    providers: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ContextBuilder(providers, **options)


def test_provider_without_collect_is_refused() -> None:
    class NoCollect:
        name = "nc"
        revision = "nc/1"

    with pytest.raises(TypeError, match=r"\('nc'\) has no collect"):
        ContextBuilder([NoCollect()])  # type: ignore[list-item]


def test_static_sections_follow_the_runcontext_rules() -> None:
    with pytest.raises(RunContextError) as caught:
        ContextBuilder([], head_sections=[("ok", "x")], tail_sections=[("ok", "y")])
    assert caught.value.kind == "duplicate-name"


# -- revision ---------------------------------------------------------------------------


def test_revision_is_a_digest_of_the_providers_names_and_revisions() -> None:
    base = ContextBuilder([fact("a", "1"), fact("b", "2")]).revision
    assert base.startswith("blake3:")
    assert ContextBuilder([fact("a", "changed"), fact("b", "other")]).revision == base
    assert ContextBuilder([fact("b", "2"), fact("a", "1")]).revision != base  # order
    bumped = Static("b", Contribution(), revision="static/2")
    assert ContextBuilder([fact("a", "1"), bumped]).revision != base
    assert ContextBuilder([fact("a", "1"), fact("b", "2")], redact=False).revision != base
    assert ContextBuilder([fact("a", "1"), fact("b", "2")], max_bytes=10).revision != base
    # The deadline and static sections do not change how providers' output is made.
    assert ContextBuilder([fact("a", "1"), fact("b", "2")], deadline=5).revision == base


def test_cancelling_abuild_cancels_its_async_providers() -> None:
    provider = AsyncHang()

    async def main() -> None:
        task = asyncio.create_task(ContextBuilder([provider], deadline=60).abuild())
        while not provider.started.is_set():  # yield until the provider task runs
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(asyncio.to_thread(provider.cancelled.wait, 10), 10)

    asyncio.run(main())
    assert provider.cancelled.is_set()
