"""The errors and the warning a transcript raises: each names the file and, where one line is
to blame, its 1-based line number (see :mod:`runcontext.transcript.session`)."""

from __future__ import annotations

import os
import re
from typing import Any

from runcontext._controls import SOURCES
from runcontext.errors import _reduce

__all__ = [
    "ConversationMismatchError",
    "RunNotRecordedError",
    "SeedMismatchError",
    "TornTranscriptError",
    "TornTranscriptWarning",
    "TranscriptDigestError",
    "TranscriptError",
    "TranscriptFormatError",
    "TranscriptReplacedError",
    "TranscriptVersionError",
    "UnchainedTranscriptWarning",
    "shown_name",
]


def shown_name(name: str) -> str:
    """``name`` (a file name or a store's name) as a person may be shown it, on one line.

    A byte of the name that is not UTF-8 (which Python holds as a lone surrogate, U+DC80 to
    U+DCFF, as ``os.fsdecode`` gives it) is shown as ``\\xNN``; a control character, a line
    break, a tab, a bidirectional control or another lone surrogate as ``\\xNN`` (below 128)
    or ``\\uXXXX``. Nothing else changes, so an ordinary name is shown as it is. The form is
    for reading, not for opening: the exact name is ``TranscriptError.file`` or
    ``Session.path`` (docs/TRANSCRIPT.md, *File names*).
    """
    if name.isascii() and name.isprintable():  # the common name: nothing to escape
        return name
    return _UNSHOWN.sub(_escape, name)


# What shown_name escapes: line breaks, tabs, lone surrogates and runcontext._controls's
# invisible characters.
_UNSHOWN = re.compile(f"[\n\t\ud800-\udfff{SOURCES['INVISIBLE_ONE'][1:-1]}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class TranscriptError(ValueError):
    """A transcript that cannot be read or appended to as asked.

    ``file`` is the transcript file (or the store's name; ``path=`` when raising) and ``line``
    the 1-based line number of the offending record, or ``None`` when the problem is not one
    line's; both are also in the message, the file as :func:`shown_name` shows it (``file``
    is the exact name, which may hold a byte that is not UTF-8). (``file``, not ``path``: on a
    :class:`~runcontext.CanonicalJSONError` ``path`` is a JSON path.) ``kind`` is the refusal
    kind of docs/TRANSCRIPT.md (``chain``, ``too-long``, …) for a refused record, else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str],
        line: int | None,
        kind: str | None = None,
    ) -> None:
        shown = shown_name(os.fspath(path))
        where = f"{shown}:{line}" if line is not None else shown
        super().__init__(f"{where}: {message}")
        self.file = os.fspath(path)
        self.line = line
        self.kind = kind

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduce(self)


class TranscriptFormatError(TranscriptError):
    """A line that is not a valid record: not JSON, not canonical, an unknown type, a missing
    or unexpected field, a run that names a section the file does not hold, …"""


class TranscriptVersionError(TranscriptFormatError):
    """A transcript written by a newer runcontext (a format version this one cannot read)."""


class TranscriptDigestError(TranscriptError):
    """A record whose content does not match its recorded digest: the file was altered."""


class TornTranscriptError(TranscriptError):
    """An append refused because the file ends with a torn (incomplete) record."""


class ConversationMismatchError(TranscriptError):
    """A conversation that is not the one this transcript records.

    When one message differs, ``index`` is its index in the conversation, ``recorded`` the
    digest of the transcript's message at that index and ``given`` the digest of the caller's
    (``None`` when the caller has no message there); ``line`` is the line of the recorded one.
    All three are ``None`` when the conversation is refused for its length.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str],
        line: int | None,
        index: int | None = None,
        recorded: str | None = None,
        given: str | None = None,
    ) -> None:
        super().__init__(message, path=path, line=line)
        self.index = index
        self.recorded = recorded
        self.given = given


class SeedMismatchError(ConversationMismatchError):
    """The conversation's first message no longer matches the seed the transcript started with.

    ``recorded`` is the digest of the transcript's current message 0 (the seed in its header,
    until a compaction replaces that message), ``given`` the digest of the conversation's
    message at index 0 (``None`` for an empty conversation).
    """

    recorded: str

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str],
        recorded: str,
        given: str | None,
    ) -> None:
        super().__init__(message, path=path, line=1, index=0, recorded=recorded, given=given)


class TranscriptReplacedError(TranscriptError):
    """An append refused because the path no longer names the file the session opened and
    verified: the file was replaced (renamed over, by an editor, ``rsync`` or ``sed -i``),
    deleted, or the path is a symlink that now points elsewhere. Nothing was written; open
    the path again to continue the file now there (its records are verified then)."""


class RunNotRecordedError(TranscriptError):
    """The backend (of a :class:`~runcontext.Loop`, or an integration's model) answered but
    the run could not be recorded (another writer appended in between, the reply has no JSON
    form, the disk is full, …). Nothing paid for is lost:
    ``outcome`` is the :class:`~runcontext.loop.RunOutcome` the run would have returned
    (its ``messages`` end with the reply; ``request`` is what was sent; ``run`` is ``None``),
    and the original error is the ``__cause__``."""

    def __init__(self, message: str, *, path: str | os.PathLike[str], outcome: Any) -> None:
        super().__init__(message, path=path, line=None)
        self.outcome = outcome


class UnchainedTranscriptWarning(UserWarning):
    """A version 1 transcript: its records are not chained, so edits to them go unnoticed."""


class TornTranscriptWarning(UserWarning):
    """The transcript ends with a torn record; the complete records before it are readable."""
