"""canonical_json and canonicalize_text: RFC 8785 byte for byte, and every refusal."""

from __future__ import annotations

import datetime
import decimal
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

import runcontext
from runcontext import CanonicalJSONError, canonical_json, canonicalize_text
from runcontext.errors import (
    DuplicateKeyError,
    InvalidNumberError,
    InvalidStringError,
    JSONSyntaxError,
    NestingTooDeepError,
    UnsupportedTypeError,
)

from conftest import VECTORS
from reference import jcs as reference
from strategies import json_values

# --- agreement with the reference and round trips --------------------------------------


@given(json_values)
def test_rust_agrees_with_the_reference(value: Any) -> None:
    assert canonical_json(value) == reference.canonical_json(value)


@given(json_values)
def test_output_parses_back_to_the_value(value: Any) -> None:
    # JSON numbers are doubles (RFC 8785): 6.955587967219425e16 is written 69555879672194250,
    # which Python would otherwise read back as an exact int.
    assert json.loads(canonical_json(value), parse_int=float) == value


@given(json_values)
def test_canonicalising_twice_is_stable(value: Any) -> None:
    once = canonical_json(value)
    assert canonical_json(json.loads(once, parse_int=float)) == once
    assert canonicalize_text(once) == once


@given(json_values)
def test_text_path_agrees_with_value_path(value: Any) -> None:
    # Python's own serialiser, with its spaces, escapes and key order, as the input text.
    text = json.dumps(value, indent=1, ensure_ascii=True)
    assert canonicalize_text(text) == canonical_json(value)
    assert canonicalize_text(text.encode()) == canonical_json(value)


def test_rfc8785_sample_object() -> None:
    # RFC 8785 § 3.2.2 input written as Python values; § 3.2.3 output.
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": '\u20ac$\u000f\nA\'B"\\\\"/',
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_json(value) == expected.encode()


def test_keys_sort_by_utf16_code_units() -> None:
    # U+1F600 (D83D DE00) sorts before U+FB33 and U+E000 in UTF-16, after them in UTF-8.
    value = {"\ufb33": 1, "\U0001f600": 2, "\ue000": 3, "a": 4, "\u00e9": 5}
    assert canonical_json(value) == '{"a":4,"é":5,"😀":2,"\ue000":3,"דּ":1}'.encode()


def test_bool_is_not_int_and_tuples_are_arrays() -> None:
    assert canonical_json([True, 1, False, 0, (1.0, -0.0)]) == b"[true,1,false,0,[1,0]]"


def test_escapes() -> None:
    assert canonical_json('\x00\x08\t\n\x0b\x0c\r\x1f"\\/\x7f\u2028') == (
        b'"\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f\\"\\\\/\x7f\xe2\x80\xa8"'
    )


# --- shared vectors ---------------------------------------------------------------------


def _es_number_lines() -> list[tuple[float, str]]:
    lines = (VECTORS / "es-numbers.txt").read_text().splitlines()
    return [(_from_bits(bits), text) for bits, text in (line.split(" ") for line in lines)]


def _from_bits(bits: str) -> float:
    import struct

    return float(struct.unpack(">d", bytes.fromhex(bits))[0])


def test_every_node_number_vector() -> None:
    pairs = _es_number_lines()
    assert len(pairs) >= 100_000
    # One call over the whole list: the array joins the numbers with commas.
    got = canonical_json([v for v, _ in pairs]).decode()[1:-1].split(",")
    mismatches = [
        (v, want, have) for (v, want), have in zip(pairs, got, strict=True) if want != have
    ]
    assert not mismatches, mismatches[:10]


