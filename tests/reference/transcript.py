"""Reference transcript reader and writer, format version 2 (reads version 1 too).

A slow, readable transcription of docs/TRANSCRIPT.md, written from that document alone
(not from ``python/runcontext/transcript/`` or ``rust/``), used by the tests as an
executable spec and to generate ``docs/vectors/transcript-v2.json``.

``read(data)`` takes a file's bytes and returns a :class:`Transcript` (the messages, the
runs with their rebuilt contexts, the final chain, the torn last line if any), or raises
:class:`TranscriptRefError` with the ``kind`` and ``line`` of the refusal-kinds table: the
lines are checked in file order, and within a line the checks run in the order of the
table (:data:`KINDS`), so the first failing check of the first failing line is reported.

:class:`Writer` builds valid version 2 files from Python values, as ``Session`` would
write them; :func:`encode` chains any list of record bodies (valid or not), which the
vector generator uses to build files that break exactly one rule.

Where TRANSCRIPT.md leaves a choice open, the choice made here is marked *Reading:* in a
comment (the generator's report lists them).
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field
from typing import Any

from blake3 import blake3

from .jcs import MAX_SAFE_INTEGER, canonical_json
from .jcs import digest as jcs_digest
from .runcontext import FORMAT_VERSION as CONTEXT_FORMAT
from .runcontext import RunContext, RunContextRefError

FORMAT_NAME = "runcontext-transcript"
VERSION = 2
KNOWN_VERSIONS = (1, 2)
MAX_DEPTH = 512
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

# The refusal kinds, in the order of the table: within a line, the first that fails wins.
KINDS = (
    "too-long",
    "blank-line",
    "not-json",
    "too-deep",
    "not-canonical",
    "not-an-object",
    "unknown-type",
    "header",
    "version",
    "members",
    "member-value",
    "chain",
    "seed",
    "index",
    "compaction",
    "elision",
    "run",
    "section-digest",
    "dangling-section",
    "context",
    "context-digest",
)

# Each record type's members, `chain` aside (version 2 adds it to every type).
MEMBERS: dict[str, frozenset[str]] = {
    "header": frozenset({"type", "format", "version", "context_format", "seed", "time"}),
    "message": frozenset({"type", "index", "message"}),
    "section": frozenset({"type", "name", "text", "digest"}),
    "run-context": frozenset({"type", "run", "digest", "messages", "sections", "facts", "time"}),
    "compaction": frozenset({"type", "start", "end", "messages", "mode", "time"}),
    "elision": frozenset({"type", "items", "time"}),
}
# Record types a version 1 file may hold (compactions and elisions are version 2 only).
V1_TYPES = frozenset({"header", "message", "section", "run-context"})
SECTION_ENTRY_MEMBERS = frozenset({"position", "name", "digest"})
# A run-context may also hold `tokens` (optional); its members, and those of `tokens.billed`.
OPTIONAL_MEMBERS: dict[str, frozenset[str]] = {
    "run-context": frozenset({"tokens"}),
    "compaction": frozenset({"tokens"}),
}
COMPACTION_TOKENS = frozenset({"before", "after", "quality"})
MODES = ("summary", "trim")
TOKENS_REQUIRED = frozenset({"head", "conversation", "tail", "tools", "quality"})
TOKENS_OPTIONAL = frozenset({"limit", "billed"})
BILLED_REQUIRED = frozenset({"input", "cache_read", "cache_write"})
BILLED_OPTIONAL = frozenset({"output"})
QUALITIES = ("exact", "calibrated", "estimated")
MAX_SAFE = 2**53 - 1

_DIGEST = re.compile(r"blake3:[0-9a-f]{64}")
_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{6}))?Z"
)

# RFC 8259 tokens (``[0-9]``, not ``\d``, which matches other scripts' digits).
_JSON_WS = " \t\n\r"
_JSON_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_JSON_LITERAL = re.compile(r"true|false|null")


class TranscriptRefError(Exception):
    """A refusal: ``kind`` is one of :data:`KINDS`, ``line`` the 1-based line number."""

    def __init__(self, kind: str, line: int, detail: str) -> None:
        assert kind in KINDS, kind
        super().__init__(f"line {line}: {kind}: {detail}")
        self.kind = kind
        self.line = line
        self.detail = detail


@dataclass(frozen=True)
class Torn:
    """A last line without its ``\\n``: its 1-based number, byte offset and length."""

    line: int
    offset: int
    length: int


@dataclass(frozen=True)
class Run:
    """One ``run-context`` record with the context rebuilt from it; ``sent`` is the
    conversation as it was sent (the current conversation at the record, truncated to
    ``messages``)."""

    number: int
    digest: str
    time: str
    messages: int
    context: RunContext
    tokens: dict[str, Any] | None = None
    sent: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Edit:
    """A ``compaction`` or ``elision`` record, as read: ``after_run`` is the number of runs
    recorded before it."""

    kind: str  # "compaction" or "elision"
    after_run: int
    time: str
    start: int = 0
    end: int = 0
    messages: tuple[Any, ...] = ()
    mode: str = ""
    tokens: dict[str, Any] | None = None
    items: tuple[tuple[int, Any], ...] = ()


@dataclass
class Transcript:
    """What a reader returns for a file it accepts."""

    version: int
    messages: list[Any] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    chain: str | None = None  # the last complete line's chain; None for version 1
    torn: Torn | None = None
    unchained: bool = False  # a version 1 file: edits to it cannot be detected


# --------------------------------------------------------------------------
# Chains and timestamps
# --------------------------------------------------------------------------


def chain_of(previous: str, body: bytes) -> str:
    """``"blake3:" + hex(BLAKE3(chain_{k-1} ‖ body_k))``; ``previous`` is "" for line 1."""
    return "blake3:" + blake3(previous.encode("ascii") + body).hexdigest()


def format_time(moment: datetime.datetime) -> str:
    """The timestamp form: UTC, ``Z``, a six-digit fraction only when there are microseconds."""
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no zone")
    utc = moment.astimezone(datetime.UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def is_time(value: object) -> bool:
    if not isinstance(value, str):
        return False
    match = _TIME.fullmatch(value)
    if match is None:
        return False
    # Reading: a fraction of ".000000" is not the form ("only when there are microseconds").
    if match[7] == "000000":
        return False
    try:
        # Reading: the fields must name a real instant (no month 13, no second 60).
        datetime.datetime(*(int(part) for part in match.groups()[:6]))
    except ValueError:
        return False
    return True


def is_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def _is_int(value: object) -> bool:
    return type(value) is int  # JSON true/false are bool, which Python counts as int


def _is_count(value: object) -> bool:
    return _is_int(value) and value >= 0  # type: ignore[operator]


# --------------------------------------------------------------------------
# JSON: grammar and depth, then values
# --------------------------------------------------------------------------


def json_depth(text: str) -> int | None:
    """The deepest nesting of arrays and objects if ``text`` is a JSON text, else None.

    RFC 8259's grammar (whitespace around the value allowed, no NaN, no leading zeros),
    checked with an explicit stack so that any depth is measured without recursion.
    """
    pos, end = 0, len(text)
    stack: list[str] = []
    deepest = 0
    state = "value"  # "value", "name" (an object member's name) or "after" (a value)
    while True:
        while pos < end and text[pos] in _JSON_WS:
            pos += 1
        char = text[pos : pos + 1]
        if state == "after":
            if not stack:
                return deepest if pos == end else None
            if char == ",":
                pos += 1
                state = "name" if stack[-1] == "{" else "value"
            elif char == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
                pos += 1
            else:
                return None
        elif state == "name":
            match = _JSON_STRING.match(text, pos)
            if match is None:
                return None
            pos = match.end()
            while pos < end and text[pos] in _JSON_WS:
                pos += 1
            if text[pos : pos + 1] != ":":
                return None
            pos += 1
            state = "value"
        elif char in ("{", "["):
            stack.append(char)
            deepest = max(deepest, len(stack))
            pos += 1
            while pos < end and text[pos] in _JSON_WS:
                pos += 1
            if text[pos : pos + 1] == ("}" if char == "{" else "]"):
                stack.pop()
                pos += 1
                state = "after"
            else:
                state = "name" if char == "{" else "value"
        else:
            match = (
                _JSON_STRING.match(text, pos)
                or _JSON_NUMBER.match(text, pos)
                or _JSON_LITERAL.match(text, pos)
            )
            if match is None:
                return None
            pos = match.end()
            state = "after"


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        raise _Duplicate("a duplicate member")
    return record


def _parse_int(literal: str) -> int | float:
    """The large-integer rule: a literal beyond ±(2**53 − 1) can only have been a double."""
    if len(literal) > 20:  # far beyond the bound (and int() refuses very long literals)
        return float(literal)
    number = int(literal)
    return number if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER else float(literal)


def loads(text: str) -> Any:
    """JSON values as a reader decodes them (the large-integer rule); refuses duplicates."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_parse_int)


