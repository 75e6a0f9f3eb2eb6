"""Turn what a provider's collect came to into a checked contribution, or a diagnostic.

Everything a provider returned is untrusted: any exception reading it (a generator that
raises, a ``str`` subclass whose ``__len__`` raises) makes it ``invalid``, and nothing is
iterated or encoded without a bound, so neither an infinite iterator nor 10 MB of text can
stall the build. Texts that end up in diagnostics are collapsed, cut and (unless the caller
turned redaction off) redacted, since exception messages can quote what they read.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from runcontext._core import RunContext
from runcontext.providers._workers import Result, StillRunning
from runcontext.providers.base import Contribution, Diagnostic
from runcontext.providers.redact import redact as redact_text

__all__ = ["check", "redact_value"]

_MAX_PROVIDER_DIAGNOSTICS = 20
_MAX_MESSAGE = 300
# Messages are redacted on a window this much longer than what is kept, so a secret that
# crosses the cut is still seen whole by the patterns.
_SECRET_MARGIN = 200
_WORD = re.compile(r"\S+")

# Entries as a provider returned them: RunContext checks their types.
_Unchecked = list[Any]


def check(
    name: str,
    bound: int,
    result: Result,
    *,
    deadline: float,
    redact: bool,
    diagnostics: list[Diagnostic],
) -> RunContext | None:
    """Provider ``name``'s contribution as a validated RunContext, or ``None`` and a reason.

    ``bound`` is its byte bound and ``deadline`` the build's deadline in seconds (for the
    timeout message). Its own diagnostics are relayed into ``diagnostics`` too.
    """
    if result is None:
        message = (
            f"no result within the {deadline * 1000:.0f} ms deadline; a late result is discarded"
        )
        diagnostics.append(Diagnostic(name, "timeout", message))
        return None
    if isinstance(result, StillRunning):
        age = time.monotonic() - result.since
        message = (
            f"still running since an earlier build ({age:.1f} s ago); not started again "
            "until that collect returns"
        )
        diagnostics.append(Diagnostic(name, "timeout", message))
        return None
    ok, value = result
    if not ok:
        diagnostics.append(Diagnostic(name, "error", _clean(_describe(value), redact)))
        return None
    if value is None:
        return None
    if not isinstance(value, Contribution):
        message = f"collect() returned {type(value).__name__}; expected a Contribution or None"
        diagnostics.append(Diagnostic(name, "invalid", message))
        return None
    _relay(name, value, redact, diagnostics)
    try:
        facts, head, tail = _take_entries(value, bound)
    except _TooLarge:
        message = f"contribution left out: more than the {bound}-byte bound"
        diagnostics.append(Diagnostic(name, "too-large", message))
        return None
    except Exception as error:
        message = f"contribution refused: {_describe(error)}"
        diagnostics.append(Diagnostic(name, "invalid", _clean(message, redact)))
        return None
    try:
        # The RunContext rules: types, names, duplicates within the provider.
        checked = RunContext(head_sections=head, facts=facts, tail_sections=tail)
        size = _byte_count((facts, head, tail))
    except Exception as error:
        try:
            message = f"contribution refused: {error}"
        except Exception:
            message = f"contribution refused: {type(error).__name__}"
        diagnostics.append(Diagnostic(name, "invalid", _clean(message, redact)))
        return None
    if size > bound:
        message = f"contribution left out: {size} bytes, over the {bound}-byte bound"
        diagnostics.append(Diagnostic(name, "too-large", message))
        return None
    return checked


def redact_value(
    name: str, kind: str, entry: str, value: str, diagnostics: list[Diagnostic]
) -> str:
    """``value`` with secrets replaced, and a ``redacted`` diagnostic saying what was."""
    redacted, found = redact_text(value)
    if found:
        counts = ", ".join(f"{count} {label}" for label, count in sorted(found.items()))
        diagnostics.append(
            Diagnostic(name, "redacted", f"{kind} {entry!r}: replaced {counts} with [redacted]")
        )
    return redacted


def _relay(
    name: str, contribution: Contribution, redact: bool, diagnostics: list[Diagnostic]
) -> None:
    """Pass on a provider's own diagnostics, bounded in count and length."""
    try:
        notes = contribution.diagnostics
        if type(notes) in (tuple, list) and not notes:
            return  # the common case: nothing to relay
        if isinstance(notes, str | bytes) or not isinstance(notes, Iterable):
            raise TypeError(type(notes).__name__)
        pairs = list(itertools.islice(notes, _MAX_PROVIDER_DIAGNOSTICS))
    except Exception:
        message = "diagnostics was not a sequence of (kind, message) pairs"
        diagnostics.append(Diagnostic(name, "invalid", message))
        return
    for pair in pairs:
        try:
            parts = tuple(itertools.islice(pair, 3)) if isinstance(pair, tuple | list) else ()
            if len(parts) != 2 or not all(isinstance(part, str) for part in parts):
                raise TypeError
            # str.__str__ gives a plain str, whatever a subclass overrides.
            kind, message = (str.__str__(part) for part in parts)
            diagnostics.append(Diagnostic(name, _short(kind), _clean(message, redact)))
        except Exception:
            message = "a diagnostic was not a (kind, message) pair of strings"
            diagnostics.append(Diagnostic(name, "invalid", message))


