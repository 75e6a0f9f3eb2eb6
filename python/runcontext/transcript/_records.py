"""The transcript's record format: each record encoded as one line, and each line read back.

The functions are stateless: what a line is checked against (the next message index, the
section bodies read so far, …) is passed in, and a line that is not a valid record raises a
:class:`~runcontext.transcript.errors.TranscriptError` naming the file and the line. The
session (:mod:`runcontext.transcript.session`) keeps the state, the locks and the writes. The
format is specified in ``docs/TRANSCRIPT.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

from runcontext._core import (
    FORMAT_VERSION,
    RunContext,
    canonical_json,
    canonicalize_text,
    digest,
    digest_bytes,
)
from runcontext.errors import CanonicalJSONError, InvalidStringError, JSONSyntaxError
from runcontext.transcript.errors import (
    TranscriptDigestError,
    TranscriptFormatError,
    TranscriptVersionError,
)

TRANSCRIPT_FORMAT = "runcontext-transcript"
TRANSCRIPT_VERSION = 1

Clock = Callable[[], datetime]

# The exact member names of each record type: a reader refuses any other, so nothing in a
# transcript is ever silently ignored.
_FIELDS: dict[str, frozenset[str]] = {
    "header": frozenset({"type", "format", "version", "context_format", "seed", "time"}),
    "message": frozenset({"type", "index", "message"}),
    "section": frozenset({"type", "digest", "name", "text"}),
    "run-context": frozenset({"type", "run", "digest", "time", "messages", "sections", "facts"}),
}

# The largest integer canonical JSON writes as an int; see _parse_int.
_MAX_SAFE_INTEGER = 2**53 - 1

# A context's structure as an envelope records it: the (position, name, digest) of each section
# and the facts. Equal structures are the same context, so it is built and verified once.
Structure = tuple[tuple[tuple[Literal["head", "tail"], str, str], ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Envelope:
    """A ``run-context`` record as read; ``structure`` names its context."""

    number: int
    time: datetime
    digest: str
    messages: int
    structure: Structure


def structure(context: RunContext) -> Structure:
    return (
        tuple((s.position, s.name, s.digest) for s in context.sections),
        context.facts,
    )


# --- timestamps -------------------------------------------------------------------------------


def utc_now() -> datetime:
    return datetime.now(UTC)


def _format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are some."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def timestamp(clock: Clock) -> str:
    moment = clock()
    if not isinstance(moment, datetime):
        raise TypeError(f"the session clock returned {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            "the session clock returned a naive datetime; return an aware one, "
            "such as datetime.now(timezone.utc)"
        )
    return _format_time(moment)


# --- encoding ---------------------------------------------------------------------------------


def _line(record: Mapping[str, Any]) -> bytes:
    return canonical_json(record) + b"\n"


def header_line(seed: str, time: str) -> bytes:
    return _line(
        {
            "type": "header",
            "format": TRANSCRIPT_FORMAT,
            "version": TRANSCRIPT_VERSION,
            "context_format": FORMAT_VERSION,
            "seed": seed,
            "time": time,
        }
    )


def message_body(message: Mapping[str, Any], argument: str) -> bytes:
    """The canonical JSON of one message; an error names ``argument`` (``messages[3]``)."""
    try:
        return canonical_json(message if type(message) is dict else dict(message))
    except CanonicalJSONError as error:
        # TypeError for a value JSON cannot hold, ValueError otherwise; the cause keeps the
        # original class and its path.
        problem = TypeError if isinstance(error, TypeError) else ValueError
        raise problem(
            f"{argument}: the message cannot be stored in a transcript: {error}"
        ) from error


def message_digest(message: Mapping[str, Any], argument: str) -> str:
    return digest_bytes(message_body(message, argument))


def message_line(index: int, body: bytes) -> bytes:
    # The record's members in canonical (sorted) order around the already-canonical message,
    # so a large message is encoded once; readers check every line is canonical anyway.
    return b'{"index":%d,"message":%s,"type":"message"}\n' % (index, body)


def section_line(digest: str, name: str, text: str) -> bytes:
    return _line({"type": "section", "digest": digest, "name": name, "text": text})


def run_context_line(number: int, context: RunContext, time: str, messages: int) -> bytes:
    return _line(
        {
            "type": "run-context",
            "run": number,
            "digest": context.digest,
            "time": time,
            "messages": messages,
            "sections": [
                {"position": s.position, "name": s.name, "digest": s.digest}
                for s in context.sections
            ],
            "facts": [list(fact) for fact in context.facts],
        }
    )


# --- reading ----------------------------------------------------------------------------------


def fail(path: Path, line: int, message: str) -> NoReturn:
    raise TranscriptFormatError(message, path=path, line=line)


def _parse_int(text: str) -> int | float:
    """Read a canonical integer literal: beyond ±(2**53 − 1) it denotes a double.

    Canonical JSON writes a double with an integral value below 1e21 as an integer literal
    (``1e16`` as ``10000000000000000``) and refuses an int it cannot hold exactly, so a literal
    that large was a float. Reading it back as one keeps ``digest`` of a read message equal to
    the digest of the message as given.
    """
    value = int(text)
    return value if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else float(value)


def _without_text_position(error: CanonicalJSONError) -> str:
    """The core's message for one line of text, without its "line 1, " (the file's line is
    already in front of it)."""
    text = str(error)
    prefix = f"line {error.line}, "
    return text[len(prefix) :] if error.line is not None and text.startswith(prefix) else text


def parse_line(raw: bytes, path: Path, line: int, *, trusted: bool) -> dict[str, Any]:
    """One complete line (without its newline) as a JSON object with a known ``type``.

    A ``trusted`` line is one the session just wrote, so already canonical.
    """
    if not raw:
        fail(path, line, "empty line: every line must be one JSON record")
    if not trusted:
        # The core's strict parser: it refuses duplicate members, which json.loads would
        # silently drop, and accepts the integer literals canonical JSON writes for doubles.
        try:
            canonical = canonicalize_text(raw)
        except (JSONSyntaxError, InvalidStringError) as error:
            fail(path, line, f"not JSON: {_without_text_position(error)}")
        except CanonicalJSONError as error:
            fail(path, line, f"not a canonical JSON record: {_without_text_position(error)}")
        if canonical != raw:
            fail(
                path,
                line,
                "the record is not in canonical JSON form (RFC 8785): the file was edited "
                "or written by another tool; transcripts are byte-deterministic",
            )
    try:
        record = json.loads(raw, parse_int=_parse_int)
    except (ValueError, RecursionError) as error:  # unreachable for a canonical line
        fail(path, line, f"not JSON: {error}")
    if not isinstance(record, dict):
        fail(path, line, f"expected a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        known = ", ".join(_FIELDS)
        fail(path, line, f"unknown record type {kind!r} (a record's type is one of {known})")
    return record


def check_fields(record: dict[str, Any], path: Path, line: int) -> None:
    """Refuse a record without exactly the members of its type."""
    kind = record["type"]
    fields = set(record)
    if fields == _FIELDS[kind]:
        return
    missing = sorted(_FIELDS[kind] - fields)
    unexpected = sorted(fields - _FIELDS[kind])
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing)}")
    if unexpected:
        parts.append(f"unexpected {', '.join(unexpected)}")
    fail(path, line, f"a {kind} record with {'; '.join(parts)}")


def _digest_field(record: dict[str, Any], key: str, path: Path, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.startswith("blake3:") or len(value) != 71:
        fail(path, line, f"{key!r} must be a digest like 'blake3:<64 hex digits>', got {value!r}")
    return value


def _time_field(record: dict[str, Any], path: Path, line: int) -> datetime:
    text = record.get("time")
    moment: datetime | None = None
    if isinstance(text, str) and text.endswith("Z"):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None or _format_time(moment) != text:
        fail(path, line, f"'time' must be a UTC timestamp like 2025-01-31T09:30:00Z, got {text!r}")
    return moment


def read_header(record: dict[str, Any], path: Path, line: int) -> tuple[str, datetime]:
    """The seed digest and creation time of the header, which must be line 1 and only it."""
    if line != 1:
        fail(path, line, "a second header record: the header is line 1 only")
    if record.get("type") != "header":
        fail(path, line, f"line 1 is a {record.get('type')!r} record, not the header")
    if record.get("format") != TRANSCRIPT_FORMAT:
        fail(path, line, f"not a runcontext transcript (format is {record.get('format')!r})")
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        fail(path, line, f"invalid format version {version!r}")
    if version > TRANSCRIPT_VERSION:
        raise TranscriptVersionError(
            f"transcript format version {version} is newer than this runcontext reads "
            f"({TRANSCRIPT_VERSION}); upgrade runcontext to read it",
            path=path,
            line=line,
        )
    # The members are checked after the version: a newer format may have other ones.
    check_fields(record, path, line)
    context_format = record["context_format"]
    if context_format != FORMAT_VERSION:
        raise TranscriptVersionError(
            f"the runs were recorded with RunContext format {context_format!r}; this "
            f"runcontext renders format {FORMAT_VERSION} and could not verify their digests",
            path=path,
            line=line,
        )
    return _digest_field(record, "seed", path, line), _time_field(record, path, line)


def read_message(record: dict[str, Any], path: Path, line: int, *, index: int) -> Any:
    """The message of a ``message`` record, which must be the conversation's ``index``-th."""
    if record["index"] != index or isinstance(record["index"], bool):
        fail(
            path,
            line,
            f"message index {record['index']!r}, expected {index}: a message record is "
            "missing or repeated",
        )
    message = record["message"]
    if not isinstance(message, dict) or "role" not in message:
        fail(path, line, "the message is not an object with a 'role'")
    return message