def depth_of(value: object) -> int:
    """Nesting of arrays and objects in a value (a scalar is 0)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


# --------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------


class _Reader:
    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self.version = 0  # known once line 1 is read
        self.seed = ""
        self.chain = ""  # chain_{k-1}; "" before line 1
        self.messages: list[Any] = []  # the current conversation
        self.sections: dict[str, tuple[str, str]] = {}  # digest -> (name, text)
        self.runs: list[Run] = []
        self.edits: list[Edit] = []

    def line(self, number: int, raw: bytes) -> None:
        def fail(kind: str, detail: str) -> TranscriptRefError:
            return TranscriptRefError(kind, number, detail)

        if len(raw) > self.max_line_bytes:
            # Reading: a line's length is its bytes without the "\n"; exactly the cap passes.
            raise fail("too-long", f"{len(raw)} bytes, over the cap of {self.max_line_bytes}")
        if raw == b"":
            raise fail("blank-line", "an empty line")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise fail("not-json", f"not UTF-8 ({error})") from None
        depth = json_depth(text)
        if depth is None:
            raise fail("not-json", "not a JSON text")
        if depth > MAX_DEPTH:
            raise fail("too-deep", f"nests {depth} deep, over {MAX_DEPTH}")
        try:
            record = loads(text)
            canonical = canonical_json(record)
        except ValueError as error:  # a duplicate member, a lone surrogate, 1e400
            raise fail("not-canonical", str(error)) from None
        if canonical != raw:
            raise fail("not-canonical", "not the canonical form of its value")
        if not isinstance(record, dict):
            raise fail("not-an-object", f"a JSON {type(record).__name__}, not an object")
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in MEMBERS:
            raise fail("unknown-type", f"type {kind!r}")
        if self.version == 1 and kind not in V1_TYPES:
            raise fail("unknown-type", f"type {kind!r} in a version 1 file")
        if (number == 1) != (kind == "header"):
            raise fail("header", "line 1 must be the header, and only line 1")
        if number == 1:
            self._check_version(record, fail)
        expected = MEMBERS[kind] | ({"chain"} if self.version >= 2 else set())
        expected |= OPTIONAL_MEMBERS.get(kind, frozenset()) & set(record)
        if set(record) != expected:
            missing = sorted(expected - set(record))
            extra = sorted(set(record) - expected)
            raise fail("members", f"missing {missing}, unexpected {extra}")
        problem = self._member_value(kind, record)
        if problem is None and self.version >= 2 and not is_digest(record["chain"]):
            problem = "chain is not a digest"
        if problem is not None:
            raise fail("member-value", problem)
        if self.version >= 2:
            body = {name: value for name, value in record.items() if name != "chain"}
            want = chain_of(self.chain, canonical_json(body))
            if record["chain"] != want:
                raise fail("chain", f"chain {record['chain']}, computed {want}")
            self.chain = want
            if number == 2 and not (
                kind == "message"
                and record["index"] == 0
                and jcs_digest(record["message"]) == self.seed
            ):
                raise fail("seed", "line 2 is not the message at index 0 with the header's seed")
        getattr(self, "_" + kind.replace("-", "_"))(record, fail)

    def _check_version(self, record: dict[str, Any], fail: Any) -> None:
        # Reading: a missing or non-integer `format`, `version` or `context_format` is a
        # `version` refusal too: the member set depends on the version, so this comes first.
        version = record.get("version")
        if record.get("format") != FORMAT_NAME:
            raise fail("version", f"format {record.get('format')!r}")
        if not _is_int(version) or version not in KNOWN_VERSIONS:
            raise fail("version", f"version {version!r}")
        context_format = record.get("context_format")
        if not _is_int(context_format) or context_format != CONTEXT_FORMAT:
            raise fail("version", f"context_format {context_format!r}")
        self.version = version

    @staticmethod
    def _member_value(kind: str, record: dict[str, Any]) -> str | None:
        """What is wrong with a member's type or form, or None."""
        if kind == "header":
            if not is_digest(record["seed"]):
                return "seed is not a digest"
            if not is_time(record["time"]):
                return "time is not a timestamp"
        elif kind == "message":
            if not _is_count(record["index"]):
                return "index is not a non-negative integer"
            message = record["message"]
            if not isinstance(message, dict) or not (
                isinstance(message.get("role"), str) or isinstance(message.get("type"), str)
            ):
                return "message is not an object with a string role or type"
        elif kind == "section":
            if not isinstance(record["name"], str) or not isinstance(record["text"], str):
                return "name and text must be strings"
            if not is_digest(record["digest"]):
                return "digest is not a digest"
        elif kind == "compaction":
            return compaction_problem(record)
        elif kind == "elision":
            return elision_problem(record)
        else:  # run-context
            if not _is_count(record["run"]) or not _is_count(record["messages"]):
                return "run and messages must be non-negative integers"
            if not is_digest(record["digest"]):
                return "digest is not a digest"
            if not is_time(record["time"]):
                return "time is not a timestamp"
            # Reading: the JSON shape of `sections` and `facts` is checked here; whether they
            # make a valid RunContext is the later `context` check.
            sections = record["sections"]
            if not isinstance(sections, list) or not all(
                isinstance(entry, dict)
                and set(entry) == SECTION_ENTRY_MEMBERS
                and entry["position"] in ("head", "tail")
                and isinstance(entry["name"], str)
                and is_digest(entry["digest"])
                for entry in sections
            ):
                return "sections must be {position, name, digest} objects"
            # Reading: a `null` fact value is a wrong type here (the context's facts, which
            # the record holds, are always strings), not an entry a RunContext would drop.
            facts = record["facts"]
            if not isinstance(facts, list) or not all(
                isinstance(pair, list)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and isinstance(pair[1], str)
                for pair in facts
            ):
                return "facts must be [name, value] pairs of strings"
            if "tokens" in record:
                return tokens_problem(record["tokens"])
        return None

    def _header(self, record: dict[str, Any], fail: Any) -> None:
        self.seed = record["seed"]

    def _message(self, record: dict[str, Any], fail: Any) -> None:
        if record["index"] != len(self.messages):
            raise fail("index", f"index {record['index']}, expected {len(self.messages)}")
        self.messages.append(record["message"])

    def _compaction(self, record: dict[str, Any], fail: Any) -> None:
        start, end = record["start"], record["end"]
        if end > len(self.messages):
            raise fail("compaction", f"end {end}, the conversation has {len(self.messages)}")
        if len(self.messages) - (end - start) + len(record["messages"]) == 0:
            raise fail("compaction", "it leaves the conversation without a message")
        self.messages[start:end] = record["messages"]
        self.edits.append(
            Edit(
                "compaction",
                len(self.runs),
                record["time"],
                start=start,
                end=end,
                messages=tuple(record["messages"]),
                mode=record["mode"],
                tokens=record.get("tokens"),
            )
        )

    def _elision(self, record: dict[str, Any], fail: Any) -> None:
        items = record["items"]
        if items[-1]["index"] >= len(self.messages):
            raise fail(
                "elision", f"index {items[-1]['index']}, the conversation has {len(self.messages)}"
            )
        for item in items:
            self.messages[item["index"]] = item["message"]
        self.edits.append(
            Edit(
                "elision",
                len(self.runs),
                record["time"],
                items=tuple((item["index"], item["message"]) for item in items),
            )
        )

    def _section(self, record: dict[str, Any], fail: Any) -> None:
        want = jcs_digest({"name": record["name"], "text": record["text"]})
        if record["digest"] != want:
            raise fail("section-digest", f"digest {record['digest']}, computed {want}")
        self.sections[want] = (record["name"], record["text"])

    def _run_context(self, record: dict[str, Any], fail: Any) -> None:
        if record["run"] != len(self.runs) + 1:
            raise fail("run", f"run {record['run']}, expected {len(self.runs) + 1}")
        if record["messages"] > len(self.messages):
            raise fail("run", f"{record['messages']} messages, {len(self.messages)} recorded")
        head: list[list[str]] = []
        tail: list[list[str]] = []
        for entry in record["sections"]:
            known = self.sections.get(entry["digest"])
            if known is None or known[0] != entry["name"]:
                raise fail("dangling-section", f"section {entry['name']!r} {entry['digest']}")
            (head if entry["position"] == "head" else tail).append(list(known))
        # Reading: "in render order, head first": a head entry after a tail entry is not what
        # a writer writes, and is refused as `context`.
        positions = [entry["position"] for entry in record["sections"]]
        if positions != sorted(positions):  # "head" < "tail"
            raise fail("context", "a head section after a tail section")
        try:
            context = RunContext(head_sections=head, facts=record["facts"], tail_sections=tail)
        except (RunContextRefError, ValueError) as error:
            raise fail("context", f"not a valid RunContext: {error}") from None
        kept = (
            [list(p) for p in context.head_sections],
            [list(p) for p in context.facts],
            [list(p) for p in context.tail_sections],
        )
        if kept != (head, record["facts"], tail):
            raise fail("context", "an entry the RunContext drops or normalises")
        if context.digest != record["digest"]:
            raise fail("context-digest", f"digest {record['digest']}, rebuilt {context.digest}")
        self.runs.append(
            Run(
                record["run"],
                record["digest"],
                record["time"],
                record["messages"],
                context,
                record.get("tokens"),
                tuple(self.messages[: record["messages"]]),
            )
        )


