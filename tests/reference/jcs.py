"""Reference canonical JSON: RFC 8785 (JSON Canonicalization Scheme).

``canonical_json(value)`` serialises a Python value to the canonical UTF-8
bytes; ``digest(value)`` and ``digest_bytes(data)`` give ``"blake3:"`` followed
by the lowercase hex BLAKE3-256 of those bytes, and ``keyed_digest(key, value)`` and
``keyed_digest_bytes(key, data)`` give ``"blake3-keyed:"`` followed by the hex of
BLAKE3-256 in keyed mode with the 32-byte ``key``, over the same bytes.

Accepted Python values:

* ``dict`` with ``str`` keys  -> object, members sorted by UTF-16 code units
* ``list`` / ``tuple``        -> array
* ``str``                     -> string (no lone surrogates)
* ``True`` / ``False`` / ``None`` -> ``true`` / ``false`` / ``null``
* ``int`` within +/-(2**53 - 1) -> integer
* finite ``float``            -> ECMAScript ``Number.prototype.toString``

Anything else raises ``TypeError`` (wrong type) or ``ValueError`` (right type,
unrepresentable value).
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal

from blake3 import blake3

MAX_SAFE_INTEGER = 2**53 - 1

# Short escapes of RFC 8785 / ECMAScript JSON.stringify; every other
# character below U+0020 is written as \u00xx with lowercase hex.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def canonical_json(value: object) -> bytes:
    """Return the RFC 8785 canonical JSON encoding of ``value`` as UTF-8."""
    return _serialize(value).encode("utf-8")


def digest(value: object) -> str:
    """Return ``"blake3:" + hex(BLAKE3-256(canonical_json(value)))``."""
    return digest_bytes(canonical_json(value))


def digest_bytes(data: bytes) -> str:
    """Return ``"blake3:" + hex(BLAKE3-256(data))``."""
    return "blake3:" + blake3(data).hexdigest()


def keyed_digest(key: bytes, value: object) -> str:
    """Return ``"blake3-keyed:" + hex(BLAKE3-256-keyed(key, canonical_json(value)))``."""
    return keyed_digest_bytes(key, canonical_json(value))


def keyed_digest_bytes(key: bytes, data: bytes) -> str:
    """Return ``"blake3-keyed:" + hex(BLAKE3-256-keyed(key, data))``; ``key`` is 32 bytes."""
    if type(key) is not bytes or len(key) != 32:
        raise ValueError("a key is exactly 32 bytes")
    return "blake3-keyed:" + blake3(data, key=key).hexdigest()


def _serialize(value: object) -> str:
    # bool is a subclass of int, so it must be tested first.
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return _serialize_int(value)
    if isinstance(value, float):
        return _serialize_float(value)
    if isinstance(value, str):
        return _serialize_string(value)
    # Arrays and objects are handled inline, with plain loops, so that each
    # nesting level costs a single Python stack frame (documents nested a few
    # hundred levels deep must still work).
    if isinstance(value, (list, tuple)):
        items: list[str] = []
        for item in value:
            items.append(_serialize(item))
        return "[" + ",".join(items) + "]"
    if isinstance(value, dict):
        members: list[str] = []
        for key in _sorted_keys(value):
            members.append(_serialize_string(key) + ":" + _serialize(value[key]))
        return "{" + ",".join(members) + "}"
    raise TypeError(f"cannot canonicalise a value of type {type(value).__name__}")


def _serialize_int(value: int) -> str:
    number = int(value)  # drop any int subclass behaviour (e.g. IntEnum.__str__)
    if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        raise ValueError(f"integer {number} is outside +/-(2**53 - 1)")
    return str(number)


def _sorted_keys(value: dict[object, object]) -> list[str]:
    """Check that every key is a str and return them in canonical order."""
    keys: list[str] = []
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"object key must be str, not {type(key).__name__}")
        _check_no_lone_surrogate(key)
        keys.append(key)
    # Sort by UTF-16 code units. Big-endian bytes compare in the same order
    # as the sequence of 16-bit code units.
    keys.sort(key=lambda k: k.encode("utf-16-be"))
    return keys


def _check_no_lone_surrogate(text: str) -> None:
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError(f"lone surrogate U+{ord(char):04X} in string")


def _serialize_string(text: str) -> str:
    _check_no_lone_surrogate(text)
    parts = ['"']
    for char in text:
        if char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif ord(char) < 0x20:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


def _serialize_float(value: float) -> str:
    """ECMAScript Number.prototype.toString for a finite double."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{value!r} has no JSON representation")
    if value == 0.0:  # both 0.0 and -0.0
        return "0"
    sign = "-" if value < 0 else ""
    digits, n = _shortest_digits(abs(value))
    return sign + _es_layout(digits, n)


