"""The cache targets, through Loop, each adapter and its SDK against the simulators: from turn
2 on, at least 95% of what can be read is read, and nothing is written at the tail, under both
readings of OpenAI's implicit breakpoint (benches/bench_provider_cache.py runs 50 turns)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))

from bench_provider_cache import head_text, run, series

HEAD = head_text(8 * 1024)
SERIES = {label: row for label, *row in series()}


@pytest.mark.parametrize("label", [label for label in SERIES if "runcontext" in label])
def test_adapter_reads_what_can_be_read_and_never_writes_the_tail(label: str) -> None:
    provider, adapter, reading = SERIES[label]
    usages = run(provider, adapter, reading, 4, HEAD)
    later = [usage for turn, usage in usages if turn >= 2]
    assert len(later) == 6
    for usage in later:
        assert usage.shared > 0
        assert usage.read >= 0.95 * usage.shared, (label, usage)
        assert usage.written_in_last_message == 0, (label, usage)
        assert usage.cost() < 0.5  # short conversations: the new messages weigh more


def test_without_a_breakpoint_an_implicit_breakpoint_on_the_tail_costs_more_than_no_cache() -> None:
    provider, adapter, reading = SERIES["Chat no breakpoint [newest]"]
    usages = run(provider, adapter, reading, 3, HEAD)
    for _, usage in usages:
        assert usage.read == 0 and usage.written == usage.total
        assert usage.cost() == pytest.approx(1.25)


def test_behind_a_hoisting_gateway_only_a_user_tail_keeps_the_cache() -> None:
    # The gateway moves a system tail to the front, after the head: the prefix changes with the
    # facts, so a turn's first request reads nothing (its tool-loop continuation, with the same
    # facts, reads the turn's first); the same tail as a user message stays last and the cache
    # reads as it does directly.
    readable = [u.shared for _, u in run(*SERIES["Chat runcontext [newest]"], 3, HEAD)]
    system = run(*SERIES["Chat via gateway, system tail [newest]"], 3, HEAD)
    user = run(*SERIES["Chat runcontext via gateway, user tail [newest]"], 3, HEAD)
    later = [i for i, (turn, _) in enumerate(system) if turn >= 2]
    assert [system[i][1].read for i in later[::2]] == [0, 0]  # each turn's first request
    assert all(user[i][1].read >= 0.95 * readable[i] for i in later)