def _is_message(message: object) -> bool:
    return isinstance(message, dict) and (
        isinstance(message.get("role"), str) or isinstance(message.get("type"), str)
    )


def compaction_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a compaction's members, or None (TRANSCRIPT.md, `compaction`)."""
    start, end = record["start"], record["end"]
    if not (_is_count(start) and start <= MAX_SAFE and _is_count(end) and end <= MAX_SAFE):
        return "start and end must be whole numbers from 0 to 2**53 - 1"
    if start >= end:
        return "start must be below end"
    messages = record["messages"]
    if not isinstance(messages, list) or not all(_is_message(m) for m in messages):
        return "messages must be an array of messages"
    if record["mode"] not in MODES:
        return "mode is not summary or trim"
    if record["mode"] == "summary" and not messages:
        return "a summary without messages"
    if not is_time(record["time"]):
        return "time is not a timestamp"
    if "tokens" in record:
        tokens = record["tokens"]
        if not isinstance(tokens, dict) or set(tokens) != COMPACTION_TOKENS:
            return "tokens must have exactly before, after and quality"
        for part in ("before", "after"):
            value = tokens[part]
            if not (_is_int(value) and 0 <= value <= MAX_SAFE):
                return f"tokens.{part} is not a whole number from 0 to 2**53 - 1"
        if tokens["quality"] not in QUALITIES:
            return "tokens.quality is not exact, calibrated or estimated"
    return None