def _shortest_digits(value: float) -> tuple[str, int]:
    """Split a positive finite float into (digits, n).

    ``digits`` is the shortest round-trip decimal digit string without leading
    or trailing zeros (as produced by ``repr``), and ``n`` is the decimal
    exponent such that ``value == 0.digits * 10**n``, i.e.
    ``value == int(digits) * 10**(n - len(digits))``.
    """
    text = repr(value)  # e.g. "123.45", "1e+16", "1.5e-07", "0.001"
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text) if exponent_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    # value == int(int_part + frac_part) * 10**(exponent - len(frac_part))
    all_digits = int_part + frac_part
    power = exponent - len(frac_part)
    stripped = all_digits.lstrip("0")
    trimmed = stripped.rstrip("0")
    power += len(stripped) - len(trimmed)
    return trimmed, power + len(trimmed)


def _es_layout(digits: str, n: int) -> str:
    """Lay out ``digits`` x 10**(n - k) the way ECMAScript does."""
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    exponent = n - 1
    exponent_text = ("e+" if exponent >= 0 else "e-") + str(abs(exponent))
    if k == 1:
        return digits + exponent_text
    return digits[0] + "." + digits[1:] + exponent_text


# --- errors with kinds and paths ----------------------------------------------------------

MAX_DEPTH = 512


