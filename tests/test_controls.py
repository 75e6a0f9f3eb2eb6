"""The printable-ASCII shortcut of runcontext._controls never hides an invisible or control
character, and `visible` / `json_text` are the patterns."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

import runcontext._controls as controls
from runcontext.cli._terminal import _escape, json_text, visible

SAMPLES = "\n\t\r\x1b\u202e\x9b\u200b\ufe0f\U000e0049\U000e0020\U000e007f\U000e0100"


def test_every_member_is_seen_by_the_shortcut() -> None:
    members = [chr(code) for first, last, _ in controls.RANGES for code in range(first, last + 1)]
    assert all(controls.holds_invisible(f"a{c}b\n") for c in members)
    assert not controls.holds_invisible("plain ASCII\n\tok ~")


@given(st.text(st.characters(codec="utf-8") | st.sampled_from(SAMPLES)))
def test_visible_and_json_text_are_the_patterns(text: str) -> None:
    assert visible(text) == re.sub(controls.SOURCES["INVISIBLE"], _escape, text)
    escaped = json_text(text)
    assert re.search(controls.SOURCES["INVISIBLE_JSON_LEAVES"], escaped) is None
    assert re.search(controls.SOURCES["INVISIBLE"], visible(text).replace("\n", "")) is None
    holds = re.search(controls.SOURCES["INVISIBLE"], text) is not None
    assert controls.holds_invisible(text) == holds


def test_the_patterns_are_the_sources() -> None:
    for name, source in controls.SOURCES.items():
        pattern = getattr(controls, name)
        assert isinstance(pattern, re.Pattern) and pattern.pattern == source
