"""Reference RunContext, format v1.

A slow, readable transcription of the RunContext v1 specification, used by
the tests as an executable spec and to generate
``docs/vectors/runcontext-v1.json``.

A RunContext is built from three optional arguments, each a sequence of
``(name, value)`` pairs in the caller's order:

* ``head_sections``: sections rendered in ``head_text``;
* ``facts``: short name/value facts rendered in ``tail_text``;
* ``tail_sections``: sections rendered in ``tail_text`` after the facts.

Validation (first failure wins) raises :class:`RunContextRefError`; then
values are normalised (trailing White_Space removed), empty entries are
dropped, and the texts and digests are computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from .jcs import digest as jcs_digest
from .jcs import keyed_digest

FORMAT_VERSION = 1

# Most entries one argument may hold (FORMAT.md section 3.1).
MAX_ENTRIES = 10_000

# The Unicode White_Space property, exactly (not Python's str.isspace, which
# also accepts U+001C..U+001F).
WHITE_SPACE: frozenset[str] = frozenset(
    [chr(c) for c in range(0x0009, 0x000D + 1)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200A + 1)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)

CURRENT_CONTEXT_HEADING = "## Current context"

CLOSING_TEXT = "\n".join(
    [
        "This block supersedes any environment description, tool catalogue or",
        "project instructions that appear earlier in this conversation; where they",
        "disagree, this block is authoritative.",
        "This block is context, not a request: do not acknowledge it, and do not",
        "reply to it.",
    ]
)

PARAGRAPH_SEPARATOR = "\n\n"


class RunContextRefError(Exception):
    """A validation failure.

    ``kind`` names the rule (e.g. ``"duplicate-name"``), ``is_type_error``
    tells whether it is a type error (wrong shape/type) rather than a value
    error, ``arg`` is the argument name and ``index`` the failing item's index
    within that argument (``None`` for argument-level errors).
    """

    def __init__(self, kind: str, is_type_error: bool, arg: str, index: int | None) -> None:
        where = arg if index is None else f"{arg}[{index}]"
        category = "type error" if is_type_error else "value error"
        super().__init__(f"{kind} ({category}) in {where}")
        self.kind = kind
        self.is_type_error = is_type_error
        self.arg = arg
        self.index = index


def is_control(char: str) -> bool:
    """Unicode general category Cc, plus the line/paragraph separators."""
    code = ord(char)
    return code <= 0x1F or 0x7F <= code <= 0x9F or char in ("\u2028", "\u2029")


def strip_trailing_white_space(text: str) -> str:
    """Remove trailing Unicode White_Space characters."""
    end = len(text)
    while end > 0 and text[end - 1] in WHITE_SPACE:
        end -= 1
    return text[:end]


def _type_error(kind: str, arg: str, index: int | None = None) -> RunContextRefError:
    return RunContextRefError(kind, True, arg, index)


def _value_error(kind: str, arg: str, index: int | None = None) -> RunContextRefError:
    return RunContextRefError(kind, False, arg, index)


def _is_sequence(value: object) -> bool:
    """A sequence in the sense of the rules: ordered, indexable, and not text or bytes."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _check_argument_shape(arg: str, value: object) -> Sequence[object]:
    """Validate the argument as a whole; return it as a sequence of items."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        raise _type_error("mapping", arg)
    if isinstance(value, Set):
        raise _type_error("unordered", arg)
    if not _is_sequence(value):
        raise _type_error("not-a-sequence", arg)
    if len(value) > MAX_ENTRIES:
        raise _value_error("too-many-entries", arg, MAX_ENTRIES)
    if (
        len(value) == 2
        and isinstance(value[0], str)
        and (value[1] is None or isinstance(value[1], str))
    ):
        raise _type_error("bare-pair", arg)
    return value


def _check_item(arg: str, index: int, item: object) -> tuple[str, str | None]:
    """Validate one item's shape, types and name rules (not uniqueness)."""
    if not _is_sequence(item) or len(item) != 2:
        raise _type_error("not-a-pair", arg, index)
    name, value = item
    if not isinstance(name, str):
        raise _type_error("name-type", arg, index)
    if value is not None and not isinstance(value, str):
        raise _type_error("value-type", arg, index)
    # A str that is not Unicode text (a lone surrogate) can never be
    # canonicalised: refused after both types are known to be right, the
    # name before the value, even when the entry would later be dropped.
    for text in (name, value or ""):
        if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
            raise _value_error("not-text", arg, index)
    if name == "":
        raise _value_error("empty-name", arg, index)
    if any(is_control(char) for char in name):
        raise _value_error("name-control", arg, index)
    if name[0] in WHITE_SPACE or name[-1] in WHITE_SPACE:
        raise _value_error("name-whitespace", arg, index)
    return name, value