def _jcs_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((VECTORS / "jcs.json").read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", _jcs_cases(), ids=lambda c: str(c["name"])[:60])
def test_jcs_vectors(case: dict[str, Any]) -> None:
    data = case["input"].encode("utf-8")
    if "canonical" in case:
        assert canonicalize_text(data) == case["canonical"].encode("utf-8")
    else:
        with pytest.raises(CanonicalJSONError) as info:
            canonicalize_text(data)
        assert info.value.kind == case["error"]


# --- refusals name the path -------------------------------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "error", "path", "words"),
    [
        (float("nan"), InvalidNumberError, "$", "NaN is not a JSON number"),
        ({"a": [float("inf")]}, InvalidNumberError, "$.a[0]", "Infinity"),
        ([1, float("-inf")], InvalidNumberError, "$[1]", "-Infinity"),
        ({"n": 2**53}, InvalidNumberError, "$.n", "integer 9007199254740992 is outside"),
        ([-(2**53)], InvalidNumberError, "$[0]", "-9007199254740992"),
        ({"big": 10**400}, InvalidNumberError, "$.big", "outside ±(2**53 − 1)"),
        ({"s": "a\ud800b"}, InvalidStringError, "$.s", "lone surrogate"),
        ({"k\udc00": 1}, InvalidStringError, "$", "lone surrogate"),
        ({1: "x"}, UnsupportedTypeError, "$", "object key of type int"),
        ({"a": {None: 1}}, UnsupportedTypeError, "$.a", "object key of type NoneType"),
        ({"b": b"x"}, UnsupportedTypeError, "$.b", "type bytes"),
        ([{1, 2}], UnsupportedTypeError, "$[0]", "type set"),
        ({"when": datetime.date(2026, 11, 30)}, UnsupportedTypeError, "$.when", "type date"),
        ({"d": decimal.Decimal("1.5")}, UnsupportedTypeError, "$.d", "type Decimal"),
        ({"o": Opaque()}, UnsupportedTypeError, "$.o", "type Opaque"),
        ({"odd key": [0, {"x": object()}]}, UnsupportedTypeError, '$["odd key"][1].x', "object"),
    ],
)
def test_refusals_name_the_path(value: Any, error: type[Exception], path: str, words: str) -> None:
    with pytest.raises(error) as info:
        canonical_json(value)
    assert isinstance(info.value, CanonicalJSONError)
    assert isinstance(info.value, ValueError)
    assert info.value.path == path
    assert str(info.value).startswith(f"{path}: ")
    assert words in str(info.value)


def test_type_problems_are_also_type_errors() -> None:
    with pytest.raises(TypeError):
        canonical_json({"b": b"x"})
    with pytest.raises(TypeError):
        canonical_json({1: 1})
    assert not issubclass(InvalidNumberError, TypeError)


def test_digest_refuses_what_canonical_json_refuses() -> None:
    with pytest.raises(InvalidNumberError, match=r"\$\.x: NaN"):
        runcontext.digest({"x": float("nan")})


# --- hostile and huge input: an exception or a correct answer, never a crash ------------


def _nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    current = root
    for _ in range(depth - 1):
        inner: list[Any] = []
        current.append(inner)
        current = inner
    return root


def test_nesting_limit_is_exact() -> None:
    assert canonical_json(_nested_list(runcontext.MAX_DEPTH)) == (
        b"[" * runcontext.MAX_DEPTH + b"]" * runcontext.MAX_DEPTH
    )
    with pytest.raises(NestingTooDeepError, match="deeper than 512"):
        canonical_json(_nested_list(runcontext.MAX_DEPTH + 1))


def test_a_million_deep_list_is_refused() -> None:
    with pytest.raises(NestingTooDeepError) as info:
        canonical_json(_nested_list(1_000_000))
    assert info.value.path.startswith("$[0][0]")


def test_a_self_referencing_list_is_refused_not_looped() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(NestingTooDeepError):
        canonical_json(loop)
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    with pytest.raises(NestingTooDeepError):
        canonical_json(mapping)


def test_deep_input_in_a_small_thread_stack() -> None:
    # 512 nested containers must fit comfortably even in a 1 MiB thread stack.
    results: list[object] = []
    old = threading.stack_size(1 << 20)
    try:
        thread = threading.Thread(
            target=lambda: results.append(canonical_json(_nested_list(runcontext.MAX_DEPTH)))
        )
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    assert results == [b"[" * 512 + b"]" * 512]


def test_deep_text_is_refused() -> None:
    with pytest.raises(NestingTooDeepError) as info:
        canonicalize_text(b"[" * 1_000_000)
    assert (info.value.line, info.value.column) == (1, 513)


