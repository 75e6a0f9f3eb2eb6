"""Refusals agree with the reference: the same kind at the same place (FORMAT.md § 1.6,
§ 1.7.2), on arbitrary, mostly invalid, input. Outputs agree where both accept."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from runcontext import CanonicalJSONError, canonical_json, canonicalize_text

from reference import jcs as reference
from strategies import json_values, text

# --- JSON text ------------------------------------------------------------------------------

# Pieces that matter to the grammar and to the refusals, so that random edits hit them.
_PIECES = [
    "[", "]", "{", "}", ":", ",", '"', "\\", "\\u", "\\ud800", "\\udc00", "\\u00e9", "0", "1",
    "-", ".", "e", "+", "true", "tru", "null", "nul", "f", " ", "\n", "\r", "\t", "1e400",
    "9007199254740993", "9007199254740992", "9" * 400, "01", '"a"', '"a":1', "\x00", "\x1f",
    "\u00e9", "\U0001f600", "\ufeff", "x",
]  # fmt: skip
_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\xf0\x9f\x98"]


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    """A JSON text (objects may repeat names), then a few random edits."""
    value = draw(json_values)
    base = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()) and isinstance(value, dict) and value:
        key = json.dumps(next(iter(value)))
        base = base[:-1] + ("," if len(value) else "") + f"{key}:{draw(st.sampled_from(_PIECES))}}}"
    data = base.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        pieces = st.sampled_from(_PIECES).map(str.encode)
        piece = draw(st.one_of(pieces, pieces, pieces, st.sampled_from(_BYTES)))
        cut = draw(st.integers(0, 2))
        data = data[:at] + piece + data[at + cut :]
    return data


def _observed(data: bytes) -> tuple[Any, ...]:
    try:
        return ("ok", canonicalize_text(data))
    except CanonicalJSONError as error:
        where = (error.offset, error.line, error.column)  # type: ignore[attr-defined]
        return (error.kind, *where, error.path)


def _expected(data: bytes) -> tuple[Any, ...]:
    try:
        return ("ok", reference.canonicalize_text(data))
    except reference.CanonicalRefError as error:
        return (error.kind, error.offset, error.line, error.column, error.path)


@given(json_texts())
@example(b'{"a":1,"a":1e400}')
@example(b'{"b":1,"a":1,"b":2,"a":2}')
@example(b'{"a":1,"a":[[1,]]}')
@example(b'"\\ud800\\u12G4"')
@example(b"[nul]")
@example(b"\xef\xbb\xbf[\xff]")
def test_text_refusals_agree_with_the_reference(data: bytes) -> None:
    assert _observed(data) == _expected(data)


@pytest.mark.parametrize(
    "data",
    [b"[" * 512 + b"]" * 512, b"[" * 513 + b"]" * 513, b'{"a":' * 513 + b"1" + b"}" * 513],
)
def test_depth_refusals_agree_with_the_reference(data: bytes) -> None:
    assert _observed(data) == _expected(data)


# --- Python values ----------------------------------------------------------------------------

_bad_leaves = st.sampled_from(
    [math.nan, math.inf, 2**53, -(2**60), "x\ud800", b"bytes", {1, 2}, 1j, object]
)
_keys = st.one_of(text, st.sampled_from(["\udc00", "a\ud800b"]), st.sampled_from([1, None, 2.5]))
_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(json_values, _bad_leaves),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_keys, children, max_size=4),
    ),
    max_leaves=12,
)


@given(_values)
@example({"\ud800": 1, 1: 2})
@example({1: 2, "\ud800": 1})
@example({"b": math.nan, "a": [math.inf]})
def test_value_refusals_agree_with_the_reference(value: Any) -> None:
    expected = reference.refusal(value)
    try:
        out = canonical_json(value)
    except CanonicalJSONError as error:
        assert expected is not None, f"refused as {error.kind} at {error.path}: {error}"
        assert (error.kind, error.path) == (expected.kind, expected.path)
        assert isinstance(error, TypeError) == isinstance(expected, TypeError)
    else:
        assert expected is None
        assert out == reference.canonical_json(value)


def test_depth_comes_before_keys() -> None:
    value: Any = {1: 2}
    for _ in range(512):
        value = [value]
    with pytest.raises(CanonicalJSONError) as info:
        canonical_json(value)
    assert info.value.kind == "too-deep"
    assert reference.refusal(value).kind == "too-deep"  # type: ignore[union-attr]


def test_a_huge_exponent_is_a_number_for_both() -> None:
    # Found by hypothesis: the reference once raised decimal.InvalidOperation on it.
    text = b"[1.3481539074814583e-9007199254740993286]"
    assert canonicalize_text(text) == b"[0]"
    assert reference.canonicalize_text(text) == b"[0]"