def elision_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with an elision's members, or None (TRANSCRIPT.md, `elision`)."""
    items = record["items"]
    if not isinstance(items, list) or not items:
        return "items must be a non-empty array"
    previous = -1
    for item in items:
        if not isinstance(item, dict) or set(item) != {"index", "message"}:
            return "each item must be an object with exactly index and message"
        index = item["index"]
        if not (_is_count(index) and index <= MAX_SAFE):
            return "an item's index is not a whole number from 0 to 2**53 - 1"
        if index <= previous:
            return "the items' indices do not strictly increase"
        previous = index
        if not _is_message(item["message"]):
            return "an item's message is not an object with a string role or type"
    if not is_time(record["time"]):
        return "time is not a timestamp"
    return None


def tokens_problem(tokens: object) -> str | None:
    """What is wrong with a run's `tokens` member, or None (TRANSCRIPT.md, *`tokens`*)."""

    def is_count(value: object) -> bool:
        return _is_int(value) and 0 <= value <= MAX_SAFE  # type: ignore[operator]

    if not isinstance(tokens, dict):
        return "tokens is not an object"
    if not TOKENS_REQUIRED <= set(tokens) <= TOKENS_REQUIRED | TOKENS_OPTIONAL:
        return f"tokens has members {sorted(tokens)}"
    for part in ("head", "conversation", "tail", "tools", "limit"):
        if part in tokens and not is_count(tokens[part]):
            return f"tokens.{part} is not a whole number from 0 to 2**53 - 1"
    if tokens["quality"] not in QUALITIES:
        return "tokens.quality is not exact, calibrated or estimated"
    if sum(tokens[part] for part in ("head", "conversation", "tail", "tools")) > MAX_SAFE:
        return "the parts of tokens exceed 2**53 - 1"
    if "billed" in tokens:
        billed = tokens["billed"]
        if not isinstance(billed, dict):
            return "tokens.billed is not an object"
        if not BILLED_REQUIRED <= set(billed) <= BILLED_REQUIRED | BILLED_OPTIONAL:
            return f"tokens.billed has members {sorted(billed)}"
        if not all(is_count(value) for value in billed.values()):
            return "a member of tokens.billed is not a whole number from 0 to 2**53 - 1"
        if billed["cache_read"] + billed["cache_write"] > billed["input"]:
            return "tokens.billed: cache_read + cache_write exceed input"
    return None