def read_section(
    record: dict[str, Any], path: Path, line: int, *, verify: bool
) -> tuple[str, tuple[str, str]]:
    """The digest and (name, text) of a ``section`` record; ``verify`` rehashes the body."""
    name, text = record["name"], record["text"]
    if not isinstance(name, str) or not isinstance(text, str):
        fail(path, line, "a section's name and text must be strings")
    recorded = _digest_field(record, "digest", path, line)
    if verify:
        actual = digest({"name": name, "text": text})
        if actual != recorded:
            raise TranscriptDigestError(
                f"section {name!r} has digest {actual} but the record says {recorded}: "
                "the file was altered",
                path=path,
                line=line,
            )
    return recorded, (name, text)


def read_run_context(
    record: dict[str, Any],
    path: Path,
    line: int,
    *,
    number: int,
    recorded_messages: int,
    sections: Mapping[str, tuple[str, str]],
) -> Envelope:
    """A ``run-context`` record that must be run ``number``, after ``recorded_messages``
    messages and the section records ``sections`` (digest -> (name, text)).

    Its context's digest is not checked here: that needs the context built (once per distinct
    structure), which the session does.
    """
    if record["run"] != number or isinstance(record["run"], bool):
        fail(
            path,
            line,
            f"run number {record['run']!r}, expected {number}: a run is missing or repeated",
        )
    messages = record["messages"]
    if isinstance(messages, bool) or not isinstance(messages, int) or messages < 0:
        fail(path, line, f"'messages' must be a count of messages, got {messages!r}")
    if messages > recorded_messages:
        fail(
            path,
            line,
            f"run {number} says its request carried {messages} messages, but only "
            f"{recorded_messages} are recorded before it",
        )
    entries = record["sections"]
    if not isinstance(entries, list):
        fail(path, line, "'sections' must be a list")
    kept: list[tuple[Literal["head", "tail"], str, str]] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"position", "name", "digest"}:
            fail(path, line, f"sections[{index}] must be an object with position, name and digest")
        position, name, section_digest = entry["position"], entry["name"], entry["digest"]
        if position not in ("head", "tail"):
            fail(path, line, f"sections[{index}]: position must be 'head' or 'tail'")
        stored = sections.get(section_digest) if isinstance(section_digest, str) else None
        if stored is None:
            fail(
                path,
                line,
                f"run {number} names section {name!r} with digest {section_digest!r}, but "
                "no section record before this line has that digest",
            )
        if stored[0] != name:
            fail(
                path,
                line,
                f"sections[{index}] is named {name!r} but the section record with its "
                f"digest is named {stored[0]!r}",
            )
        kept.append((position, name, section_digest))
    facts = record["facts"]
    if not isinstance(facts, list) or not all(
        isinstance(fact, list) and len(fact) == 2 and all(isinstance(part, str) for part in fact)
        for fact in facts
    ):
        fail(path, line, "'facts' must be a list of [name, value] string pairs")
    return Envelope(
        number=number,
        digest=_digest_field(record, "digest", path, line),
        time=_time_field(record, path, line),
        messages=messages,
        structure=(tuple(kept), tuple((name, value) for name, value in facts)),
    )
