"""Reference canonical JSON: RFC 8785 (JSON Canonicalization Scheme).

``canonical_json(value)`` serialises a Python value to the canonical UTF-8
bytes; ``digest(value)`` and ``digest_bytes(data)`` give ``"blake3:"`` followed
by the lowercase hex BLAKE3-256 of those bytes.

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
