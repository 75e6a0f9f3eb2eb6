"""Object members come out in the order of their keys' UTF-16 code units (RFC 8785 § 3.2.3),
at every object size: the sorts switch at 8 and at 32 members, and keys mixing ASCII,
characters in U+E000–U+FFFF and characters above U+FFFF (where UTF-8 byte order and UTF-16
order disagree) take the same path as ASCII keys."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runcontext import canonical_json
from runcontext.errors import DuplicateKeyError

from reference import jcs as reference

# ASCII (with NUL and DEL), a BMP character below the surrogates, BMP characters from
# U+E000 and characters above U+FFFF: each pair of the last two groups sorts one way in
# UTF-8 and the other in UTF-16.
CHARACTERS = ["a", "b", "k", "_", "0", "9", "~", "\x00", "\x7f", "é", "\ud7ff"]
CHARACTERS += ["\ue000", "\uf8ff", "\ufb33", "\uffff"]
CHARACTERS += ["\U00010000", "\U0001f600", "\U0001f389", "\U0010ffff"]


def utf16_order(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda k: k.encode("utf-16-be"))


def members_in_output(out: bytes) -> list[str]:
    pairs: list[tuple[str, Any]] = json.loads(out, object_pairs_hook=list)
    return [k for k, _ in pairs]


# Mostly ASCII keys with a shared stem (so that prefixes tie), a few other characters.
keys = st.builds(
    lambda stem, tail: stem + "".join(tail),
    st.sampled_from(["", "key_", "key_00000000000", "p" * 16]),
    st.lists(st.sampled_from(CHARACTERS), max_size=20),
)


@settings(max_examples=300)
@given(st.lists(keys, max_size=40, unique=True), st.randoms(use_true_random=False))
def test_small_and_medium_objects_sort_by_utf16(keys: list[str], rng: random.Random) -> None:
    rng.shuffle(keys)
    value = {k: i for i, k in enumerate(keys)}
    out = canonical_json(value)
    assert members_in_output(out) == utf16_order(keys)
    assert out == reference.canonical_json(value)


@settings(max_examples=20)
@given(st.lists(keys, min_size=33, max_size=3000, unique=True), st.randoms(use_true_random=False))
def test_large_objects_sort_by_utf16(keys: list[str], rng: random.Random) -> None:
    rng.shuffle(keys)
    value = {k: None for k in keys}
    assert members_in_output(canonical_json(value)) == utf16_order(keys)


@pytest.mark.parametrize("astral_every", [1, 7, 1000, 10_001])
def test_ten_thousand_keys_with_a_few_astral_ones(astral_every: int) -> None:
    # Keys "key_00000" ... with one in `astral_every` ending in an emoji, and keys ending in
    # U+E000–U+FFFF beside them: the emoji keys sort before those, as in UTF-16.
    keys = [f"key_{i:05d}" + ("😀" if i % astral_every == 0 else "") for i in range(10_000)]
    keys += [f"key_{i:05d}\uffff" for i in range(0, 10_000, 500)]
    keys += [f"key_{i:05d}\ue000x" for i in range(0, 10_000, 700)]
    random.Random(astral_every).shuffle(keys)
    value = {k: 0 for k in keys}
    out = canonical_json(value)
    assert members_in_output(out) == utf16_order(keys)
    assert out == reference.canonical_json(value)


class SameText(str):
    """A key with the text of another but its own hash: a dict can then hold both."""

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


@pytest.mark.parametrize("size", [2, 8, 9, 31, 32, 33, 10_000])
def test_duplicates_among_astral_keys_are_refused(size: int) -> None:
    # Two keys with one text among keys mixing characters above U+FFFF and from U+E000,
    # at each sort.
    keys = [f"k{i}" + ("😀" if i % 3 else "\ue000") for i in range(size - 1)]
    value: dict[str, int] = {k: 0 for k in keys}
    value[SameText(keys[(size - 1) // 2])] = 1
    assert len(value) == size
    with pytest.raises(DuplicateKeyError) as info:
        canonical_json(value)
    assert str(info.value) == f'$: duplicate object key "{keys[(size - 1) // 2]}"'