def read(data: bytes, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Transcript:
    """Read and verify a whole transcript, or raise :class:`TranscriptRefError`."""
    if data == b"":
        raise TranscriptRefError("blank-line", 1, "an empty file")
    reader = _Reader(max_line_bytes)
    *complete, last = data.split(b"\n")
    offset = 0
    for number, raw in enumerate(complete, 1):
        reader.line(number, raw)
        offset += len(raw) + 1
    torn = None
    if last:
        number = len(complete) + 1
        # Reading: the cap is checked before a line is read, so a torn fragment over the cap
        # is `too-long`, as a reader cannot know it is the last line before reading past it.
        if len(last) > max_line_bytes:
            raise TranscriptRefError("too-long", number, "a torn line over the cap")
        # Reading: a file with no complete line at all has no header: refused as line 1 of
        # an empty file would be, rather than read as a transcript of nothing.
        if not complete:
            raise TranscriptRefError("blank-line", 1, "no complete line")
        torn = Torn(number, offset, len(last))
    return Transcript(
        version=reader.version,
        messages=reader.messages,
        runs=reader.runs,
        edits=reader.edits,
        chain=reader.chain if reader.version >= 2 else None,
        torn=torn,
        unchained=reader.version < 2,
    )


# --------------------------------------------------------------------------
# The writer
# --------------------------------------------------------------------------


def header_record(seed_message: object, time: str) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT_NAME,
        "version": VERSION,
        "context_format": CONTEXT_FORMAT,
        "seed": jcs_digest(seed_message),
        "time": time,
    }