def _clean(message: str, redact: bool) -> str:
    # Exception texts and provider notes can quote what they read; redact them too. Cut
    # first (with a margin, so a secret across the cut is still recognised): redaction
    # is linear, but a 10 MB exception message would still cost 10 MB of it.
    window = _short(message, _MAX_MESSAGE + _SECRET_MARGIN)
    return _short(redact_text(window)[0] if redact else window)


def _short(text: str, limit: int = _MAX_MESSAGE) -> str:
    """White space collapsed, cut to ``limit`` characters; reads only what it keeps."""
    kept: list[str] = []
    length = -1
    for word in _WORD.finditer(text):
        kept.append(word.group())
        length += len(kept[-1]) + 1
        if length > limit:
            break
    joined = " ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _describe(error: object) -> str:
    try:
        return f"raised {type(error).__name__}: {error}"
    except Exception:  # a __str__ that raises: the type is all there is to say
        return f"raised {type(error).__name__} (its message could not be read)"


class _TooLarge(Exception):
    pass


def _take_entries(
    contribution: Contribution, bound: int
) -> tuple[_Unchecked, _Unchecked, _Unchecked]:
    """Facts, head and tail as lists, never reading more than ``bound`` characters' worth.

    Each entry counts its names' and values' characters (at least one: a name is never
    empty), and a str has at least as many UTF-8 bytes as characters, so 10 MB of text or an
    endless sequence is refused after ``bound`` characters, without encoding anything.
    """
    total = 0
    taken: list[_Unchecked] = []
    for field in ("facts", "head", "tail"):
        entries = getattr(contribution, field)
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise TypeError(
                f"{field}: expected a sequence of (name, value) pairs, got {type(entries).__name__}"
            )
        # A list or tuple has the length it says; any other sequence is read one past the
        # bound at most (each entry counts at least one).
        plain = type(entries) in (list, tuple) and len(entries) <= bound
        kept: _Unchecked = []
        for entry in entries if plain else itertools.islice(entries, bound + 1):
            if type(entry) is tuple and len(entry) == 2:
                name, value = entry
                length = (str.__len__(name) if isinstance(name, str) else 0) + (
                    str.__len__(value) if isinstance(value, str) else 0
                )
            elif isinstance(entry, tuple | list):  # a pair has 2 items; a third says "not a pair"
                entry = tuple(itertools.islice(entry, 3))
                length = sum(str.__len__(part) for part in entry if isinstance(part, str))
            else:  # not a pair at all: RunContext says so, naming its type
                length = str.__len__(entry) if isinstance(entry, str) else 0
            total += max(length, 1)
            if total > bound:
                raise _TooLarge
            kept.append(entry)
        taken.append(kept)
    return taken[0], taken[1], taken[2]


def _byte_count(fields: Iterable[_Unchecked]) -> int:
    """UTF-8 bytes of every name and value, entries with an empty or no value included."""
    return sum(
        len(str.encode(part))
        for entries in fields
        for entry in entries
        if isinstance(entry, tuple)
        for part in entry
        if isinstance(part, str)
    )
