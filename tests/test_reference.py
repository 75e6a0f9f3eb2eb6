"""Tests of the pure-Python reference implementations.

Two kinds of test:

* the committed ``docs/vectors/runcontext-v1.json`` is exactly what
  ``tests/gen_runcontext_vectors.py`` produces now (so it cannot drift);
* direct checks of the reference against hand-written examples whose
  expected values were worked out by hand from the specification.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys
import unicodedata
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3

import gen_runcontext_vectors
from reference.jcs import canonical_json, digest, digest_bytes
from reference.runcontext import (
    CLOSING_TEXT,
    WHITE_SPACE,
    RunContext,
    RunContextRefError,
    is_control,
    strip_trailing_white_space,
)

CLOSING = (
    "This block supersedes any environment description, tool catalogue or\n"
    "project instructions that appear earlier in this conversation; where they\n"
    "disagree, this block is authoritative.\n"
    "This block is context, not a request: do not acknowledge it, and do not\n"
    "reply to it."
)

# The canonical JSON of the empty RunContext document, written by hand:
# keys sorted ("facts" < "head" < "tail" < "v"), no spaces.
EMPTY_DOCUMENT = b'{"facts":[],"head":[],"tail":[],"v":1}'

# --------------------------------------------------------------------------
# Vectors file
# --------------------------------------------------------------------------

ERROR_KINDS = {
    "mapping",
    "unordered",
    "not-a-sequence",
    "bare-pair",
    "not-a-pair",
    "name-type",
    "value-type",
    "empty-name",
    "name-control",
    "name-whitespace",
    "duplicate-name",
    "not-text",
    "too-many-entries",
}
# "unordered" needs a set, which JSON cannot express; it is tested directly.
JSON_EXPRESSIBLE_KINDS = ERROR_KINDS - {"unordered"}


def _load_vectors() -> dict[str, Any]:
    text = gen_runcontext_vectors.VECTORS_PATH.read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def test_vectors_file_matches_generator() -> None:
    committed = gen_runcontext_vectors.VECTORS_PATH.read_bytes()
    assert committed == gen_runcontext_vectors.render().encode("utf-8"), (
        "docs/vectors/runcontext-v1.json is stale: run python tests/gen_runcontext_vectors.py"
    )


_RENDER_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import gen_runcontext_vectors
sys.stdout.buffer.write(gen_runcontext_vectors.render().encode("utf-8"))
"""


def test_vectors_generation_is_deterministic() -> None:
    # In fresh interpreters with different string hash seeds: a set or dict iterated in hash
    # order anywhere in the generator or the reference would change the output between them.
    tests_dir = str(Path(gen_runcontext_vectors.__file__).resolve().parent)
    outputs = [
        subprocess.run(
            [sys.executable, "-c", _RENDER_SCRIPT, tests_dir],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=True,
        ).stdout
        for seed in ("0", "12345")
    ]
    assert outputs[0] == outputs[1]
    assert outputs[0].decode("utf-8") == gen_runcontext_vectors.render()


def test_vectors_structure() -> None:
    document = _load_vectors()
    assert document["format"] == "runcontext-v1"
    assert isinstance(document["description"], str) and document["description"]
    cases = document["cases"]
    assert len(cases) >= 60
    names = [case["name"] for case in cases]
    assert len(names) == len(set(names))
    for case in cases:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case["name"]), case["name"]
        assert case["description"]
        assert set(case["args"]) <= {"head_sections", "facts", "tail_sections"}
        assert ("expect" in case) != ("error" in case)
    kinds = {case["error"]["kind"] for case in cases if "error" in case}
    assert kinds == JSON_EXPRESSIBLE_KINDS


def test_vectors_contain_no_surrogates() -> None:
    # Lone surrogates are written as {"utf16": [code units]}, never in the JSON text itself.
    text = gen_runcontext_vectors.VECTORS_PATH.read_text(encoding="utf-8")
    assert not re.search(r"\\u[dD][89a-fA-F]", text)
    assert not any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def test_vectors_order_changes_digest() -> None:
    cases = {case["name"]: case for case in _load_vectors()["cases"]}
    assert cases["facts-order-a"]["expect"]["digest"] != cases["facts-order-b"]["expect"]["digest"]