def message_record(index: int, message: object) -> dict[str, Any]:
    return {"type": "message", "index": index, "message": message}


def section_record(name: str, text: str) -> dict[str, Any]:
    return {
        "type": "section",
        "name": name,
        "text": text,
        "digest": jcs_digest({"name": name, "text": text}),
    }


def run_record(
    run: int,
    context: RunContext,
    messages: int,
    time: str,
    tokens: dict[str, Any] | None = None,
) -> dict[str, Any]:
    record = {
        "type": "run-context",
        "run": run,
        "digest": context.digest,
        "messages": messages,
        "sections": [
            {"position": position, "name": name, "digest": digest}
            for position, name, _, digest in context.sections
        ],
        "facts": [[name, value] for name, value in context.facts],
        "time": time,
    }
    if tokens is not None:
        record["tokens"] = tokens
    return record


def compaction_record(
    start: int,
    end: int,
    messages: list[Any],
    mode: str,
    time: str,
    tokens: dict[str, Any] | None = None,
) -> dict[str, Any]:
    record = {
        "type": "compaction",
        "start": start,
        "end": end,
        "messages": messages,
        "mode": mode,
        "time": time,
    }
    if tokens is not None:
        record["tokens"] = tokens
    return record


def elision_record(items: list[tuple[int, Any]], time: str) -> dict[str, Any]:
    return {
        "type": "elision",
        "items": [{"index": index, "message": message} for index, message in items],
        "time": time,
    }


