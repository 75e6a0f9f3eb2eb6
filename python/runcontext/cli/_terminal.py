"""Text for a person's terminal: every control character made visible.

A hostile repository or transcript can put ESC, CR or OSC sequences in an AGENTS.md, a section
name or a message: printed raw, they could hide text from the person reviewing what an agent
is told, rewrite the line above, or set the clipboard (OSC 52). Human output shows every C0
and C1 control except newline and tab, DEL, and the Unicode bidirectional controls (which can
reorder what is shown, as in "Trojan Source") as an escape, the way ``git`` and ``less`` do:
``\\x1b``, ``\\x9b``, ``\\u202e``. The text given to the model and JSON output are unchanged
(JSON output escapes the same characters as ``\\u`` escapes, which decode to the same text).
"""

from __future__ import annotations

import runcontext._controls as _controls
from runcontext._controls import may_hold_controls

TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable

__all__ = ["JSONLines", "json_array", "json_text", "visible"]


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but ``\\n`` and ``\\t`` shown as an escape."""
    if not may_hold_controls(text):  # the common case: nothing to escape, nothing compiled
        return text
    return _controls.CONTROLS.sub(_escape, text)


def json_text(value: object) -> str:
    """Indented JSON that keeps non-ASCII text readable but escapes what a terminal obeys."""
    import json  # only for JSON output: `runcontext show` prints text without it

    return _json_escape(json.dumps(value, ensure_ascii=False, indent=2))


class JSONLines:
    """Compact JSON, one value a line, escaped as :func:`json_text` escapes, at the C encoder's
    speed (``indent=`` makes ``json`` run its pure-Python encoder, the most of
    ``runcontext log --json`` of a long transcript once). :meth:`string` is the piece for a
    caller that writes the rest of a line itself."""

    __slots__ = ("_encode", "_encode_string")

    def __init__(self) -> None:
        import json
        from json.encoder import encode_basestring  # the C function JSONEncoder uses for str

        self._encode = json.JSONEncoder(ensure_ascii=False).encode
        self._encode_string = encode_basestring

    def line(self, value: object) -> str:
        """``value`` as JSON on one line."""
        return _json_escape(self._encode(value))

    def string(self, text: str) -> str:
        """``line(text)`` for a string, without the encoder's set-up."""
        return _json_escape(self._encode_string(text))


def json_array(lines: Iterable[str]) -> str:
    """A JSON array of already encoded ``lines`` (:meth:`JSONLines.line`), and a newline."""
    body = ",\n".join(lines)
    return f"[\n{body}\n]\n" if body else "[]\n"


def _json_escape(text: str) -> str:
    if not may_hold_controls(text):
        return text
    return _controls.CONTROLS_JSON_LEAVES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