def test_vectors_spot_checks_by_hand() -> None:
    cases = {case["name"]: case for case in _load_vectors()["cases"]}
    empty = cases["empty-context-no-args"]["expect"]
    assert empty["digest"] == "blake3:" + blake3(EMPTY_DOCUMENT).hexdigest()
    one_fact = cases["only-facts-one"]["expect"]
    assert one_fact["tail_text"] == "## Current context\n\n- date: 2026-11-30\n\n" + CLOSING
    document = b'{"facts":[["date","2026-11-30"]],"head":[],"tail":[],"v":1}'
    assert one_fact["digest"] == "blake3:" + blake3(document).hexdigest()
    assert cases["trailing-info-separators-kept"]["expect"]["facts"] == [
        ["a", "x\u001c"],
        ["b", "x\u001d"],
        ["c", "x\u001e"],
        ["d", "x\u001f"],
    ]
    assert cases["error-bare-pair"]["error"] == {
        "kind": "bare-pair",
        "type_error": True,
        "arg": "facts",
        "index": None,
    }


# --------------------------------------------------------------------------
# Canonical JSON
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, b"null"),
        (True, b"true"),
        (False, b"false"),
        (0, b"0"),
        (-7, b"-7"),
        (2**53 - 1, b"9007199254740991"),
        (-(2**53 - 1), b"-9007199254740991"),
        ("", b'""'),
        ([], b"[]"),
        ((), b"[]"),
        ({}, b"{}"),
        ([1, True, None, "a"], b'[1,true,null,"a"]'),
        ((1, (2, [3])), b"[1,[2,[3]]]"),
        ({"b": [1, {"a": None}], "a": "x"}, b'{"a":"x","b":[1,{"a":null}]}'),
        ({"a": 1, "A": 2, "aa": 3, "": 4}, b'{"":4,"A":2,"a":1,"aa":3}'),
    ],
)
def test_jcs_basic(value: object, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (0.5, "0.5"),
        (123.456, "123.456"),
        (0.1 + 0.2, "0.30000000000000004"),
        (0.001234, "0.001234"),
        (1e-6, "0.000001"),  # n = -5: still positional
        (1e-7, "1e-7"),  # n = -6: exponent form
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (1e20, "100000000000000000000"),  # n = 21: still positional
        (1e21, "1e+21"),  # n = 22: exponent form
        (1.2345678901234568e20, "123456789012345680000"),
        (1.5e21, "1.5e+21"),
        (9007199254740992.0, "9007199254740992"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (333333333.33333329, "333333333.3333333"),
        (1e30, "1e+30"),
        (4.50, "4.5"),
        (2e-3, "0.002"),
        (1e-27, "1e-27"),
        (-1e-7, "-1e-7"),
    ],
)
def test_jcs_numbers(value: float, expected: str) -> None:
    assert canonical_json(value) == expected.encode("ascii")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"', r'"\""'),
        ("\\", r'"\\"'),
        ("\b\t\n\f\r", r'"\b\t\n\f\r"'),
        ("\u0000\u0001\u000b\u001b\u001f", r'"\u0000\u0001\u000b\u001b\u001f"'),
        ("/", '"/"'),
        ("\u007f\u0080\u0085\u2028\u2029", '"\u007f\u0080\u0085\u2028\u2029"'),
        ("\u00e9\u65e5\U0001f600", '"\u00e9\u65e5\U0001f600"'),
    ],
)
def test_jcs_strings(value: str, expected: str) -> None:
    assert canonical_json(value) == expected.encode("utf-8")


def test_jcs_rfc8785_example() -> None:
    # RFC 8785 section 3.2.2: parsed input and canonical output.
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],'
        '"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_json(value) == expected.encode("utf-8")


