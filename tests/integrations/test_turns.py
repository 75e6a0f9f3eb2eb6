"""TurnContexts: one context per turn key, built on the key's first use; what it refuses."""

from __future__ import annotations

import asyncio

import pytest

from runcontext import RunContext
from runcontext.integrations._turns import TurnContexts, user_turn_key

from turnfacts import Clock, builder


def test_one_build_per_turn_key() -> None:
    clock = Clock()
    turns = TurnContexts(builder(clock))
    first = turns.get("turn-1")
    assert turns.get("turn-1") is first
    second = turns.get("turn-2")
    assert dict(second.facts)["build"] == "2" and clock.builds == 2
    assert turns.get("turn-1") is first  # an interleaved earlier turn keeps its context


def test_async_builds_with_abuild() -> None:
    clock = Clock()
    turns = TurnContexts(builder(clock))

    async def main() -> tuple[RunContext, RunContext]:
        return await turns.aget("a"), await turns.aget("a")

    one, two = asyncio.run(main())
    assert one is two and clock.builds == 1


def test_a_fixed_context_is_every_turns() -> None:
    context = RunContext(facts=[("date", "2026-12-01")])
    turns = TurnContexts(context)
    assert turns.get("a") is context and turns.fixed is context


def test_old_turns_are_forgotten() -> None:
    clock = Clock()
    turns = TurnContexts(builder(clock))
    for key in range(65):
        turns.get(key)
    turns.get(0)  # the oldest of 65 was dropped: built again
    assert clock.builds == 66


def test_refuses_what_is_not_a_context_or_builder() -> None:
    with pytest.raises(
        TypeError, match=r"context_or_builder: expected a runcontext\.RunContext or"
    ):
        TurnContexts({"date": "today"})


def test_user_turn_key_follows_the_last_user_message() -> None:
    user = {"role": "user", "content": "Is T-1 open?"}
    call = {"role": "assistant", "tool_calls": []}
    result = {"role": "tool", "content": "open"}
    key = user_turn_key([user])
    assert user_turn_key([user, call, result]) == key  # the same turn's tool loop
    assert user_turn_key([user, call, result, {"role": "user", "content": "Still?"}]) != key
    assert user_turn_key([user], scope="other") != key
