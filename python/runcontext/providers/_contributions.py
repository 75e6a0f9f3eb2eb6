"""Turn what a provider's collect came to into plain, checked data, in the worker thread.

Everything a provider returned is untrusted, and reading it runs the provider's code: a
lazy sequence's ``__getitem__``, a generator of diagnostics, an exception's ``__str__``.
:func:`check` does all of that reading in the worker that ran the collect, before the
result is handed over, so it counts against the deadline like the collect itself; the
caller's thread only ever sees :class:`Checked`, whose strings are plain ``str`` made by
``str``'s own methods or by the core. Any exception while reading, ``KeyboardInterrupt``
and ``SystemExit`` included (in a worker thread they can only come from the provider: a
real Ctrl-C goes to the main thread), makes the contribution ``invalid``. Nothing is
iterated or encoded without a bound, so neither an endless iterator nor 10 MB of text can
keep the worker long, and the reading stops once the deadline has passed (nobody waits for
it any more).

Texts that end up in diagnostics are collapsed and cut; fact values, section texts and
diagnostics are redacted here too when the build asks for it, so that the caller's thread
has nothing left to do but assemble.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runcontext._core import RunContext
from runcontext.providers.base import Contribution
from runcontext.providers.redact import redact as redact_text

# Entries as a provider returned them: RunContext checks their types.
_Unchecked = list[Any]

__all__ = ["FIELDS", "Checked", "Text", "check", "describe", "message_text", "resolve"]

_MAX_PROVIDER_DIAGNOSTICS = 20
_MAX_MESSAGE = 300
# Messages are redacted on a window this much longer than what is kept, so a secret that
# crosses the cut is still seen whole by the patterns.
_SECRET_MARGIN = 200
_WORD = re.compile(r"\S+")
# The fields of a Contribution, in the order they are read, and their kinds in messages.
FIELDS = (("facts", "fact"), ("head", "head section"), ("tail", "tail section"))


@dataclass(frozen=True, slots=True)
class Text:
    """A checked text: ``raw`` as the provider gave it, ``redacted`` when already computed.

    ``found`` counts the secrets ``redacted`` replaced, by kind. For a diagnostic message,
    ``raw`` is the collapsed window the message is cut from.
    """

    raw: str
    redacted: str | None = None
    found: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Checked:
    """What one collect came to, as plain data the caller's thread can assemble at once.

    ``failure`` is ``(kind, message)`` when the contribution is left out; ``notes`` are the
    provider's own diagnostics (relayed even when the contribution fails); ``entries`` are
    ``(field, name, value)`` with field 0 facts, 1 head, 2 tail, validated and normalised
    by the core; ``size`` is the UTF-8 byte count the bound applies to, and ``bound`` the
    bound it was read under.
    """

    bound: int
    failure: tuple[str, Text] | None = None
    notes: tuple[tuple[str, Text], ...] = ()
    entries: tuple[tuple[int, str, Text], ...] = ()
    size: int = 0


class _TooLarge(Exception):
    pass


class _Late(Exception):
    pass


# Only a build that joined the collect late can see this: the one that started it stopped
# waiting at the deadline the reading stopped at.
_LATE_MESSAGE = "still being read when the deadline of the build that started it passed"
_LATE = ("timeout", Text(_LATE_MESSAGE, _LATE_MESSAGE))


def check(outcome: tuple[bool, object], bound: int, redact: bool, deadline: float) -> Checked:
    """Read ``outcome`` (``(True, returned)`` or ``(False, raised)``) into :class:`Checked`.

    Runs in the worker; never raises. ``bound`` is the provider's byte bound, ``deadline``
    the build's (``time.monotonic()``): past it, reading stops and the (unread) result is a
    timeout the build has already reported.
    """
    try:
        return _check(outcome, bound, redact, deadline)
    except BaseException as error:  # a bug here must not kill the worker or the build
        return Checked(bound, ("invalid", _message(f"contribution refused: {describe(error)}")))


def _check(outcome: tuple[bool, object], bound: int, redact: bool, deadline: float) -> Checked:
    ok, value = outcome
    if not ok:
        return Checked(bound, ("error", _message(describe(value), redact)))
    if value is None:
        return Checked(bound)
    if not isinstance(value, Contribution):
        message = f"collect() returned {_type_name(value)}; expected a Contribution or None"
        return Checked(bound, ("invalid", Text(message, message)))
    try:
        notes = _relay(value, redact, deadline)
    except _Late:
        return Checked(bound, _LATE)
    try:
        fields = _take_entries(value, bound, deadline)
    except _TooLarge:
        message = f"contribution left out: more than the {bound}-byte bound"
        return Checked(bound, ("too-large", Text(message, message)), notes)
    except _Late:
        return Checked(bound, _LATE, notes)
    except BaseException as error:
        return Checked(
            bound, ("invalid", _message(f"contribution refused: {describe(error)}", redact)), notes
        )
    try:
        # The core is the judge of the RunContext rules (types, names, duplicates within
        # the provider, normalisation): what it accepts is plain str.
        checked = RunContext(head_sections=fields[1], facts=fields[0], tail_sections=fields[2])
        size = _byte_count(fields)
    except BaseException as error:
        message = f"contribution refused: {_error_text(error)}"
        return Checked(bound, ("invalid", _message(message, redact)), notes)
    entries: list[tuple[int, str, Text]] = []
    for field, pairs in enumerate((checked.facts, checked.head_sections, checked.tail_sections)):
        for name, text in pairs:
            entries.append((field, name, _redacted(text) if redact else Text(text)))
    return Checked(bound, None, notes, tuple(entries), size)


def resolve(text: Text, redact: bool) -> Text:
    """``text`` with its redaction computed, if ``redact`` and it was not yet."""
    return _redacted(text.raw) if redact and text.redacted is None else text


def describe(error: object) -> str:
    """``raised T: message``, never raising, whatever the exception's ``__str__`` does."""
    return f"raised {_type_name(error)}{_error_text(error, ': ')}"


