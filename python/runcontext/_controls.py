"""The characters a terminal obeys rather than shows: one definition for the CLI, which makes
them visible, and for the instructions provider, which reports them.

C0 controls but newline and tab (carriage return included: alone it rewrites the line), DEL,
C1 controls, and the Unicode bidirectional controls that reorder what is displayed.
"""

from __future__ import annotations

import re

__all__ = ["CONTROLS", "CONTROLS_JSON_LEAVES"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
# The subset json.dumps(ensure_ascii=False) leaves raw (it escapes C0 itself).
CONTROLS_JSON_LEAVES = re.compile(f"[\x7f-\x9f{_BIDI}]")
