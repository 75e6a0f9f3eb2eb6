"""Text for a person's terminal: every invisible or control character made visible.

A hostile repository or transcript can put ESC, CR or OSC sequences in an AGENTS.md, a section
name or a message: printed raw, they could hide text from the person reviewing what an agent
is told, rewrite the line above, or set the clipboard (OSC 52). Characters a terminal does not
draw at all (tag characters, zero-width characters, variation selectors) can carry a whole
sentence a model reads and the person never sees, and bidi controls reorder what is shown
("Trojan Source"). Human output shows every character of :data:`runcontext._controls.RANGES`
as an escape: C0 and C1 controls and DEL as ``\\x1b``, the way ``git`` and ``less`` do, every
other one as ``⟨U+200B⟩``, and a run of tag characters spelling ASCII decoded, as
``⟨tags: "IGNORE THE USER"⟩``. The text given to the model and JSON output are unchanged
(JSON output escapes the same characters as ``\\u`` escapes, which decode to the same text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from json.encoder import encode_basestring  # the C function JSONEncoder uses for str

import runcontext._controls as _controls
from runcontext._controls import TAGS, decode_tags, holds_invisible

__all__ = ["JSONLines", "escape", "json_array", "json_text", "visible"]


def escape(found: str) -> str:
    """How a terminal is shown ``found``: one character of the set, or a run of tags."""
    code = ord(found[0])
    if TAGS[0] <= code <= TAGS[1]:
        return f'⟨tags: "{decode_tags(found)}"⟩'
    return f"\\x{code:02x}" if code < 0xA0 else f"⟨U+{code:04X}⟩"


def _escape(match: re.Match[str]) -> str:
    return escape(match.group())


def visible(text: str) -> str:
    """``text`` with every invisible or control character but ``\\n`` and ``\\t`` shown as an
    escape (see the module's docstring)."""
    if not holds_invisible(text):  # the common case: nothing to escape, nothing compiled
        return text
    return _controls.pattern_for(text, tag_runs=True).sub(_escape, text)


def json_text(value: object) -> str:
    """Indented JSON that keeps non-ASCII text readable but escapes what a terminal obeys."""
    return _json_escape(json.dumps(value, ensure_ascii=False, indent=2))


class JSONLines:
    """Compact JSON, one value a line, escaped as :func:`json_text` escapes, at the C encoder's
    speed (``indent=`` makes ``json`` run its pure-Python encoder, the most of
    ``runcontext log --json`` of a long transcript once). :meth:`string` is the piece for a
    caller that writes the rest of a line itself."""

    __slots__ = ("_encode", "_encode_string")

    def __init__(self) -> None:
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


def _json_unicode(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_escape(text: str) -> str:
    if not holds_invisible(text):
        return text
    return _controls.INVISIBLE_JSON_LEAVES.sub(_json_unicode, text)
