"""The set of characters shown as escapes and reported (runcontext._controls.RANGES) is the
one docs/PROVIDERS.md lists, and is Unicode's: every control and format character and every
Default_Ignorable_Code_Point, checked against an independent implementation of the Unicode
properties (the ``regex`` package) and against ``unicodedata``."""

from __future__ import annotations

import itertools
import re
import sys
import unicodedata
from pathlib import Path

import regex

from runcontext._controls import RANGES, SOURCES

DOC = Path(__file__).resolve().parents[1] / "docs" / "PROVIDERS.md"
SECTION = "### Invisible and control characters"


def _members() -> set[int]:
    return {code for first, last, _ in RANGES for code in range(first, last + 1)}


def _doc_ranges() -> list[tuple[int, int, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ")]
    row = r"^\| U\+([0-9A-F]{4,6})(?:–U\+([0-9A-F]{4,6}))? \| (.+) \|$"
    return [
        (int(first, 16), int(last or first, 16), what)
        for first, last, what in re.findall(row, section, re.M)
    ]


def test_the_doc_lists_exactly_the_ranges_of_the_code() -> None:
    assert _doc_ranges() == list(RANGES)


def test_the_ranges_are_in_order_and_do_not_overlap() -> None:
    for (_, last, _), (first, _, _) in itertools.pairwise(RANGES):
        assert last < first
    # holds_invisible splits the set at U+FFFF (one pattern below, one above): none straddles.
    assert not [(first, last) for first, last, _ in RANGES if first <= 0xFFFF < last]


def test_the_set_is_controls_format_characters_and_default_ignorables() -> None:
    def having(prop: str) -> set[int]:
        pattern = regex.compile(rf"\p{{{prop}}}")
        return {code for code in range(sys.maxunicode + 1) if pattern.match(chr(code))}

    ignorable = having("Default_Ignorable_Code_Point")
    assert len(ignorable) == 4174  # Unicode 16.0's DerivedCoreProperties.txt
    expected = (having("Cc") - {ord("\n"), ord("\t")}) | having("Cf") | ignorable
    assert _members() == expected


def test_unicodedata_agrees_on_controls_and_format_characters() -> None:
    members = _members()
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code)) in ("Cc", "Cf") and chr(code) not in "\n\t":
            assert code in members, f"U+{code:04X}"


def test_the_pattern_matches_the_set_and_tag_runs() -> None:
    pattern = re.compile(SOURCES["INVISIBLE"])
    matched = {code for code in range(sys.maxunicode + 1) if pattern.fullmatch(chr(code))}
    assert matched == _members()
    tags = "".join(chr(0xE0000 + ord(c)) for c in "IGNORE ME")
    assert [m.group() for m in pattern.finditer(f"a{tags}\U000e007fb")] == [tags, "\U000e007f"]
    json_leaves = re.compile(SOURCES["INVISIBLE_JSON_LEAVES"])
    assert {code for code in matched if json_leaves.fullmatch(chr(code))} == {
        code for code in matched if code >= 0x7F
    }
