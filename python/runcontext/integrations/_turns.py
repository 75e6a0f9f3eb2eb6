"""What every integration shares: one context per agent turn, and the missing-extra error.

A framework's per-call hook runs once per *model call*, and an agent turn makes several (each
tool result is sent back in another call). The facts must not change between a tool call and
its continuation, so a context is built once when a turn starts and reused until the next
turn. No hook is told when a turn starts; each integration derives a *turn key* from what its
framework does expose (the last user message, the run id) and :class:`TurnContexts` builds a
context the first time it sees a key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NoReturn

from runcontext._core import RunContext, digest
from runcontext.providers.base import Diagnostic
from runcontext.providers.builder import ContextBuilder
from runcontext.transcript.session import Session

__all__ = ["ContextSource", "TurnContexts", "check_session", "missing_extra", "user_turn_key"]

ContextSource = RunContext | ContextBuilder
"""A fixed :class:`RunContext` (the same every turn) or a :class:`ContextBuilder` (built per
turn)."""

# Turns whose context is kept, most recent first. An agent shared by several conversations
# interleaves their turns; 64 is far more than are in flight at once, and small enough that a
# long-lived agent does not accumulate contexts.
_KEPT_TURNS = 64


def missing_extra(framework: str, extra: str, error: ImportError) -> NoReturn:
    raise ImportError(
        f"runcontext.integrations.{extra.replace('-', '_')} needs {framework}: "
        f"pip install 'runcontext[{extra}]'"
    ) from error


def check_session(session: object) -> Session | None:
    if session is not None and not isinstance(session, Session):
        raise TypeError(
            f"session: expected a runcontext.Session or None, got {type(session).__name__}"
        )
    return session


class TurnContexts:
    """The context of each turn, built on the first model call that names the turn's key."""

    def __init__(self, source: object, argument: str = "context_or_builder") -> None:
        if not isinstance(source, RunContext | ContextBuilder):
            raise TypeError(
                f"{argument}: expected a runcontext.RunContext or a runcontext.ContextBuilder, "
                f"got {type(source).__name__}"
            )
        self._source: ContextSource = source
        self._turns: OrderedDict[Hashable, RunContext] = OrderedDict()
        self._lock = threading.Lock()
        self.diagnostics: tuple[Diagnostic, ...] = ()
        """The diagnostics of the last context the builder built (empty for a fixed one)."""

    @property
    def fixed(self) -> RunContext | None:
        """The context, when it is the same every turn (a ``RunContext`` was given)."""
        return self._source if isinstance(self._source, RunContext) else None

    def get(self, key: Hashable) -> RunContext:
        """The context of turn ``key``, built now (``builder.build()``) if the turn is new."""
        if isinstance(self._source, RunContext):
            return self._source
        with self._lock:
            found = self._lookup(key)
        if found is not None:
            return found
        context, self.diagnostics = self._source.build()
        return self._store(key, context)

    async def aget(self, key: Hashable) -> RunContext:
        """As :meth:`get`, building with ``await builder.abuild()``."""
        if isinstance(self._source, RunContext):
            return self._source
        with self._lock:
            found = self._lookup(key)
        if found is not None:
            return found
        context, self.diagnostics = await self._source.abuild()
        return self._store(key, context)

    def _lookup(self, key: Hashable) -> RunContext | None:
        found = self._turns.get(key)
        if found is not None:
            self._turns.move_to_end(key, last=False)
        return found

    def _store(self, key: Hashable, context: RunContext) -> RunContext:
        with self._lock:
            # Two calls of one turn racing: the first context stored wins, so both use it.
            kept = self._turns.setdefault(key, context)
            self._turns.move_to_end(key, last=False)
            while len(self._turns) > _KEPT_TURNS:
                self._turns.popitem()
            return kept


def user_turn_key(messages: Sequence[Mapping[str, Any]], scope: Hashable = None) -> Hashable:
    """The key of the turn a conversation is in: the position and digest of its last user
    message (a new turn starts with a new user message; the model calls of one turn's tool
    loop only add assistant and tool messages after it). ``scope`` separates conversations
    (a thread id) when one is known."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user":
            return (scope, index, digest(message))
    return (scope, -1, None)