def tool_ids(message: object) -> list[tuple[str, str]]:
    """The tool calls and results a message holds, as ``("call" | "result", id)`` pairs, by
    the table of TRANSCRIPT.md (*Tool calls stay with their results*)."""
    found: list[tuple[str, str]] = []
    if not isinstance(message, dict):
        return found
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                found.append(("call", call["id"]))
    if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
        found.append(("result", message["tool_call_id"]))
    if isinstance(message.get("call_id"), str):
        if message.get("type") == "function_call":
            found.append(("call", message["call_id"]))
        elif message.get("type") == "function_call_output":
            found.append(("result", message["call_id"]))
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                found.append(("call", block["id"]))
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                found.append(("result", block["tool_use_id"]))
    return found


def pairs_problem(conversation: list[Any], start: int, end: int, messages: list[Any]) -> str | None:
    """Why replacing ``conversation[start:end]`` with ``messages`` is not pair-aligned."""
    inside: set[str] = set()
    outside: set[str] = set()
    for position, message in enumerate(conversation):
        for _, ident in tool_ids(message):
            (inside if start <= position < end else outside).add(ident)
    split = sorted(inside & outside)
    if split:
        return f"tool call {split[0]!r} is split by the range"
    calls: set[str] = set()
    results: set[str] = set()
    for message in messages:
        for kind, ident in tool_ids(message):
            if kind == "call":
                calls.add(ident)
            elif ident not in calls:
                return f"the result of tool call {ident!r} comes without its call"
            else:
                results.add(ident)
    if calls - results:
        return f"tool call {sorted(calls - results)[0]!r} comes without its result"
    return None


def encode(bodies: list[dict[str, Any]], *, version: int = VERSION, previous: str = "") -> bytes:
    """Lines for ``bodies`` (records without ``chain``), chained when ``version`` >= 2."""
    lines = []
    for body in bodies:
        data = canonical_json(body)
        if version >= 2:
            previous = chain_of(previous, data)
            data = canonical_json({**body, "chain": previous})
        lines.append(data + b"\n")
    return b"".join(lines)


def check_message(message: object, where: str) -> None:
    """What a writer refuses before anything is written."""
    if not isinstance(message, dict) or not (
        isinstance(message.get("role"), str) or isinstance(message.get("type"), str)
    ):
        raise ValueError(f"{where}: not a mapping with a string role or type")
    canonical_json(message)  # TypeError / ValueError: no JSON form
    if depth_of(message) > MAX_DEPTH - 1:
        raise ValueError(f"{where}: nests deeper than {MAX_DEPTH - 1}")


