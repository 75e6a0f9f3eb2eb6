"""Nothing a provider hands back runs on the caller's thread after the deadline.

A provider can return something whose reading is slow (a lazy sequence, a generator of
diagnostics, an exception whose ``__str__`` blocks) or raises ``KeyboardInterrupt`` or
``SystemExit`` when read. Each of these used to be read by ``build()`` on the caller's
thread after the deadline: seconds of stall, or an exception out of a call documented never
to raise. The slow parts here wait on an event the test sets when it is done, so no worker
thread outlives the test by more than a moment; the bounds asserted are generous (10 times
the 0.2 s deadline) next to the 5 s or more the old code took.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from runcontext._core import MAX_ENTRIES
from runcontext.providers import Contribution, Diagnostic
from runcontext.providers.builder import _FLIGHTS, ContextBuilder

DEADLINE = 0.2
BOUND = 10 * DEADLINE  # generous: the old code took 5 s or more on every case here
STEP = 1.0  # how long each slow read waits, unless the test has already finished


class Slow:
    """What makes a read slow: each call waits ``STEP`` unless released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def wait(self) -> None:
        self.release.wait(STEP)


@pytest.fixture
def slow() -> Iterator[Slow]:
    gate = Slow()
    yield gate
    gate.release.set()


class LazySequence(Sequence[tuple[str, str]]):
    def __init__(self, gate: Slow, length: int = 8) -> None:
        self.gate = gate
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        if index >= self.length:
            raise IndexError(index)
        self.gate.wait()
        return (f"lazy-{index}", "value")


class Provider:
    revision = "test/1"

    def __init__(self, name: str, make: Callable[[], object], *, sync: bool = True) -> None:
        self.name = name
        self.make = make
        if not sync:
            self.collect = self._acollect  # type: ignore[method-assign]

    def collect(self, deadline: float) -> Any:
        return self._result()

    async def _acollect(self, deadline: float) -> Any:
        return self._result()

    def _result(self) -> object:
        result = self.make()
        if isinstance(result, BaseException):
            raise result
        return result


def slow_notes(gate: Slow) -> Iterator[tuple[str, str]]:
    for index in range(8):
        gate.wait()
        yield ("note", str(index))


class SlowMessage(Exception):
    def __init__(self, gate: Slow) -> None:
        self.gate = gate

    def __str__(self) -> str:
        for _ in range(8):
            self.gate.wait()
        return "finally"


def slow_results(gate: Slow) -> dict[str, Callable[[], object]]:
    return {
        "lazy facts": lambda: Contribution(facts=LazySequence(gate)),
        "lazy head": lambda: Contribution(head=LazySequence(gate)),
        "slow diagnostics": lambda: Contribution(diagnostics=slow_notes(gate)),
        "slow exception message": lambda: SlowMessage(gate),
    }


def run(builder: ContextBuilder, how: str) -> tuple[float, Any, Any]:
    started = time.monotonic()
    context, diagnostics = builder.build() if how == "build" else asyncio.run(builder.abuild())
    return time.monotonic() - started, context, diagnostics


@pytest.mark.parametrize("how", ["build", "abuild"])
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize(
    "case", ["lazy facts", "lazy head", "slow diagnostics", "slow exception message"]
)
def test_slow_results_are_read_under_the_deadline(
    slow: Slow, case: str, sync: bool, how: str
) -> None:
    provider = Provider("slow", slow_results(slow)[case], sync=sync)
    fast = Provider("fast", lambda: Contribution(facts=[("fast", "1")]))
    builder = ContextBuilder([provider, fast], deadline=DEADLINE)
    elapsed, context, diagnostics = run(builder, how)
    assert elapsed < BOUND
    assert dict(context.facts) == {"fast": "1"}
    assert [(d.provider, d.kind) for d in diagnostics] == [("slow", "timeout")]


class Interrupts(Sequence[tuple[str, str]]):
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index: Any) -> Any:
        raise self.error


class RaisesWhenShown(Exception):
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __str__(self) -> str:
        raise self.error


def interrupting_notes(error: BaseException) -> Iterator[tuple[str, str]]:
    yield ("note", "first")
    raise error


BASE_ERRORS = [KeyboardInterrupt(), SystemExit(2), GeneratorExit()]


@pytest.mark.parametrize("how", ["build", "abuild"])
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("error", BASE_ERRORS, ids=lambda error: type(error).__name__)
@pytest.mark.parametrize(
    ("make", "kind", "message"),
    [
        (
            lambda error: Contribution(facts=Interrupts(error)),
            "invalid",
            "contribution refused: raised {name}{suffix}",
        ),
        (
            lambda error: Contribution(diagnostics=interrupting_notes(error)),
            "invalid",
            "diagnostics was not a sequence of (kind, message) pairs",
        ),
        (
            lambda error: RaisesWhenShown(error),
            "error",
            "raised RaisesWhenShown (its message could not be read)",
        ),
        (lambda error: error, "error", "raised {name}{suffix}"),
    ],
    ids=["lazy facts", "diagnostics", "exception message", "raised"],
)
def test_base_exceptions_from_what_a_provider_returns_never_escape(
    make: Callable[[BaseException], object],
    kind: str,
    message: str,
    error: BaseException,
    sync: bool,
    how: str,
) -> None:
    provider = Provider("bad", lambda: make(error), sync=sync)
    fast = Provider("fast", lambda: Contribution(facts=[("fast", "1")]))
    _, context, diagnostics = run(ContextBuilder([provider, fast], deadline=10), how)
    assert dict(context.facts) == {"fast": "1"}
    suffix = f": {error}" if str(error) else ""  # SystemExit(2) says "2"
    expected = message.format(name=type(error).__name__, suffix=suffix)
    assert diagnostics == (Diagnostic("bad", kind, expected),)


