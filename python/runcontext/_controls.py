"""The characters a reader does not see as written: one definition for the CLI, which shows
them as escapes, and for the instructions provider, which reports them.

:data:`RANGES` is the set (docs/PROVIDERS.md, *Invisible and control characters*, mirrors it
and says why each range is there): C0 controls but newline and tab (carriage return included:
alone it rewrites the line), DEL, C1 controls, every format (Cf) character, the bidirectional
controls among them, and every Default_Ignorable_Code_Point of Unicode 16.0's
DerivedCoreProperties.txt (tag characters, zero-width characters, variation selectors, Hangul
fillers and the reserved ranges a renderer must not draw either).

Text that is ASCII and printable once its newlines and tabs are taken out holds none of
them, and :func:`holds_invisible` says so at C speed, without a pattern.
"""

from __future__ import annotations

import re

__all__ = [
    "ASTRAL",
    "INVISIBLE",
    "INVISIBLE_ASTRAL",
    "INVISIBLE_BMP",
    "INVISIBLE_JSON_LEAVES",
    "INVISIBLE_ONE",
    "RANGES",
    "SOURCES",
    "TAGS",
    "TAG_OFFSET",
    "TAG_RUN",
    "decode_tags",
    "holds_invisible",
    "pattern_for",
    "what",
]

# (first, last, what it is): inclusive code point ranges, in order, none overlapping.
RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0000, 0x0008, "C0 controls"),
    (0x000B, 0x001F, "C0 controls"),
    (0x007F, 0x009F, "DEL and C1 controls"),
    (0x00AD, 0x00AD, "soft hyphen"),
    (0x034F, 0x034F, "combining grapheme joiner"),
    (0x0600, 0x0605, "Arabic number signs (Cf)"),
    (0x061C, 0x061C, "Arabic letter mark (bidi)"),
    (0x06DD, 0x06DD, "Arabic end of ayah (Cf)"),
    (0x070F, 0x070F, "Syriac abbreviation mark (Cf)"),
    (0x0890, 0x0891, "Arabic pound and piastre marks above (Cf)"),
    (0x08E2, 0x08E2, "Arabic disputed end of ayah (Cf)"),
    (0x115F, 0x1160, "Hangul choseong and jungseong fillers"),
    (0x17B4, 0x17B5, "Khmer inherent vowels"),
    (0x180B, 0x180F, "Mongolian variation selectors and vowel separator"),
    (
        0x200B,
        0x200F,
        "zero-width space, non-joiner, joiner; left-to-right, right-to-left marks",
    ),
    (0x202A, 0x202E, "bidi embeddings, pop and overrides"),
    (0x2060, 0x206F, "word joiner, invisible operators, bidi isolates, deprecated format controls"),
    (0x3164, 0x3164, "Hangul filler"),
    (0xFE00, 0xFE0F, "variation selectors 1-16"),
    (0xFEFF, 0xFEFF, "zero-width no-break space (byte order mark)"),
    (0xFFA0, 0xFFA0, "halfwidth Hangul filler"),
    (0xFFF0, 0xFFFB, "reserved default-ignorable; interlinear annotation controls (Cf)"),
    (0x110BD, 0x110BD, "Kaithi number sign (Cf)"),
    (0x110CD, 0x110CD, "Kaithi number sign above (Cf)"),
    (0x13430, 0x1343F, "Egyptian hieroglyph format controls (Cf)"),
    (0x1BCA0, 0x1BCA3, "shorthand format controls"),
    (0x1D173, 0x1D17A, "musical beam and phrase controls"),
    (0xE0000, 0xE007F, "tag characters"),
    (0xE0080, 0xE00FF, "reserved default-ignorable"),
    (0xE0100, 0xE01EF, "variation selectors 17-256"),
    (0xE01F0, 0xE0FFF, "reserved default-ignorable"),
)