class Writer:
    """Builds the records a ``Session`` writes, in its order, and their bytes."""

    def __init__(
        self, messages: list[Any], time: str, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    ) -> None:
        if not messages:
            raise ValueError("a transcript starts with the message at index 0")
        for i, message in enumerate(messages):
            check_message(message, f"messages[{i}]")
        self.max_line_bytes = max_line_bytes
        self.bodies: list[dict[str, Any]] = [header_record(messages[0], time)]
        self.messages: list[Any] = []
        self.section_digests: set[str] = set()
        self.runs = 0
        self.append_messages(messages)

    def append_messages(self, messages: list[Any]) -> None:
        for message in messages:
            where = f"messages[{len(self.messages)}]"
            check_message(message, where)
            self._add(message_record(len(self.messages), message), where)
            self.messages.append(message)

    def _add(self, body: dict[str, Any], where: str) -> None:
        """Take a record in, refusing one whose line would be longer than the line cap: what
        is written with a cap must read with it."""
        length = len(canonical_json({**body, "chain": "blake3:" + "0" * 64}))
        if length > self.max_line_bytes:
            raise ValueError(f"{where}: a {length}-byte record, over the cap {self.max_line_bytes}")
        self.bodies.append(body)

    def record_run(
        self,
        messages: list[Any],
        context: RunContext | None,
        reply: Any,
        time: str,
        tokens: dict[str, Any] | None = None,
    ) -> None:
        """The new messages, the new sections, the envelope, then the reply."""
        if len(messages) < len(self.messages) or (
            self.messages
            and jcs_digest(messages[len(self.messages) - 1]) != jcs_digest(self.messages[-1])
        ):
            raise ValueError("not the recorded conversation")
        check_message(reply, "reply")
        self.append_messages(messages[len(self.messages) :])
        context = context if context is not None else RunContext()
        for _, name, text, digest in context.sections:
            if digest not in self.section_digests:
                self.section_digests.add(digest)
                self._add(section_record(name, text), f"section {name!r}")
        self.runs += 1
        if tokens is not None and tokens_problem(tokens) is not None:
            raise ValueError(f"tokens: {tokens_problem(tokens)}")
        self._add(run_record(self.runs, context, len(messages), time, tokens), "run-context")
        self.append_messages([reply])

    def compact(
        self,
        start: int,
        end: int,
        messages: list[Any],
        time: str,
        *,
        mode: str = "summary",
        tokens: dict[str, Any] | None = None,
    ) -> None:
        """A compaction of the current conversation's [start, end), pair-aligned."""
        if not 0 <= start < end <= len(self.messages):
            raise ValueError(f"the range [{start}, {end}) is not in the conversation")
        if len(self.messages) - (end - start) + len(messages) == 0:
            raise ValueError("the compaction leaves no message")
        for i, message in enumerate(messages):
            check_message(message, f"messages[{i}]")
            if depth_of(message) > MAX_DEPTH - 2:
                raise ValueError(f"messages[{i}]: nests deeper than {MAX_DEPTH - 2}")
        problem = pairs_problem(self.messages, start, end, messages)
        if problem is not None:
            raise ValueError(problem)
        record = compaction_record(start, end, messages, mode, time, tokens)
        if compaction_problem(record) is not None:
            raise ValueError(str(compaction_problem(record)))
        self._add(record, "compaction")
        self.messages[start:end] = messages

    def elide(self, stubs: dict[int, Any], time: str) -> None:
        """An elision of the current conversation's positions in ``stubs``."""
        items = sorted(stubs.items())
        for index, stub in items:
            if not 0 <= index < len(self.messages):
                raise ValueError(f"no message {index}")
            check_message(stub, f"stubs[{index}]")
            if sorted(tool_ids(stub)) != sorted(tool_ids(self.messages[index])):
                raise ValueError(f"stubs[{index}]: not the tool calls of the message it replaces")
        record = elision_record(items, time)
        if elision_problem(record) is not None:
            raise ValueError(str(elision_problem(record)))
        self._add(record, "elision")
        for index, stub in items:
            self.messages[index] = stub

    def to_bytes(self, *, version: int = VERSION) -> bytes:
        if version == VERSION:
            return encode(self.bodies)
        bodies = [dict(self.bodies[0], version=version), *self.bodies[1:]]
        return encode(bodies, version=version)
