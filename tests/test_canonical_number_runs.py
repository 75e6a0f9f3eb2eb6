"""Runs of numbers in a list or tuple write what one number at a time does.

canonical_json writes a run of small exact ints, or of finite exact floats, after one
reservation of the output (at most 32 of them), every float straight into the output. Each
run is broken here at every position by every other kind of item, and at the run's length
limit; an item that cannot be written is located at its own index.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from runcontext import canonical_json
from runcontext.errors import InvalidNumberError

from reference import jcs as reference

SAFE = 2**53 - 1


class Int(int):
    pass


class Float(float):
    pass


# One float of every layout: exponent forms, the plain forms from exponents -6 and 16..20,
# integers (their `.0` dropped), both zeros, the extremes.
LAYOUTS: list[float] = [
    1.5e-7,
    -2e-300,
    5e-324,
    1e21,
    -1.7976931348623157e308,
    1.25e-6,
    -1e-6,
    1.2345678901234567e16,
    -1e20,
    9.5e19,
    42.0,
    -1e15,
    9007199254740993.0,
    0.0,
    -0.0,
    0.1,
    -123.456,
    1e-5,
]

# Items that end a run of small ints, or join one: a subclass, a bool, ints of two 30-bit
# digits, floats, the rest.
BREAKERS: list[Any] = [
    True,
    False,
    Int(7),
    2**30,
    -(2**30),
    2**31 + 5,
    SAFE,
    -SAFE,
    1.5,
    -0.0,
    1e21,
    Float(2.5),
    None,
    "text",
    [1, 2],
    (3,),
    {"k": 4},
]


def small_ints(count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.choice((0, 1, -1, 9, -10, 99_999, -(2**30) + 1, 2**30 - 1)) for _ in range(count)]


@pytest.mark.parametrize("count", [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000])
def test_runs_of_every_length(count: int) -> None:
    values = small_ints(count, count)
    assert canonical_json(values) == reference.canonical_json(values)
    assert canonical_json(tuple(values)) == reference.canonical_json(values)
    assert canonical_json({"a": values, "b": [values, values]}) == reference.canonical_json(
        {"a": values, "b": [values, values]}
    )


@pytest.mark.parametrize("breaker", BREAKERS, ids=repr)
def test_runs_broken_at_every_position(breaker: Any) -> None:
    base = small_ints(70, 1)
    for at in range(len(base) + 1):
        values = [*base[:at], breaker, *base[at:]]
        expected = reference.canonical_json(values)
        assert canonical_json(values) == expected, at
        assert canonical_json(tuple(values)) == expected, at


@pytest.mark.parametrize("bad", [SAFE + 1, -SAFE - 1, 2**63, 10**40, Int(2**60)], ids=repr)
def test_an_unsafe_int_in_a_run_is_located_at_its_index(bad: int) -> None:
    for at in (0, 1, 31, 32, 33, 40):
        values: list[Any] = [*small_ints(40, at)]
        values.insert(at, bad)
        with pytest.raises(InvalidNumberError) as info:
            canonical_json(values)
        assert info.value.path == f"$[{at}]"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_float_among_floats_is_located_at_its_index(bad: float) -> None:
    for at in (0, 1, 32, 99):
        values = [float(i) / 7 for i in range(100)]
        values[at] = bad
        with pytest.raises(InvalidNumberError) as info:
            canonical_json(values)
        assert info.value.path == f"$[{at}]"


def test_floats_of_every_layout_in_one_list() -> None:
    rng = random.Random(5)
    values = [
        rng.choice((-1, 1)) * rng.uniform(1, 10) * 10.0 ** rng.randint(-30, 30) for _ in range(5000)
    ]
    edges = [0.0, -0.0, 5e-324, -5e-324, 1e-7, 1e-6, 1e21, 1e20, 1e16, 1e15, 1e-5, 9.5e-7]
    values += [*edges, 1.7976931348623157e308, -1.7976931348623157e308]
    values += [float(i) for i in range(-100, 100)]
    assert canonical_json(values) == reference.canonical_json(values)


def layout_floats(count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.choice(LAYOUTS) for _ in range(count)]


@pytest.mark.parametrize("count", [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000])
def test_float_runs_of_every_length(count: int) -> None:
    values = layout_floats(count, count)
    assert canonical_json(values) == reference.canonical_json(values)
    assert canonical_json(tuple(values)) == reference.canonical_json(values)
    nested = {"a": values, "b": [values, 1, values]}
    assert canonical_json(nested) == reference.canonical_json(nested)


@pytest.mark.parametrize("breaker", [b for b in BREAKERS if type(b) is not float], ids=repr)
def test_float_runs_broken_at_every_position(breaker: Any) -> None:
    base = layout_floats(70, 2)
    for at in range(len(base) + 1):
        values = [*base[:at], breaker, *base[at:]]
        expected = reference.canonical_json(values)
        assert canonical_json(values) == expected, at
        assert canonical_json(tuple(values)) == expected, at


@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
def test_every_layout_at_every_position_of_a_run(layout: float) -> None:
    # Each layout's text has its own length, and the next number starts where it ends.
    base = [1.5] * 66
    for at in range(len(base)):
        values = [*base[:at], layout, *base[at + 1 :]]
        assert canonical_json(values) == reference.canonical_json(values), at
