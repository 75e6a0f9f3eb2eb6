"""Numbers at every power-of-ten boundary agree with the pure-Python reference.

The core picks ECMAScript's layout (plain or exponent) from a number's magnitude alone,
without reading its digits back, so the places a wrong comparison would show are
the boundaries: the double nearest each 10**k, its neighbours (math.nextafter), both signs,
and the subnormals. The Rust test `rust/core/tests/number_boundaries.rs` checks the same
against ryu-js; this one goes through the binding, in arrays as the walker sees them.
"""

from __future__ import annotations

import math

import pytest

import runcontext

from reference.jcs import canonical_json as reference


def neighbours(v: float, steps: int) -> list[float]:
    below, above = [v], [v]
    for _ in range(steps):
        below.append(math.nextafter(below[-1], -math.inf))
        above.append(math.nextafter(above[-1], math.inf))
    return below[::-1] + above[1:]


def signed(values: list[float]) -> list[float]:
    return [x for v in values for x in (v, -v) if math.isfinite(x)]


@pytest.mark.parametrize("k", range(-324, 309))
def test_every_decade(k: int) -> None:
    values: list[float] = []
    for pattern in ("1", "1.5", "9.999999999999999", "1.2345678901234567"):
        values += neighbours(float(f"{pattern}e{k}"), 3)
    values = signed(values)
    assert runcontext.canonical_json(values) == reference(values)


@pytest.mark.parametrize("k", [-8, -7, -6, -5, -4, 15, 16, 17, 20, 21, 22])
def test_layout_boundaries_densely(k: int) -> None:
    values = signed(neighbours(float(f"1e{k}"), 300))
    assert runcontext.canonical_json(values) == reference(values)


def test_subnormals() -> None:
    smallest = math.ulp(0.0)
    values = neighbours(smallest, 200) + neighbours(math.nextafter(2.2250738585072014e-308, 0), 200)
    values += [smallest * 2**shift for shift in range(52)]
    values = signed([v for v in values if v != 0.0])
    assert runcontext.canonical_json(values) == reference(values)
