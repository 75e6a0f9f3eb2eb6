"""The :class:`~runcontext.providers.base.Provider` protocol, apart from the module that
exports it: defining a ``typing.Protocol`` imports ``typing``, and ``runcontext show`` starts
without it (issue 13). ``runcontext.providers.base`` and ``runcontext.providers`` load this
module when ``Provider`` is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from runcontext.providers.base import Contribution

__all__ = ["Provider"]


@runtime_checkable
class Provider(Protocol):
    """Anything with a ``name``, a ``revision`` and ``collect(deadline)``.

    ``revision`` names the provider's behaviour (code version and options that change its
    output): it enters the builder's revision and so every request fingerprint. Bump it
    whenever the provider's output for the same environment could change.

    Optionally, ``max_output_bytes`` (a positive int) says how many UTF-8 bytes of names and
    values the provider may return when that is more than the builder's ``max_bytes``; the
    builder then bounds this provider by it instead. ``InstructionsProvider`` declares one
    so a large instructions budget is not refused as too large.
    """

    @property
    def name(self) -> str:
        """A unique name within a builder; diagnostics are keyed by it."""
        ...

    @property
    def revision(self) -> str:
        """A non-empty version string; a provider without one is refused by the builder."""
        ...

    def collect(self, deadline: float) -> Contribution | Awaitable[Contribution | None] | None:
        """Collect what is true now; finish before ``deadline`` (``time.monotonic()``)."""
        ...


Provider.__module__ = "runcontext.providers.base"  # where it is documented and imported from