# The tag characters that spell printable ASCII: U+E0020-U+E007E is " " to "~" plus 0xE0000.
# A run of them is shown (and reported) decoded, which makes a hidden sentence readable.
TAGS = (0xE0020, 0xE007E)
TAG_OFFSET = 0xE0000


def _code(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\U{code:08x}"


def _class(ranges: tuple[tuple[int, int, str], ...]) -> str:
    parts = (_code(a) if a == b else f"{_code(a)}-{_code(b)}" for a, b, _ in ranges)
    return f"[{''.join(parts)}]"


_BMP = tuple(r for r in RANGES if r[1] <= 0xFFFF)
_ASTRAL = tuple(r for r in RANGES if r[0] > 0xFFFF)

SOURCES = {
    # A run of printable tag characters, or any one character of RANGES.
    "INVISIBLE": f"[{_code(TAGS[0])}-{_code(TAGS[1])}]+|{_class(RANGES)}",
    "INVISIBLE_ONE": _class(RANGES),
    # What json.dumps(ensure_ascii=False) leaves raw: all of RANGES but C0 (it escapes C0).
    "INVISIBLE_JSON_LEAVES": _class(tuple(r for r in RANGES if r[0] >= 0x7F)),
    # For holds_invisible, the same set split in three patterns that each run at C speed:
    # `re` tests a class of BMP characters with one table lookup, but a class that has a
    # character beyond U+FFFF range by range, ten times slower, and so does an alternation.
    "INVISIBLE_BMP": _class(_BMP),
    "ASTRAL": f"[{_code(0x10000)}-{_code(0x10FFFF)}]",
    "INVISIBLE_ASTRAL": _class(_ASTRAL),
    "TAG_RUN": f"[{_code(TAGS[0])}-{_code(TAGS[1])}]+",
}

INVISIBLE = re.compile(SOURCES["INVISIBLE"])
INVISIBLE_ONE = re.compile(SOURCES["INVISIBLE_ONE"])
INVISIBLE_JSON_LEAVES = re.compile(SOURCES["INVISIBLE_JSON_LEAVES"])
INVISIBLE_BMP = re.compile(SOURCES["INVISIBLE_BMP"])
ASTRAL = re.compile(SOURCES["ASTRAL"])
INVISIBLE_ASTRAL = re.compile(SOURCES["INVISIBLE_ASTRAL"])
TAG_RUN = re.compile(SOURCES["TAG_RUN"])


def decode_tags(run: str) -> str:
    """The ASCII a run of :data:`TAGS` spells, with ``\\`` and ``"`` escaped so that it can be
    quoted."""
    text = "".join(chr(ord(tag) - TAG_OFFSET) for tag in run)
    return text.replace("\\", "\\\\").replace('"', '\\"')


def what(code: int) -> str:
    """What :data:`RANGES` says the character ``code`` is (``""`` when it is not in them)."""
    for first, last, label in RANGES:
        if first <= code <= last:
            return label
    return ""


def holds_invisible(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`RANGES`, in a few nanoseconds a character
    and without a pattern for printable ASCII (the common AGENTS.md)."""
    if text.isascii():
        return not text.replace("\n", "").replace("\t", "").isprintable()
    return INVISIBLE_BMP.search(text) is not None or (
        ASTRAL.search(text) is not None  # emoji, CJK extensions, tags, …
        and INVISIBLE_ASTRAL.search(text) is not None
    )


def pattern_for(text: str, *, tag_runs: bool) -> re.Pattern[str]:
    """The fastest pattern that finds every character of :data:`RANGES` in ``text``: the BMP
    class when ``text`` has no character beyond U+FFFF; else :data:`INVISIBLE` (tag runs as
    one match) or :data:`INVISIBLE_ONE` (one match a character)."""
    if ASTRAL.search(text) is None:
        return INVISIBLE_BMP
    return INVISIBLE if tag_runs else INVISIBLE_ONE