class CanonicalRefError(ValueError):
    """A refusal: ``kind`` is the rule (FORMAT.md section 1.6 or 1.7), ``path`` the JSON path
    of the value it is in; text errors also carry ``offset`` (UTF-8 bytes), ``line`` and
    ``column`` (code points, from 1)."""

    def __init__(
        self,
        kind: str,
        path: str,
        offset: int | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        where = path if offset is None else f"line {line}, column {column} (at {path})"
        super().__init__(f"{where}: {kind}")
        self.kind = kind
        self.path = path
        self.offset = offset
        self.line = line
        self.column = column


class CanonicalRefTypeError(CanonicalRefError, TypeError):
    """A refusal for a value of the wrong type (``non-string-key``, ``unsupported-type``)."""


_LETTERS = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LETTERS_DIGITS = _LETTERS | frozenset("0123456789")


def _is_identifier(key: str) -> bool:
    """ASCII only: a letter or ``_``, then letters, digits and ``_``."""
    return key != "" and key[0] in _LETTERS and all(c in _LETTERS_DIGITS for c in key)


def path_text(segments: list[int | str]) -> str:
    """``$``, then ``[i]`` per index and ``.key`` or ``["key"]`` per member name."""
    parts = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _is_identifier(segment):
            parts.append("." + segment)
        else:
            parts.append("[" + _serialize_string(segment) + "]")
    return "".join(parts)


def refusal(value: object) -> CanonicalRefError | None:
    """The refusal ``canonical_json(value)`` must raise, by FORMAT.md section 1.6, or None."""
    try:
        _check(value, [], 0)
    except CanonicalRefError as error:
        return error
    return None


def _lone(text: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def _check(value: object, path: list[int | str], depth: int) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(int(value)) > MAX_SAFE_INTEGER:
            raise CanonicalRefError("integer-out-of-range", path_text(path))
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CanonicalRefError("non-finite", path_text(path))
        return
    if isinstance(value, str):
        if _lone(value):
            raise CanonicalRefError("lone-surrogate", path_text(path))
        return
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        raise CanonicalRefError("too-deep", path_text(path))
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, [*path, index], depth + 1)
        return
    if isinstance(value, dict):
        # Keys in the dict's own order, before any value; then duplicates; then the values
        # in canonical member order.
        for key in value:
            if not isinstance(key, str):
                raise CanonicalRefTypeError("non-string-key", path_text(path))
            if _lone(key):
                raise CanonicalRefError("lone-surrogate", path_text(path))
        texts = sorted((str.__str__(k) for k in value), key=lambda k: k.encode("utf-16-be"))
        if len(set(texts)) != len(texts):
            raise CanonicalRefError("duplicate-key", path_text(path))
        for key in sorted(value, key=lambda k: str.__str__(k).encode("utf-16-be")):
            _check(value[key], [*path, str.__str__(key)], depth + 1)
        return
    raise CanonicalRefTypeError("unsupported-type", path_text(path))


# --- JSON text (FORMAT.md section 1.7) ----------------------------------------------------

_WHITESPACE = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = "0123456789abcdefABCDEF"


def canonicalize_text(data: bytes) -> bytes:
    """Canonical JSON of a JSON text, or the :class:`CanonicalRefError` FORMAT.md § 1.7 gives:
    the first error in the text (encoding before grammar), located at the first character
    that cannot continue a JSON text, or at the start of the token a semantic rule refuses."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        prefix = data[: error.start].decode("utf-8")
        raise _TextReader(prefix).error("invalid-utf8", len(prefix), []) from None
    reader = _TextReader(text)
    if text.startswith("\ufeff"):
        raise reader.error("bom", 0, [])
    # Two frames per nesting level, 512 levels deep.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH + 200))
    try:
        value = reader.value([], 0)
    finally:
        sys.setrecursionlimit(limit)
    reader.skip()
    if reader.i < len(text):
        raise reader.error("trailing", reader.i, [])
    return canonical_json(value)


class _TextReader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, kind: str, at: int, path: list[int | str]) -> CanonicalRefError:
        before = self.text[:at]
        line_start = before.rfind("\n") + 1
        return CanonicalRefError(
            kind,
            path_text(path),
            offset=len(before.encode("utf-8")),
            line=before.count("\n") + 1,
            column=at - line_start + 1,
        )

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def skip(self) -> None:
        while self.peek() != "" and self.peek() in _WHITESPACE:
            self.i += 1

    def value(self, path: list[int | str], depth: int) -> object:
        self.skip()
        c = self.peek()
        if c in ("[", "{"):
            if depth >= MAX_DEPTH:
                raise self.error("too-deep", self.i, path)
            self.i += 1
            return self.array(path, depth) if c == "[" else self.object(path, depth)
        if c == '"':
            return self.string(path)
        if c != "" and c in "-0123456789":
            return self.number(path)
        for word, result in (("true", True), ("false", False), ("null", None)):
            if c == word[0]:
                for expected in word:
                    if self.peek() != expected:
                        raise self.error("syntax", self.i, path)
                    self.i += 1
                return result
        raise self.error("syntax", self.i, path)

    def array(self, path: list[int | str], depth: int) -> list[object]:
        items: list[object] = []
        self.skip()
        if self.peek() == "]":
            self.i += 1
            return items
        while True:
            items.append(self.value([*path, len(items)], depth + 1))
            self.skip()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() == "]":
                self.i += 1
                return items
            else:
                raise self.error("syntax", self.i, path)

    def object(self, path: list[int | str], depth: int) -> dict[str, object]:
        members: dict[str, object] = {}
        self.skip()
        if self.peek() == "}":
            self.i += 1
            return members
        while True:
            self.skip()
            if self.peek() != '"':
                raise self.error("syntax", self.i, path)
            start = self.i
            name = self.string(path)
            if name in members:
                raise self.error("duplicate-key", start, path)
            self.skip()
            if self.peek() != ":":
                raise self.error("syntax", self.i, path)
            self.i += 1
            members[name] = self.value([*path, name], depth + 1)
            self.skip()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() == "}":
                self.i += 1
                return members
            else:
                raise self.error("syntax", self.i, path)

    def hex4(self, path: list[int | str]) -> int:
        for _ in range(4):
            if self.peek() == "" or self.peek() not in _HEX:
                raise self.error("syntax", self.i, path)
            self.i += 1
        return int(self.text[self.i - 4 : self.i], 16)

    def string(self, path: list[int | str]) -> str:
        self.i += 1  # the opening quote
        out: list[str] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.error("syntax", self.i, path)
            if c == '"':
                self.i += 1
                return "".join(out)
            if ord(c) < 0x20:
                raise self.error("control-character", self.i, path)
            if c != "\\":
                out.append(c)
                self.i += 1
                continue
            escape = self.i
            self.i += 1
            c = self.peek()
            if c != "" and c in _ESCAPES:
                out.append(_ESCAPES[c])
                self.i += 1
                continue
            if c != "u":
                raise self.error("syntax", self.i, path)
            self.i += 1
            unit = self.hex4(path)
            if 0xDC00 <= unit <= 0xDFFF:
                raise self.error("lone-surrogate", escape, path)
            if 0xD800 <= unit <= 0xDBFF:
                following = self.text[self.i : self.i + 6]
                low = following[2:]
                if not (
                    following.startswith("\\u")
                    and len(low) == 4
                    and all(d in _HEX for d in low)
                    and 0xDC00 <= int(low, 16) <= 0xDFFF
                ):
                    raise self.error("lone-surrogate", escape, path)
                self.i += 6
                unit = 0x10000 + ((unit - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            out.append(chr(unit))

    def digits(self) -> int:
        start = self.i
        while self.peek() != "" and self.peek() in "0123456789":
            self.i += 1
        return self.i - start

    def number(self, path: list[int | str]) -> object:
        start = self.i
        if self.peek() == "-":
            self.i += 1
        if self.peek() == "0":
            self.i += 1
        elif self.digits() == 0:
            raise self.error("syntax", self.i, path)
        integer = True
        if self.peek() == ".":
            integer = False
            self.i += 1
            if self.digits() == 0:
                raise self.error("syntax", self.i, path)
        if self.peek() in ("e", "E"):
            integer = False
            self.i += 1
            if self.peek() in ("+", "-"):
                self.i += 1
            if self.digits() == 0:
                raise self.error("syntax", self.i, path)
        if self.peek() != "" and self.peek() in "0123456789":
            raise self.error("syntax", self.i, path)  # a leading zero: 01
        literal = self.text[start : self.i]
        number = float(literal)  # correctly rounded; 1e-400 is 0.0, 1e400 is inf
        if math.isinf(number):
            raise self.error("number-overflow", start, path)
        # Only an integer literal can be out of range; comparing Decimals of a literal with a
        # huge exponent (1e-9007199254740993286) would raise InvalidOperation.
        if (
            integer
            and abs(int(literal)) > MAX_SAFE_INTEGER
            and Decimal(_serialize_float(number)) != Decimal(literal)
        ):
            raise self.error("integer-out-of-range", start, path)
        return number