def test_jcs_rfc8785_key_sorting() -> None:
    # RFC 8785 section 3.2.3: keys sort by UTF-16 code units, so the astral
    # emoji (surrogates D83D DE00) sorts before U+FB33.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    expected = (
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    )
    assert canonical_json(value) == expected.encode("utf-8")
    assert canonical_json(value).startswith(b'{"\\r":"Carriage Return","1":"One"')


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        2**53,
        -(2**53),
        10**30,
        b"bytes",
        bytearray(b"x"),
        {1, 2},
        frozenset(),
        Decimal("1.5"),
        datetime.date(2026, 11, 30),
        object(),
        {1: "a"},
        {("a",): "b"},
        "\ud800",
        "a\udfffb",
        {"\udc00": 1},
        [1, [2, [math.nan]]],
        {"a": {"b": b""}},
    ],
)
def test_jcs_refuses(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        canonical_json(value)


def test_digests() -> None:
    # Published BLAKE3 test values: the empty input and "abc".
    assert (
        digest_bytes(b"")
        == "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    )
    assert (
        digest_bytes(b"abc")
        == "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    )
    # digest(value) hashes the canonical bytes, e.g. {"b":1,"a":[]} -> {"a":[],"b":1}.
    assert digest({"b": 1, "a": []}) == "blake3:" + blake3(b'{"a":[],"b":1}').hexdigest()
    assert digest("x") == digest_bytes(b'"x"')


# --------------------------------------------------------------------------
# RunContext: character classes
# --------------------------------------------------------------------------


def test_white_space_set_is_the_unicode_property() -> None:
    expected = {
        0x09,
        0x0A,
        0x0B,
        0x0C,
        0x0D,
        0x20,
        0x85,
        0xA0,
        0x1680,
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    }
    expected |= set(range(0x2000, 0x200B))
    assert {ord(char) for char in WHITE_SPACE} == expected
    # Python's str.isspace differs from White_Space exactly by U+001C..U+001F.
    python_space = {code for code in range(0x110000) if chr(code).isspace()}
    assert python_space - expected == {0x1C, 0x1D, 0x1E, 0x1F}
    assert expected - python_space == set()


def test_is_control_is_category_cc_plus_separators() -> None:
    for code in range(0x110000):
        char = chr(code)
        expected = unicodedata.category(char) == "Cc" or code in (0x2028, 0x2029)
        assert is_control(char) == expected, hex(code)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("abc", "abc"),
        ("  abc", "  abc"),
        ("abc  \t\n", "abc"),
        ("a\r\nb\r\n", "a\r\nb"),
        ("x\u00a0\u3000\u2028\u2029\u0085\u1680\u2000\u200a\u202f\u205f\u000b\u000c", "x"),
        ("x\u001c", "x\u001c"),
        ("x\u001f \t", "x\u001f"),
        ("x \u001f", "x \u001f"),
        ("x\u200b", "x\u200b"),
        ("x\ufeff ", "x\ufeff"),
        (" \t\n\u3000", ""),
        ("a\n\nb", "a\n\nb"),
    ],
)
def test_strip_trailing_white_space(text: str, expected: str) -> None:
    assert strip_trailing_white_space(text) == expected


# --------------------------------------------------------------------------
# RunContext: hand-computed outputs
# --------------------------------------------------------------------------


def test_closing_text() -> None:
    assert CLOSING_TEXT == CLOSING


def test_empty_context() -> None:
    for context in (
        RunContext(),
        RunContext(head_sections=None, facts=None, tail_sections=None),
        RunContext(head_sections=[], facts=(), tail_sections=[]),
    ):
        assert context.head_text is None
        assert context.tail_text is None
        assert context.facts == []
        assert context.head_sections == []
        assert context.tail_sections == []
        assert context.sections == []
        assert context.digest == "blake3:" + blake3(EMPTY_DOCUMENT).hexdigest()


def test_full_context_by_hand() -> None:
    context = RunContext(
        head_sections=[("identity", "You are X.\n"), ("style", None), ("empty", "  ")],
        facts=(("date", "2026-11-30 "), ("branch", None), ("flag", "\t"), ("note", "a\nb")),
        tail_sections=[["todo", "Do it.\u00a0"]],
    )
    assert context.head_text == "You are X."
    assert context.tail_text == (
        "## Current context\n\n- date: 2026-11-30\n- flag:\n- note: a\nb\n\nDo it.\n\n" + CLOSING
    )
    assert context.facts == [("date", "2026-11-30"), ("flag", ""), ("note", "a\nb")]
    assert context.head_sections == [("identity", "You are X.")]
    assert context.tail_sections == [("todo", "Do it.")]
    document = (
        b'{"facts":[["date","2026-11-30"],["flag",""],["note","a\\nb"]],'
        b'"head":[["identity","You are X."]],'
        b'"tail":[["todo","Do it."]],"v":1}'
    )
    assert context.digest == "blake3:" + blake3(document).hexdigest()
    assert context.sections == [
        (
            "head",
            "identity",
            "You are X.",
            "blake3:" + blake3(b'{"name":"identity","text":"You are X."}').hexdigest(),
        ),
        (
            "tail",
            "todo",
            "Do it.",
            "blake3:" + blake3(b'{"name":"todo","text":"Do it."}').hexdigest(),
        ),
    ]


def test_only_head_sections_by_hand() -> None:
    context = RunContext(head_sections=[("a", "A."), ("b", "  B.\n\n")])
    assert context.head_text == "A.\n\n  B."
    assert context.tail_text is None


def test_only_tail_sections_by_hand() -> None:
    context = RunContext(tail_sections=[("a", "A."), ("b", "B.")])
    assert context.head_text is None
    assert context.tail_text == "## Current context\n\nA.\n\nB.\n\n" + CLOSING


def test_only_facts_dropped_gives_no_tail() -> None:
    context = RunContext(facts=[("a", None)], tail_sections=[("t", " \n")])
    assert context.tail_text is None
    assert context.digest == RunContext().digest


def test_escapes_in_digest_document() -> None:
    context = RunContext(facts=[("q", 'a"b\\c\u0001\u007f')])
    document = '{"facts":[["q","a\\"b\\\\c\\u0001\u007f"]],"head":[],"tail":[],"v":1}'
    assert context.digest == "blake3:" + blake3(document.encode("utf-8")).hexdigest()
    assert context.tail_text == '## Current context\n\n- q: a"b\\c\u0001\u007f\n\n' + CLOSING


def test_astral_name_sorting_irrelevant_order_kept() -> None:
    # Entries keep the caller's order even where JCS would sort object keys.
    context = RunContext(facts=[("\ufb33", "1"), ("\U0001f600", "2")])
    assert context.facts == [("\ufb33", "1"), ("\U0001f600", "2")]
    document = '{"facts":[["\ufb33","1"],["\U0001f600","2"]],"head":[],"tail":[],"v":1}'
    assert context.digest == "blake3:" + blake3(document.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------
# RunContext: errors
# --------------------------------------------------------------------------


def _error(**kwargs: object) -> tuple[str, bool, str, int | None]:
    with pytest.raises(RunContextRefError) as info:
        RunContext(**kwargs)
    error = info.value
    return error.kind, error.is_type_error, error.arg, error.index


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"facts": {"date": "x"}}, ("mapping", True, "facts", None)),
        ({"facts": {("date", "x")}}, ("unordered", True, "facts", None)),
        ({"head_sections": frozenset()}, ("unordered", True, "head_sections", None)),
        ({"tail_sections": {"a": "b"}.items()}, ("unordered", True, "tail_sections", None)),
        ({"facts": "date"}, ("not-a-sequence", True, "facts", None)),
        ({"facts": b"ab"}, ("not-a-sequence", True, "facts", None)),
        ({"facts": 5}, ("not-a-sequence", True, "facts", None)),
        ({"facts": iter([("a", "b")])}, ("not-a-sequence", True, "facts", None)),
        ({"facts": ("date", "x")}, ("bare-pair", True, "facts", None)),
        ({"facts": ("date", None)}, ("bare-pair", True, "facts", None)),
        ({"facts": [("a", "b"), ("c", "d", "e")]}, ("not-a-pair", True, "facts", 1)),
        ({"facts": ["ab"]}, ("not-a-pair", True, "facts", 0)),
        ({"facts": [("a", "b"), {"c", "d"}]}, ("not-a-pair", True, "facts", 1)),
        ({"facts": [(b"a", "b")]}, ("name-type", True, "facts", 0)),
        ({"facts": [("a", b"b")]}, ("value-type", True, "facts", 0)),
        ({"facts": [("", None)]}, ("empty-name", False, "facts", 0)),
        ({"facts": [("a\u0085", "x")]}, ("name-control", False, "facts", 0)),
        ({"facts": [("a\u2029", "x")]}, ("name-control", False, "facts", 0)),
        ({"facts": [("\u3000a", "x")]}, ("name-whitespace", False, "facts", 0)),
        ({"facts": [("a\u202f", "x")]}, ("name-whitespace", False, "facts", 0)),
        ({"facts": [("a", None), ("a", "x")]}, ("duplicate-name", False, "facts", 1)),
        (
            {"head_sections": [("s", "")], "tail_sections": [("t", "x"), ("s", "y")]},
            ("duplicate-name", False, "tail_sections", 1),
        ),
        # check order
        (
            {"head_sections": [("a", 1)], "facts": {"x": "y"}},
            ("value-type", True, "head_sections", 0),
        ),
        ({"facts": {"x": "y"}, "tail_sections": {1, 2}}, ("mapping", True, "facts", None)),
        ({"facts": [(1, 2)]}, ("name-type", True, "facts", 0)),
        ({"facts": [("\n ", "x")]}, ("name-control", False, "facts", 0)),
        ({"facts": [("a", "x"), ("a", "y"), ("", "z")]}, ("duplicate-name", False, "facts", 1)),
    ],
)
def test_errors(kwargs: dict[str, object], expected: tuple[str, bool, str, int | None]) -> None:
    assert _error(**kwargs) == expected


