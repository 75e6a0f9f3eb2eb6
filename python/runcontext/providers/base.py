"""The provider contract: what a provider is and what it may return.

A provider has a ``name``, a ``revision`` and a ``collect(deadline)`` method, plain or
``async``, that returns a :class:`Contribution` (or ``None`` for nothing). ``deadline`` is
an absolute :func:`time.monotonic` value: a provider that starts a subprocess or a read that
can block uses the time left as its own timeout. The contract has no error path: whatever a
provider raises, returns or fails to return in time, the builder turns into a
:class:`Diagnostic` and the run goes on without that provider's output.
"""

from __future__ import annotations

from collections.abc import Sequence
from reprlib import recursive_repr

from runcontext.providers._records import DataclassAttribute, frozen

TYPE_CHECKING = False  # not typing's: `runcontext show` starts without importing typing
if TYPE_CHECKING:
    from dataclasses import Field
    from typing import Any, ClassVar, NamedTuple

    from runcontext.providers._provider import Provider
else:
    from runcontext._named import NamedTuple

__all__ = ["Contribution", "Diagnostic", "Pairs", "Provider"]

Pairs = Sequence[tuple[str, str | None]]


class Contribution:
    """What one provider adds to a run.

    ``facts`` render as ``- name: value`` lines in the tail; ``head`` sections in the head
    message (stable prose, cache-friendly); ``tail`` sections after the facts. Names follow
    the RunContext rules (non-empty, no control characters, no outer white space) and must
    not collide with another provider's. ``diagnostics`` are ``(kind, message)`` notes the
    provider wants the caller to see, e.g. ``("truncated", "...")``; they never fail the run.
    """

    # Written out as @dataclass(frozen=True, slots=True) would generate it (same methods,
    # pickles and dataclasses.fields): see runcontext.providers._records for why.
    __slots__ = ("facts", "head", "tail", "diagnostics")  # noqa: RUF023 (the fields in order)
    __match_args__ = ("facts", "head", "tail", "diagnostics")
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]] = DataclassAttribute(
        "__dataclass_fields__"
    )  # type: ignore[assignment]
    __dataclass_params__: ClassVar[Any] = DataclassAttribute("__dataclass_params__")

    facts: Pairs
    head: Pairs
    tail: Pairs
    diagnostics: Sequence[tuple[str, str]]

    def __init__(
        self,
        facts: Pairs = (),
        head: Pairs = (),
        tail: Pairs = (),
        diagnostics: Sequence[tuple[str, str]] = (),
    ) -> None:
        object.__setattr__(self, "facts", facts)
        object.__setattr__(self, "head", head)
        object.__setattr__(self, "tail", tail)
        object.__setattr__(self, "diagnostics", diagnostics)

    @recursive_repr()
    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(facts={self.facts!r}, head={self.head!r}, "
            f"tail={self.tail!r}, diagnostics={self.diagnostics!r})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            assert isinstance(other, Contribution)
            return (self.facts, self.head, self.tail, self.diagnostics) == (
                other.facts,
                other.head,
                other.tail,
                other.diagnostics,
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.facts, self.head, self.tail, self.diagnostics))

    def __setattr__(self, name: str, value: object) -> None:
        frozen(self, name)

    def __delattr__(self, name: str) -> None:
        frozen(self, name, "delete")

    def __getstate__(self) -> list[object]:
        return [self.facts, self.head, self.tail, self.diagnostics]

    def __setstate__(self, state: list[object]) -> None:
        for name, value in zip(self.__slots__, state, strict=False):
            object.__setattr__(self, name, value)


class Diagnostic(NamedTuple):
    """Why something a provider produced is missing or changed in this run.

    ``kind`` is one of ``timeout``, ``error``, ``invalid``, ``too-large``, ``duplicate``,
    ``redacted``, or a kind the provider reported itself (``truncated``, ``unreadable``, …).
    Messages never contain the redacted text.
    """

    provider: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.provider}: {self.kind}: {self.message}"


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        # Provider is a typing.Protocol, so it is defined where typing may be imported, on
        # first use: no built-in provider or the builder needs it at run time.
        if name == "Provider":
            from runcontext.providers._provider import Provider

            globals()["Provider"] = Provider  # later lookups skip __getattr__
            return Provider
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