def _error_text(error: object, prefix: str = "") -> str:
    """The exception's message after ``prefix`` (nothing when it is empty), never raising."""
    try:
        text = str(error)
        text = text if type(text) is str else str.__str__(text)
    except BaseException:  # a __str__ that raises, even SystemExit: say only what it was
        return " (its message could not be read)" if prefix else "(its message could not be read)"
    return prefix + text if text.strip() else ""


_TYPE_NAME = type.__dict__["__name__"]


def _type_name(value: object) -> str:
    # type's own __name__ descriptor: a metaclass may override `__name__` with anything.
    name: str = _TYPE_NAME.__get__(type(value))
    return name


def _redacted(text: str) -> Text:
    replaced, found = redact_text(text)
    return Text(text, replaced, tuple(sorted(found.items())))


def _message(message: str, redact: bool = True) -> Text:
    # Exception texts and provider notes can quote what they read; redact them too. Cut
    # first (with a margin, so a secret across the cut is still recognised): redaction is
    # linear, but a 10 MB exception message would still cost 10 MB of it.
    window = _short(message, _MAX_MESSAGE + _SECRET_MARGIN)
    return Text(window, _short(redact_text(window)[0]) if redact else None)


def message_text(text: Text, redact: bool) -> str:
    """The message a diagnostic shows: redacted (or not) and cut to 300 characters."""
    if redact:
        return text.redacted if text.redacted is not None else _short(redact_text(text.raw)[0])
    return _short(text.raw)


def _relay(
    contribution: Contribution, redact: bool, deadline: float
) -> tuple[tuple[str, Text], ...]:
    """The provider's own diagnostics, bounded in count and length."""
    try:
        notes = contribution.diagnostics
        if type(notes) in (tuple, list) and not notes:
            return ()  # the common case: nothing to relay
        if isinstance(notes, str | bytes) or not isinstance(notes, Iterable):
            raise TypeError(type(notes).__name__)
        pairs = []
        for pair in itertools.islice(notes, _MAX_PROVIDER_DIAGNOSTICS):
            pairs.append(pair)
            if time.monotonic() > deadline:
                raise _Late
    except _Late:
        raise
    except BaseException:
        message = "diagnostics was not a sequence of (kind, message) pairs"
        return (("invalid", Text(message, message)),)
    relayed: list[tuple[str, Text]] = []
    for pair in pairs:
        try:
            parts = tuple(itertools.islice(pair, 3)) if isinstance(pair, tuple | list) else ()
            if len(parts) != 2 or not all(isinstance(part, str) for part in parts):
                raise TypeError
            # str.__str__ gives a plain str, whatever a subclass overrides.
            kind, message = (str.__str__(part) for part in parts)
            relayed.append((_short(kind), _message(message, redact)))
        except BaseException:
            message = "a diagnostic was not a (kind, message) pair of strings"
            relayed.append(("invalid", Text(message, message)))
    return tuple(relayed)


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


def _take_entries(
    contribution: Contribution, bound: int, deadline: float
) -> tuple[_Unchecked, _Unchecked, _Unchecked]:
    """Facts, head and tail as lists, never reading more than ``bound`` characters' worth.

    Each entry counts its names' and values' characters (at least one: a name is never
    empty), and a str has at least as many UTF-8 bytes as characters, so 10 MB of text or an
    endless sequence is refused after ``bound`` characters, without encoding anything. The
    shapes looked at here are only for counting: whether an entry is a valid pair is for
    the core to say.
    """
    total = 0
    taken: list[_Unchecked] = []
    for field, _ in FIELDS:
        entries = getattr(contribution, field)
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise TypeError(
                f"{field}: expected a sequence of (name, value) pairs, got {_type_name(entries)}"
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
            if not plain and time.monotonic() > deadline:
                raise _Late
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