def test_error_is_an_exception_with_attributes() -> None:
    error = RunContextRefError("mapping", True, "facts", None)
    assert isinstance(error, Exception)
    assert (error.kind, error.is_type_error, error.arg, error.index) == (
        "mapping",
        True,
        "facts",
        None,
    )


def test_fact_and_section_namespaces_are_separate() -> None:
    context = RunContext(head_sections=[("x", "H")], facts=[("x", "F")], tail_sections=[("y", "T")])
    assert context.facts == [("x", "F")]
    assert [name for _, name, _, _ in context.sections] == ["x", "y"]


def test_names_are_not_rewritten() -> None:
    context = RunContext(facts=[("a  b", "v")])
    assert context.facts == [("a  b", "v")]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"facts": [("a", "\ud800")]},
        {"facts": [("\udc00", None)]},
        {"head_sections": [("s", "x\udfff")]},
    ],
)
def test_lone_surrogates_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(RunContextRefError) as info:
        RunContext(**kwargs)
    assert (info.value.kind, info.value.is_type_error) == ("not-text", False)


def test_types_are_checked_before_text() -> None:
    # A name that is not text and a value of the wrong type: the type error wins.
    with pytest.raises(RunContextRefError) as info:
        RunContext(facts=[("\ud800", 3)])
    assert (info.value.kind, info.value.index) == ("value-type", 0)
    # Both not text: the name is reported (same kind, same place).
    with pytest.raises(RunContextRefError) as info:
        RunContext(facts=[("\ud800", "\udc00")])
    assert info.value.kind == "not-text"
    # Text before the name rules: an empty-looking name with a lone surrogate value.
    with pytest.raises(RunContextRefError) as info:
        RunContext(facts=[("", "\ud800")])
    assert info.value.kind == "not-text"


def test_jcs_deep_nesting() -> None:
    nested_list: object = []
    nested_dict: object = {}
    for _ in range(511):
        nested_list = [nested_list]
        nested_dict = {"a": nested_dict}
    assert canonical_json(nested_list) == b"[" * 512 + b"]" * 512
    assert canonical_json(nested_dict) == b'{"a":' * 511 + b"{}" + b"}" * 511
