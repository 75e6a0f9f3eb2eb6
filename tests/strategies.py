"""Hypothesis strategies shared by the tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

MAX_SAFE_INTEGER = 2**53 - 1

# Text without lone surrogates (they cannot be encoded), biased towards the characters
# that matter for escaping and UTF-16 ordering.
_interesting = st.sampled_from(
    list('"\\/\b\t\n\f\r\x00\x1f\x7f\u2028\u2029\u00e9\ue000\uffff\U0001f600\U00010000 ')
)
text = st.lists(
    st.one_of(st.characters(exclude_categories=("Cs",)), _interesting), max_size=12
).map("".join)

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
safe_ints = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)

json_scalars = st.one_of(st.none(), st.booleans(), safe_ints, finite_floats, text)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(text, children, max_size=5),
    ),
    max_leaves=30,
)

# RunContext arguments: valid names (no control characters, no edge whitespace) and values
# with a taste of every normalisation rule.
_name_chars = st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp"))
names = st.text(_name_chars, min_size=1, max_size=8).filter(
    lambda n: n == n.strip() and not n[0].isspace() and not n[-1].isspace()
)
_tails = st.sampled_from(["", " ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\x1c", "\x85", "  \n"])
values = st.one_of(
    st.none(),
    st.tuples(text, _tails).map("".join),
    st.sampled_from(["", "   ", "line one\nline two", "\u3000lead"]),
)


def unique_pairs(min_size: int = 0) -> st.SearchStrategy[list[tuple[str, str | None]]]:
    return st.lists(
        st.tuples(names, values), max_size=5, min_size=min_size, unique_by=lambda p: p[0]
    )