def test_a_200_mb_string() -> None:
    big = "x" * 200_000_000
    out = canonical_json({"s": big})
    assert len(out) == 200_000_008
    assert out.startswith(b'{"s":"xxx') and out.endswith(b'xx"}')


class HostileDict(dict[str, Any]):
    def __iter__(self) -> Any:
        raise RuntimeError("__iter__ must not be called")

    def keys(self) -> Any:
        raise RuntimeError("keys must not be called")

    def items(self) -> Any:
        raise RuntimeError("items must not be called")


class HostileList(list[Any]):
    def __iter__(self) -> Any:
        raise RuntimeError("__iter__ must not be called")

    def __len__(self) -> int:
        return 10**9


class Text(str):
    def __str__(self) -> str:
        return "not me"


class Number(int):
    def __repr__(self) -> str:
        return "not me"


def test_subclasses_are_written_as_their_values() -> None:
    value = HostileDict(b=HostileList([Text("t"), Number(7), 1.5]), a=True)
    assert canonical_json(value) == b'{"a":true,"b":["t",7,1.5]}'
    assert canonical_json({Text("k"): Number(-3)}) == b'{"k":-3}'


class SameText(str):
    """Two keys with the same text but different hashes: possible only via subclasses."""

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


def test_duplicate_keys_through_str_subclasses_are_refused() -> None:
    value = {SameText("k"): 1, SameText("k"): 2}
    assert len(value) == 2
    with pytest.raises(DuplicateKeyError, match='duplicate object key "k"'):
        canonical_json(value)


# --- canonicalize_text errors carry line and column -------------------------------------


@pytest.mark.parametrize(
    ("text", "error", "kind", "line", "column", "words"),
    [
        (b'{\n  "a": 1,\n  "a": 2\n}', DuplicateKeyError, "duplicate-key", 3, 3, '"a"'),
        (b"[1,\n 1e400]", InvalidNumberError, "number-overflow", 2, 2, "1e400"),
        (
            b"[9007199254740993]",
            InvalidNumberError,
            "integer-out-of-range",
            1,
            2,
            "would be 9007199254740992",
        ),
        (b'"ok\xff"', InvalidStringError, "invalid-utf8", 1, 4, "invalid UTF-8"),
        (b'{"x": "\\ud800"}', InvalidStringError, "lone-surrogate", 1, 8, "lone surrogate"),
        (b"{} []", JSONSyntaxError, "trailing", 1, 4, "text after"),
        (b"\xef\xbb\xbf{}", JSONSyntaxError, "bom", 1, 1, "byte order mark"),
        (b'{"a":\n  [tru]}', JSONSyntaxError, "syntax", 2, 7, "unexpected ']'"),
    ],
)
def test_text_errors_have_line_and_column(
    text: bytes, error: type[Exception], kind: str, line: int, column: int, words: str
) -> None:
    with pytest.raises(error) as info:
        canonicalize_text(text)
    assert (info.value.kind, info.value.line, info.value.column) == (kind, line, column)
    assert str(info.value).startswith(f"line {line}, column {column}")
    assert words in str(info.value)


def test_canonicalize_text_takes_bytes_or_str_only() -> None:
    with pytest.raises(TypeError, match="takes bytes or str, got bytearray"):
        canonicalize_text(bytearray(b"{}"))  # type: ignore[arg-type]
    with pytest.raises(InvalidStringError):
        canonicalize_text('"\ud800"'.replace('"', "", 1))


def test_large_text_round_trip(tmp_path: Path) -> None:
    value = {"messages": [{"role": "user", "content": "é" * 10_000, "n": i} for i in range(200)]}
    assert canonicalize_text(json.dumps(value, indent=2)) == canonical_json(value)


# --- Python code that runs on an error path cannot corrupt the walk -----------------------


class _Name(str):
    def __str__(self) -> str:  # must never be called: reading a type's name runs no code
        _VICTIM.clear()
        return "Foo"


class Foo:
    pass


Foo.__name__ = _Name("Foo")
_VICTIM: dict[str, Any] = {}


