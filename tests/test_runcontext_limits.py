"""RunContext: the entry limit (MAX_ENTRIES), endless sequences, is_empty and section_digests."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import overload

import pytest

from runcontext import RunContext, _core, digest
from runcontext.errors import RunContextValueError

from reference import runcontext as reference

MAX_ENTRIES = 10_000


def test_the_limit_is_the_documented_number() -> None:
    assert _core.MAX_ENTRIES == MAX_ENTRIES == reference.MAX_ENTRIES


class Endless(Sequence[tuple[str, str]]):
    """A sequence that never ends (its length is a lie), counting the items read."""

    def __init__(self) -> None:
        self.read = 0

    def __len__(self) -> int:
        return 2**62

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, str]]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, str] | Sequence[tuple[str, str]]:
        if isinstance(index, slice):
            raise TypeError("no slices")
        self.read += 1
        return (f"f{index}", "x")


@pytest.mark.parametrize("argument", ["head_sections", "facts", "tail_sections"])
def test_endless_sequence_is_refused_after_one_entry_too_many(argument: str) -> None:
    endless = Endless()
    with pytest.raises(RunContextValueError) as info:
        RunContext(**{argument: endless})  # type: ignore[arg-type]
    assert (info.value.kind, info.value.argument, info.value.index) == (
        "too-many-entries",
        argument,
        MAX_ENTRIES,
    )
    assert endless.read == MAX_ENTRIES + 1
    assert str(info.value) == (
        f"{argument}[{MAX_ENTRIES}]: more than {MAX_ENTRIES} entries; a context this large is "
        "not a prompt (is the sequence endless?)"
    )


def test_exactly_max_entries_are_accepted() -> None:
    facts = [(f"f{i}", "x") for i in range(MAX_ENTRIES)]
    rc = RunContext(facts=facts)
    assert len(rc.facts) == MAX_ENTRIES
    assert rc.digest == reference.RunContext(facts=facts).digest
    # A deque (a sequence that is neither list nor tuple) at the limit, too.
    assert RunContext(facts=collections.deque(facts)).digest == rc.digest


@pytest.mark.parametrize("kind", [list, tuple, collections.deque])
def test_one_more_is_refused_before_any_entry_is_looked_at(kind: type) -> None:
    entries = kind([None] * (MAX_ENTRIES + 1))  # entry 0 is not a pair
    with pytest.raises(RunContextValueError) as info:
        RunContext(tail_sections=entries)
    assert (info.value.kind, info.value.index) == ("too-many-entries", MAX_ENTRIES)
    with pytest.raises(reference.RunContextRefError) as ref:
        reference.RunContext(tail_sections=list(entries))
    assert (ref.value.kind, ref.value.index) == ("too-many-entries", MAX_ENTRIES)


def test_a_long_pair_is_read_no_further_than_its_third_item() -> None:
    endless = Endless()
    with pytest.raises(TypeError) as info:
        RunContext(facts=[endless])  # type: ignore[list-item]
    assert (
        str(info.value)
        == "facts[0]: expected a (name, value) pair, got a Endless of more than 2 items"
    )
    assert endless.read == 3


def test_is_empty() -> None:
    assert RunContext().is_empty
    assert RunContext(
        head_sections=[("h", " \n")], facts=[("f", None)], tail_sections=[("t", "")]
    ).is_empty
    assert not RunContext(facts=[("f", "")]).is_empty  # an empty value still renders "- f:"
    assert not RunContext(head_sections=[("h", "x")]).is_empty
    assert not RunContext(tail_sections=[("t", "x")]).is_empty


def test_section_digests_are_the_sections_digests_in_order() -> None:
    rc = RunContext(
        head_sections=[("b", "second"), ("gone", ""), ("a", "first")],
        tail_sections=[("t", "tail text \n")],
    )
    assert rc.section_digests == tuple(s.digest for s in rc.sections)
    assert rc.section_digests == (
        digest({"name": "b", "text": "second"}),
        digest({"name": "a", "text": "first"}),
        digest({"name": "t", "text": "tail text"}),
    )
    assert RunContext().section_digests == ()
