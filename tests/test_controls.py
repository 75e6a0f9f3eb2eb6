"""The printable-text shortcut of runcontext._controls never hides a control character."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

import runcontext._controls as controls
from runcontext.cli._terminal import _escape, json_text, visible


def test_every_control_is_unprintable() -> None:
    pattern = re.compile(controls.SOURCES["CONTROLS"])
    members = [chr(code) for code in range(0x110000) if pattern.fullmatch(chr(code))]
    assert len(members) == 30 + 33 + 3 + 5 + 4  # C0 but \n and \t, DEL and C1, bidi
    assert all(controls.may_hold_controls(f"a{c}b\n") for c in members)
    assert not controls.may_hold_controls("naïve — 日本語\n\tok")


@given(st.text(st.characters(codec="utf-8") | st.sampled_from("\n\t\r\x1b\u202e\x9b")))
def test_visible_and_json_text_are_the_patterns(text: str) -> None:
    assert visible(text) == re.sub(controls.SOURCES["CONTROLS"], _escape, text)
    escaped = json_text(text)
    assert re.search(controls.SOURCES["CONTROLS_JSON_LEAVES"], escaped) is None


def test_the_patterns_compile_on_first_use() -> None:
    assert controls.CONTROLS.pattern == controls.SOURCES["CONTROLS"]
    assert controls.CONTROLS is controls.CONTROLS  # compiled once
    code = (
        "import runcontext._controls as c\nfrom runcontext.cli._terminal import visible\n"
        "assert visible('plain\\ttext\\n') == 'plain\\ttext\\n'\n"
        "print(sorted(set(c.SOURCES) & set(vars(c))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout == "[]\n", result.stderr