def validate(
    head_sections: object, facts: object, tail_sections: object
) -> tuple[
    list[tuple[str, str | None]], list[tuple[str, str | None]], list[tuple[str, str | None]]
]:
    """Validate all three arguments; return them as lists of (name, value)."""
    section_names: set[str] = set()  # shared by head and tail sections
    fact_names: set[str] = set()
    validated: list[list[tuple[str, str | None]]] = []
    for arg, value, seen in (
        ("head_sections", head_sections, section_names),
        ("facts", facts, fact_names),
        ("tail_sections", tail_sections, section_names),
    ):
        entries: list[tuple[str, str | None]] = []
        for index, item in enumerate(_check_argument_shape(arg, value)):
            name, text = _check_item(arg, index, item)
            if name in seen:
                raise _value_error("duplicate-name", arg, index)
            seen.add(name)
            entries.append((name, text))
        validated.append(entries)
    head, fact_list, tail = validated
    return head, fact_list, tail


def _keep_sections(entries: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    for name, text in entries:
        if text is None:
            continue
        normalised = strip_trailing_white_space(text)
        if normalised != "":
            kept.append((name, normalised))
    return kept


def _keep_facts(entries: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    # A fact is dropped only when its value is None; "" is kept.
    return [
        (name, strip_trailing_white_space(value)) for name, value in entries if value is not None
    ]


def fact_line(name: str, value: str) -> str:
    return f"- {name}:" if value == "" else f"- {name}: {value}"


class RunContext:
    """RunContext format v1 (reference implementation)."""

    head_sections: list[tuple[str, str]]
    facts: list[tuple[str, str]]
    tail_sections: list[tuple[str, str]]
    head_text: str | None
    tail_text: str | None
    digest: str
    sections: list[tuple[str, str, str, str]]
    section_digests: list[str]
    is_empty: bool

    def __init__(
        self,
        *,
        head_sections: object = None,
        facts: object = None,
        tail_sections: object = None,
    ) -> None:
        head, fact_entries, tail = validate(head_sections, facts, tail_sections)
        self.head_sections = _keep_sections(head)
        self.facts = _keep_facts(fact_entries)
        self.tail_sections = _keep_sections(tail)
        self.head_text = self._render_head()
        self.tail_text = self._render_tail()
        self.digest = jcs_digest(self._document())
        self.sections = [
            ("head", name, text, jcs_digest({"name": name, "text": text}))
            for name, text in self.head_sections
        ] + [
            ("tail", name, text, jcs_digest({"name": name, "text": text}))
            for name, text in self.tail_sections
        ]

        self.section_digests = [section[3] for section in self.sections]
        self.is_empty = self.head_text is None and self.tail_text is None

    def _document(self) -> dict[str, object]:
        """The document the context digest is of (FORMAT.md § 3.6)."""
        return {
            "v": FORMAT_VERSION,
            "head": [[name, text] for name, text in self.head_sections],
            "facts": [[name, value] for name, value in self.facts],
            "tail": [[name, text] for name, text in self.tail_sections],
        }

    def keyed_digests(self, key: bytes) -> tuple[str, list[str]]:
        """The keyed forms of ``digest`` and ``section_digests`` (FORMAT.md § 2.1)."""
        return keyed_digest(key, self._document()), [
            keyed_digest(key, {"name": name, "text": text}) for _, name, text, _ in self.sections
        ]

    def _render_head(self) -> str | None:
        if not self.head_sections:
            return None
        return PARAGRAPH_SEPARATOR.join(text for _, text in self.head_sections)

    def _render_tail(self) -> str | None:
        if not self.facts and not self.tail_sections:
            return None
        parts = [CURRENT_CONTEXT_HEADING]
        if self.facts:
            parts.append("\n".join(fact_line(name, value) for name, value in self.facts))
        parts.extend(text for _, text in self.tail_sections)
        parts.append(CLOSING_TEXT)
        return PARAGRAPH_SEPARATOR.join(parts)