INTERRUPTED = textwrap.dedent(
    """
    import os, signal, threading, time
    from runcontext.providers import Contribution
    from runcontext.providers.builder import ContextBuilder

    class CtrlC:
        name, revision = "ctrl-c", "ctrl-c/1"
        def collect(self, deadline):
            # What a person pressing Ctrl-C does: SIGINT to the process, which Python turns
            # into KeyboardInterrupt in the main thread, here waiting inside build().
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)

    started = time.monotonic()
    try:
        ContextBuilder([CtrlC()], deadline=20).build()
    except KeyboardInterrupt:
        print("interrupted after", time.monotonic() - started)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_a_real_ctrl_c_still_interrupts_build() -> None:
    # The documented choice: a KeyboardInterrupt raised *by a provider* is its error, but
    # Ctrl-C is the person's, delivered to the caller's thread, and build() does not eat it.
    result = subprocess.run(
        [sys.executable, "-c", INTERRUPTED], capture_output=True, text=True, timeout=60
    )
    words = result.stdout.split()
    assert words[:2] == ["interrupted", "after"], result.stderr
    # Far sooner than the provider's 30 s sleep or the 20 s deadline, however loaded the machine.
    assert float(words[2]) < 10, result.stdout


def test_a_build_that_joins_a_collect_gets_its_own_redaction_and_bound() -> None:
    # Two builders share a provider object; the one that joins the collect in flight asked
    # for redaction and a smaller bound, the one that started it for neither.
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCabcd"
    started, release = threading.Event(), threading.Event()

    class Gate:
        name = "gate"
        revision = "gate/1"

        def collect(self, deadline: float) -> Contribution:
            started.set()
            assert release.wait(timeout=10)
            return Contribution(facts=[("remote", f"uses {token}")])

    gate = Gate()
    plain = ContextBuilder([gate], deadline=30, redact=False)
    careful = ContextBuilder([gate], deadline=30)
    small = ContextBuilder([gate], deadline=30, max_bytes=20)
    results: dict[str, Any] = {}
    threads = [
        threading.Thread(target=lambda b=b, k=k: results.__setitem__(k, b.build()))
        for k, b in (("plain", plain), ("careful", careful), ("small", small))
    ]
    try:
        threads[0].start()
        assert started.wait(timeout=10)
        threads[1].start()
        threads[2].start()
        limit = time.monotonic() + 10
        while len(_FLIGHTS._running[id(gate)].waiters) < 3 and time.monotonic() < limit:
            pass  # until both other builds have joined the collect in flight
    finally:
        release.set()
        for thread in threads:
            thread.join(timeout=10)
    assert dict(results["plain"][0].facts) == {"remote": f"uses {token}"}
    assert results["plain"][1] == ()
    assert dict(results["careful"][0].facts) == {"remote": "uses [redacted]"}
    assert [d.kind for d in results["careful"][1]] == ["redacted"]
    assert results["small"][0].facts == ()
    assert [d.kind for d in results["small"][1]] == ["too-large"]


class Many:
    revision = "many/1"

    def __init__(self, name: str, count: int, field: str = "facts") -> None:
        self.name = name
        entries = [(f"{name}-{index}", "v") for index in range(count)]
        self.contribution = Contribution(**{field: entries})  # type: ignore[arg-type]

    def collect(self, deadline: float) -> Contribution:
        return self.contribution


def test_entries_past_the_cores_limit_are_left_out_not_raised() -> None:
    # Each provider is within its bound and the core's 10,000 entries per argument; together
    # they are not, and build() is documented never to raise.
    builder = ContextBuilder([Many("a", 6000), Many("b", 6000)], max_bytes=1 << 20, deadline=30)
    context, diagnostics = builder.build()
    assert len(context.facts) == MAX_ENTRIES
    assert diagnostics == (
        Diagnostic(
            "b",
            "too-large",
            "2000 facts left out: a RunContext holds at most 10000 per argument",
        ),
    )
    tail = [(f"static-{index}", "text") for index in range(10)]
    builder = ContextBuilder(
        [Many("t", MAX_ENTRIES, "tail")], tail_sections=tail, max_bytes=1 << 20, deadline=30
    )
    context, diagnostics = builder.build()
    assert len(context.tail_sections) == MAX_ENTRIES and context.tail_sections[-1][0] == "static-9"
    assert [d.message.split(":")[0] for d in diagnostics] == ["10 tail sections left out"]


def test_duplicates_are_reported_one_by_one_then_counted() -> None:
    class Same(Many):
        def __init__(self, name: str) -> None:
            self.name = name
            self.contribution = Contribution(facts=[(f"n-{index}", "v") for index in range(30)])

    context, diagnostics = ContextBuilder([Same("a"), Same("b")]).build()
    assert len(context.facts) == 30
    assert [d.kind for d in diagnostics] == ["duplicate"] * 21
    assert diagnostics[0].message == (
        "fact 'n-0' left out: an earlier provider or the caller already uses that name"
    )
    assert diagnostics[-1].message == "10 more entries left out as duplicates"