def test_a_type_name_that_runs_code_is_not_called() -> None:
    _VICTIM.clear()
    _VICTIM["k" * 100_000] = [Foo()]
    with pytest.raises(UnsupportedTypeError) as info:
        canonical_json(_VICTIM)
    assert info.value.path == "$." + "k" * 100_000 + "[0]"
    assert "type Foo" in str(info.value)
    assert len(_VICTIM) == 1


def _collect_during_error(victim: Any) -> Exception | None:
    """Run canonical_json on ``victim`` with a collection armed to fire at the next
    allocation of a tracked object (on 3.11, the exception an error path creates), whose
    finaliser empties ``victim`` while the walk is inside it."""
    import gc

    class Evil:
        def __del__(self) -> None:
            victim.clear()

    def garbage() -> None:
        evil = Evil()
        evil.me = evil  # type: ignore[attr-defined]  # a cycle only the collector frees

    old = gc.get_threshold()
    caught: Exception | None = None
    gc.disable()
    garbage()
    gc.set_threshold(1)
    gc.enable()
    try:
        canonical_json(victim)
    except CanonicalJSONError as error:
        caught = error
    finally:
        gc.set_threshold(*old)
    return caught


def test_a_collection_during_an_error_cannot_free_what_the_walk_reads() -> None:
    # Before the collector was paused for the walk, the finaliser ran inside it (the
    # OverflowError or UnicodeEncodeError allocated on the error path started a collection on
    # Python 3.11) and unwinding read the freed key: a crash.
    victim: dict[str, Any] = {"key_" * 8: [int("1" * 30)]}
    error = _collect_during_error(victim)
    assert isinstance(error, InvalidNumberError)
    assert error.path == "$.key_key_key_key_key_key_key_key_[0]"
    assert "111111111111111111111111111111" in str(error)
    surrogate: dict[str, Any] = {"key_" * 8: ["\ud800"]}
    error = _collect_during_error(surrogate)
    assert isinstance(error, InvalidStringError)
    assert error.path == "$.key_key_key_key_key_key_key_key_[0]"
    assert surrogate == {}  # the finaliser did run, once the collector resumed


def test_the_collector_state_is_restored() -> None:
    import gc

    assert gc.isenabled()
    canonical_json({"a": [1]})
    with pytest.raises(InvalidNumberError):
        canonical_json({"a": float("nan")})
    assert gc.isenabled()
    gc.disable()
    try:
        canonical_json({"a": [1]})
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_lone_surrogate_in_str_text_is_located() -> None:
    with pytest.raises(InvalidStringError) as info:
        canonicalize_text('{"a": 1,\n "b": "x\ud800"}')
    assert (info.value.kind, info.value.line, info.value.column) == ("lone-surrogate", 2, 9)
    # Text that is not Unicode is refused before its grammar is looked at, as with bytes.
    with pytest.raises(InvalidStringError) as info:
        canonicalize_text('[1,]\n"\ud800"')
    assert (info.value.line, info.value.column) == (2, 2)


def test_lines_are_counted_at_lf_only() -> None:
    # A lone CR is whitespace, not a line end (JSON has no line concept; LF is the one that
    # editors and `line:column` tools agree on), so both CRs stay on line 1; CRLF counts once.
    with pytest.raises(runcontext.errors.JSONSyntaxError) as info:
        canonicalize_text(b"[1,\r 2,\r x]")
    assert (info.value.line, info.value.column, info.value.offset) == (1, 10, 9)
    with pytest.raises(runcontext.errors.JSONSyntaxError) as info:
        canonicalize_text(b"[1,\r\n 2,\r\n x]")
    assert (info.value.line, info.value.column) == (3, 2)


def test_offset_counts_utf8_bytes_and_column_characters_for_str_input() -> None:
    # Bytes of '["é", x]': '[' 0, '"' 1, 'é' 2-3 (two bytes in UTF-8), '"' 4, ',' 5, ' ' 6,
    # 'x' 7. 'x' is the 7th character (column 7, 1-based); a character offset would be 6.
    for text in ('["é", x]', '["é", x]'.encode()):
        with pytest.raises(runcontext.errors.JSONSyntaxError) as info:
            canonicalize_text(text)
        assert (info.value.line, info.value.column, info.value.offset) == (1, 7, 7)
