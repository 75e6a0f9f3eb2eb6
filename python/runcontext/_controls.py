"""The characters a terminal obeys rather than shows: one definition for the CLI, which makes
them visible, and for the instructions provider, which reports them.

C0 controls but newline and tab (carriage return included: alone it rewrites the line), DEL,
C1 controls, and the Unicode bidirectional controls that reorder what is displayed.

Every one of them is a format (Cf) or control (Cc) character, which ``str.isprintable``
refuses: text that is printable once its newlines and tabs are taken out has none, and
:func:`may_hold_controls` says so at C speed, for any script. The patterns, whose compiling
was 5 M of the instructions `runcontext show` costs to start (issue 13), are compiled when first
used, which such text never needs.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: `runcontext show` starts without importing typing
if TYPE_CHECKING:
    # Compiled on first use (see __getattr__ below).
    CONTROLS: re.Pattern[str]
    CONTROLS_JSON_LEAVES: re.Pattern[str]

__all__ = ["CONTROLS", "CONTROLS_JSON_LEAVES", "SOURCES", "may_hold_controls"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
SOURCES = {
    "CONTROLS": f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]",
    # The subset json.dumps(ensure_ascii=False) leaves raw (it escapes C0 itself).
    "CONTROLS_JSON_LEAVES": f"[\x7f-\x9f{_BIDI}]",
}


def may_hold_controls(text: str) -> bool:
    """``False`` when ``text`` holds none of :data:`CONTROLS` (``True`` does not say it does:
    a no-break space or a zero-width joiner is not printable either)."""
    return not text.replace("\n", "").replace("\t", "").isprintable()


if not TYPE_CHECKING:

    def __getattr__(name: str) -> re.Pattern[str]:
        source = SOURCES.get(name)
        if source is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        pattern = globals()[name] = re.compile(source)  # later lookups skip __getattr__
        return pattern
