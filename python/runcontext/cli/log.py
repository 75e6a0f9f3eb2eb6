"""``runcontext log TRANSCRIPT``: what each run of a session was told, and when.

The list shows each run's recording time, the date the agent was told (its ``date`` fact)
where its day differs from the recording date, its digest and message count, and what changed
since the previous run: facts with their old and new values, sections with their old and new
position, size and digest; ``--diff`` adds the text of each changed section as a unified diff,
``--messages`` each run's reply. Filters pick runs by recording time, by told date, by a
fact's value or by a changed section, and ``--last N`` keeps the last N of those. ``--run N``
shows what run N was sent, in order (head, conversation, tail), and its reply.
docs/TRANSCRIPT.md (*runcontext log*) is the specification of all of it.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from fnmatch import fnmatchcase
from typing import Any

from runcontext._core import DEFAULT_MAX_LINE_BYTES, RunContext
from runcontext.cli._commands import summary
from runcontext.cli._session import opened
from runcontext.cli._terminal import JSONLines, json_array, json_text, visible
from runcontext.cli._when import moment
from runcontext.section import Section
from runcontext.transcript import Compaction, Elision, Run, Session, TornTranscriptWarning
from runcontext.transcript._timestamps import parse_time
from runcontext.transcript.changes import changes, edit_summary
from runcontext.transcript.errors import shown_name

# The fact that says which day the agent was told it is (the clock provider's `date`).
DATE_FACT = "date"
# Section digests are shortened to this many hex digits in text (JSON has them in full).
SHORT_DIGEST = 12
# When no run matches, at most this many of the values that do exist are named per filter.
MAX_HINTS = 20
# The day a `date` fact names: its first ten characters, `2026-11-22` in the clock provider's
# `2026-11-22 (Sunday)`, followed by nothing or a space.
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})(?: |$)")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "log",
        help=summary("log"),
        description="List each run of a session transcript: when it was recorded (UTC), the "
        "date the agent was told (its 'date' fact) where that day differs, its context "
        "digest, how many messages it was sent with, and what changed since the previous run "
        "(facts with their values, sections with their position, size and digest). With "
        "--run N, print what run N was sent, in order (head, conversation, tail), and its "
        "reply. Every run's context is rebuilt and its digest verified. Exit status 1 when "
        "filters match no run (the values that exist are named on stderr).",
    )
    parser.add_argument(
        "transcript", help="a session transcript (.jsonl) or postgresql://…?session=ID"
    )
    parser.add_argument("--session", metavar="ID", help="the session id, for a PostgreSQL URI")
    parser.add_argument("--tenant", metavar="T", help="the tenant, for a PostgreSQL URI")
    parser.add_argument(
        "--run",
        type=int,
        metavar="N",
        help="show run N in full: head, conversation and tail as sent, then its reply",
    )
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument(
        "--messages",
        action="store_true",
        help="show each run's reply; with --run N, only the conversation and the reply",
    )
    parts.add_argument(
        "--context",
        action="store_true",
        help="with --run N: only the head and the tail, without the conversation",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="show each changed section's text as a unified diff against the run before "
        "(secrets redacted on both sides)",
    )
    selection = parser.add_argument_group(
        "selecting runs", "Every filter given must hold (a repeated --date or --section: any one)."
    )
    selection.add_argument(
        "--since",
        metavar="WHEN",
        help="only runs recorded at or after WHEN (ISO date or date-time; UTC unless it says)",
    )
    selection.add_argument(
        "--until",
        metavar="WHEN",
        help="only runs recorded at or before WHEN (a date includes that whole day)",
    )
    selection.add_argument(
        "--date",
        action="append",
        default=[],
        metavar="YYYY-MM-DD",
        help="only runs told this date (the day of their 'date' fact; repeat: any)",
    )
    selection.add_argument(
        "--fact",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only runs told this fact with exactly this value (repeat: all must hold)",
    )
    selection.add_argument(
        "--section",
        action="append",
        default=[],
        metavar="NAME",
        help="only runs in which a section NAME was added, removed or changed: its full name, "
        "its name without the provider's prefix (AGENTS.md for instructions:sub/AGENTS.md), "
        "or a glob such as 'instructions:*' (repeat: any)",
    )
    selection.add_argument(
        "--last", type=int, metavar="N", help="only the last N of the runs selected"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write one self-contained HTML page of every run to FILE (timeline, facts over "
        "time, section diffs, token charts) instead of listing",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"refuse a record longer than N bytes (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    selection = _Selection.from_args(args)  # refuse bad arguments before reading anything
    if args.html is not None:  # the page of every run: runcontext.cli.page
        from runcontext.cli.page import write_from_args

        others = selection.active or args.last is not None or args.diff or args.context
        return write_from_args(args, others=others)
    if args.context and args.run is None:
        raise ValueError("--context shows one run's head and tail: pass --run N too")
    if args.run is not None and (selection.active or args.last is not None):
        raise ValueError(
            "--since, --until, --date, --fact, --section and --last select runs to list; "
            "--run N shows one run: use one or the other"
        )
    if args.max_line_bytes < 1:
        raise ValueError(f"--max-line-bytes {args.max_line_bytes}: expected at least 1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TornTranscriptWarning)
        with opened(args) as session:
            anchored = _anchored_head(session)
            runs = session.runs()
            chain = session.chain
            edits = session.edits()
            sent: list[Any] = []
            replies: list[Any] | None = None
            if args.run is not None and not args.context and 1 <= args.run <= len(runs):
                sent = session.messages_at(args.run)
                replies = [None] * (args.run - 1) + [session.reply_to(args.run)]
            elif args.messages and args.run is None:
                replies = [session.reply_to(run.number) for run in runs]
    for warning in caught:
        # A torn last line is worth a note, not a failure: every complete run is listed.
        print(f"runcontext log: warning: {visible(str(warning.message))}", file=sys.stderr)
    # The list shows replies with --messages; --run N shows its reply after what it was sent.
    listing = _Listing(replies if args.run is None else None, edits, diff=args.diff)
    if args.run is not None:
        if not 1 <= args.run <= len(runs):
            span = f"runs 1 to {len(runs)}" if runs else "no runs"
            raise ValueError(
                f"{shown_name(session.store.name)}: no run {args.run}: the transcript has {span}"
            )
        _print_run(args, listing, runs, sent, None if replies is None else replies[-1])
        return 0
    # Changes are always against the run before in the transcript, listed or not. Runs are
    # compared by their sections and facts: no RunContext is built for the list (the core
    # verified each run's digest on open).
    pairs: Iterable[tuple[Run, Run | None]] = zip(runs, [None, *runs], strict=False)
    matched = [pair for pair in pairs if selection.keeps(*pair)] if selection.active else None
    listed = list(pairs) if matched is None else matched
    if args.last is not None:
        listed = listed[-args.last :]
    status = 0
    if matched == []:
        # As grep does: nothing matched is status 1, with what there is to match on stderr.
        print(f"runcontext log: {visible(selection.hint(runs))}", file=sys.stderr, end="")
        status = 1
    if args.json:
        sys.stdout.write(json_array(listing.json_line(*pair) for pair in listed))
        return status
    # One string, written at once: per-run prints cost more than the rest of the listing.
    parts = [listing.text(*pair) for pair in listed]
    shown = len(parts)
    if listed and listed[-1][0].number == len(runs):
        parts += [listing.edit_text(edit) for edit in listing.edits_after(len(runs))]
    if matched is not None:
        trimmed = "" if shown == len(matched) else f"; the last {shown} are shown"
        parts.append(f"{len(matched)} of {len(runs)} runs match{trimmed}\n")
    elif shown < len(runs):
        parts.append(f"the last {shown} of {len(runs)} runs are shown\n")
    parts.append(_billed_summary([current for current, _ in listed]))
    # The anchor: kept elsewhere, it shows a later rewrite of the whole tail (TRANSCRIPT.md).
    parts.append(
        f"chain  {chain}\n" if chain else "chain  none (a version 1 transcript: unchained)\n"
    )
    if anchored is not None:
        parts.append(f"anchored  {anchored[0]} records: the session row holds the same chain\n")
    sys.stdout.write("".join(parts))
    return status


def _print_run(
    args: argparse.Namespace, listing: _Listing, runs: Sequence[Run], sent: list[Any], reply: Any
) -> None:
    """Run ``args.run``: its entry, then what it was sent in order (``sent``, exactly as sent,
    whatever later compactions replaced), then its reply (the parts ``--context`` and
    ``--messages`` keep)."""
    previous = runs[args.run - 2] if args.run > 1 else None
    chosen = runs[args.run - 1]
    context = None if args.messages else chosen.context
    later = listing.later_edits(chosen.number)
    if args.json:
        full = listing.run_json(chosen, previous)
        if context is not None:
            full |= _full_json(context)
        if not args.context:
            full |= {"conversation": sent, "reply": reply}
            if listing.edits:
                full["later_edits"] = later
        _print_json(full)
        return
    text = [listing.text(chosen, previous)]
    if any(later.values()) and not args.context:
        # Said once, in the entry: the messages below stay exactly as they were sent.
        text.append(
            f"  later    {_later_text(later)} recorded after this run replaced part of the "
            "conversation; below is the conversation as this run was sent it\n"
        )
    if context is not None:
        text.append(_part_text("head", context.head_text))
    if not args.context:
        text.append(_messages_text(sent))
    if context is not None:
        text.append(_part_text("tail", context.tail_text))
    if not args.context:
        text.append(_reply_text(chosen, reply))
    sys.stdout.write(visible("".join(text)))


def _later_text(later: Mapping[str, int]) -> str:
    """``2 compactions and 1 elision``."""
    parts = [f"{count} {kind}{'' if count == 1 else 's'}" for kind, count in later.items() if count]
    return " and ".join(parts)


class _Selection:
    """The filters of the list; every one given must hold for a run to be listed."""

    def __init__(
        self,
        since: datetime | None,
        until: datetime | None,
        dates: list[str],
        facts: list[tuple[str, str]],
        sections: list[str],
    ) -> None:
        self.since, self.until, self.dates = since, until, frozenset(dates)
        self.facts, self.sections = facts, sections
        self.matching: dict[str, bool] = {}  # section name: whether a --section matches it

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> _Selection:
        facts = []
        for given in args.fact:
            name, equals, value = given.partition("=")
            if not equals or not name:
                raise ValueError(
                    f"--fact {given!r}: expected NAME=VALUE, such as --fact branch=main"
                )
            facts.append((name, value))
        for given in args.date:
            if _day(given) != given:
                raise ValueError(
                    f"--date {given!r}: expected a day as YYYY-MM-DD, such as --date 2026-12-01 "
                    "(--since and --until take a recording time)"
                )
        for given in args.section:
            if not given:
                raise ValueError("--section '': expected a section name or a glob")
        if args.last is not None and args.last < 1:
            raise ValueError(f"--last {args.last}: expected a number of runs, at least 1")
        since = None if args.since is None else moment("--since", args.since, end=False)
        until = None if args.until is None else moment("--until", args.until, end=True)
        if since is not None and until is not None and since > until:
            raise ValueError(
                f"--since {args.since} is after --until {args.until}: no run can match"
            )
        return cls(since, until, list(args.date), facts, list(args.section))

    @property
    def active(self) -> bool:
        return bool(self.since or self.until or self.dates or self.facts or self.sections)

    def keeps(self, current: Run, previous: Run | None) -> bool:
        if self.since is not None or self.until is not None:
            time = current.time
            if self.since is not None and time < self.since:
                return False
            if self.until is not None and time > self.until:
                return False
        told = dict(current.facts)
        if self.dates:
            value = told.get(DATE_FACT)
            if value is None or _day(value) not in self.dates:
                return False
        if any(told.get(name) != value for name, value in self.facts):
            return False
        if self.sections:
            found = changes(previous, current)["sections"]
            return any(self._matches(name) for verb in found.values() for name in verb)
        return True

    def _matches(self, name: str) -> bool:
        matches = self.matching.get(name)
        if matches is None:
            matches = self.matching[name] = any(
                pattern == form or fnmatchcase(form, pattern)
                for pattern in self.sections
                for form in _name_forms(name)
            )
        return matches

    def hint(self, runs: Sequence[Run]) -> str:
        """What a person needs when no run matched: for each filter given, the values the
        transcript does hold (at most :data:`MAX_HINTS` each), one line each."""
        if not runs:
            return "no run matches: the transcript has no runs\n"
        lines = [f"no run matches: none of the {len(runs)} runs passes every filter given"]
        if self.since is not None or self.until is not None:
            first, last = _time(runs[0].timestamp), _time(runs[-1].timestamp)
            lines.append(f"  recorded (--since, --until): from {first} to {last}")
        if self.dates:
            days = [_day(v) or v for r in runs for n, v in r.facts if n == DATE_FACT]
            told = _listed(days) if days else f"no run has a '{DATE_FACT}' fact"
            lines.append(f"  told dates (--date): {told}")
        for name in dict.fromkeys(name for name, _ in self.facts):
            values = [v for r in runs for n, v in r.facts if n == name]
            if values:
                lines.append(f"  values of fact {_shown(name)} (--fact): {_listed(values)}")
            else:
                facts = _listed([n for r in runs for n, _ in r.facts]) or "none"
                lines.append(f"  no run has a fact {_shown(name)}; the facts are: {facts}")
        if self.sections:
            sections = [s.name for r in runs for s in r.sections]
            shown = _listed(sections) if sections else "none: no run has a section"
            lines.append(f"  section names (--section): {shown}")
        return "\n".join(lines) + "\n"


def _listed(values: Iterable[str]) -> str:
    """Distinct ``values`` in the order first seen, each on one line, at most
    :data:`MAX_HINTS` of them, and how many more there are."""
    distinct = list(dict.fromkeys(values))
    shown = ", ".join(_shown(value) for value in distinct[:MAX_HINTS])
    more = len(distinct) - MAX_HINTS
    return shown + (f" (and {more} more)" if more > 0 else "")


def _name_forms(name: str) -> tuple[str, ...]:
    """What ``--section`` compares with a section name: the name, the part after a provider's
    prefix (``sub/AGENTS.md`` of ``instructions:sub/AGENTS.md``), and its last path part."""
    prefix, colon, rest = name.partition(":")
    short = rest if colon and prefix and rest else name
    return (name, short, short.rpartition("/")[2])


def _day(value: str) -> str | None:
    """The day a ``date`` fact names, ``YYYY-MM-DD`` (the clock provider writes
    ``2026-11-22 (Sunday)``), or ``None`` when it does not start with a valid day."""
    match = _DAY.match(value)
    if match is None:
        return None
    try:
        date.fromisoformat(match.group(1))
    except ValueError:  # 2026-13-01, 2026-02-30
        return None
    return match.group(1)


def _anchored_head(session: Session) -> tuple[int, str] | None:
    """A store that anchors its last record's chain apart from the records (the PostgreSQL
    session row): that anchor, checked against the records read; ``None`` for a file."""
    head = getattr(session.store, "head", None)
    if head is None:
        return None
    for _ in range(3):  # a writer may commit between reading the records and the anchor
        records, chain = head()
        if chain == session.chain:
            return records, chain
        session.refresh()
    raise ValueError(
        f"{shown_name(session.store.name)}: the records end with chain {session.chain}, but "
        f"the session row anchors {chain} after {records} records: records were removed or "
        "rewritten"
    )


class _Shown(dict[str, str]):
    """Each distinct name and value made fit for the output once: a long transcript repeats
    them run after run (the value a fact changes to is the old value of its next change)."""

    __slots__ = ("show",)

    def __init__(self, show: Callable[[str], str]) -> None:
        super().__init__()
        self.show = show

    def __missing__(self, text: str) -> str:
        shown = self[text] = self.show(text)
        return shown


def _one_line(text: str) -> str:
    # A fact's value may hold line breaks; shown raw, one could forge a "run N" line (the other
    # controls, carriage return included, are escaped by `visible` on the way out).
    return text.replace("\n", "\\n")


def _shown(text: str) -> str:
    """A name or value as the text shows it: on one line, every invisible or control
    character made visible."""
    if text.isascii() and text.isprintable():  # no line break, tab or _controls.RANGES
        return text
    return visible(_one_line(text))


class _Listing:
    """Each run's entry in the list, in text or JSON, from the run and the one before.

    Names and values are escaped where they go in (``_shown`` for text, JSON's escapes), each
    distinct one once; the rest of an entry is numbers and forms the core checked
    (timestamps, digests, head or tail, the ``tokens`` member), which hold no control
    character. What changed is :func:`~runcontext.transcript.changes.changes`. With
    ``messages`` (the session's), each entry adds the run's reply; with ``diff``, each changed
    section's text as a unified diff.
    """

    def __init__(
        self,
        replies: Sequence[Any] | None,
        edits: Sequence[Compaction | Elision],
        *,
        diff: bool,
    ) -> None:
        self.sizes: dict[str, int] = {}  # section digest: UTF-8 bytes of its text
        self.text_of = _Shown(_shown)
        self.days: dict[str, str | None] = {}  # a date fact's value: its day
        self.replies = replies  # each run's reply, by run number - 1 (with --messages)
        self.edits = edits
        # The compactions and elisions recorded after each run (0: before the first).
        self.after: dict[int, list[Compaction | Elision]] = {}
        for found in edits:
            self.after.setdefault(found.after_run, []).append(found)
        self.diff = diff
        self.diffs: dict[tuple[str, str], list[str]] = {}  # (old, new) digest: diff lines
        self.json = JSONLines()

    def _size(self, section: Section) -> int:
        size = self.sizes.get(section.digest)
        if size is None:
            size = self.sizes[section.digest] = len(section.text.encode("utf-8"))
        return size

    def _told(self, current: Run, recorded: str) -> str | None:
        """The run's ``date`` fact where its day is not ``recorded`` (``YYYY-MM-DD``); a value
        that names no day is always shown."""
        told = _told(current.facts)
        if told is None:
            return None
        if told not in self.days:
            self.days[told] = _day(told)
        return None if self.days[told] == recorded else told

    def _diff_lines(self, before: Section, after: Section) -> list[str]:
        """The unified diff of two texts of a section, each redacted as the providers redact
        (a diff of a secret's removal must not print the secret), and its label lines."""
        key = (before.digest, after.digest)
        found = self.diffs.get(key)
        if found is None:
            found = self.diffs[key] = _unified_diff(before, after)
        return found

    # --- text -------------------------------------------------------------------------------

    def text(self, current: Run, previous: Run | None) -> str:
        """The run's lines: its head, its token counts, what changed, and its reply."""
        time = current.timestamp
        told = self._told(current, time[:10])  # time[:10] is the recording date
        when = _time(time)
        if told is not None:
            when += f"  told {self.text_of[told]}"
        count = current.messages
        head = (
            f"run {current.number}  {when}  {current.digest}  "
            f"{count} message{'' if count == 1 else 's'}\n"
        )
        lines = self._change_lines(previous, current)
        if not lines:
            lines.append("  (no context)" if previous is None else "  unchanged")
        lines[:0] = _tokens_lines(current.tokens)
        if self.replies is not None:
            lines += _reply_lines(current, self.replies[current.number - 1])
        edits = "".join(self.edit_text(found) for found in self.edits_after(current.number - 1))
        return edits + head + "\n".join(lines) + "\n"

    # --- compactions and elisions -------------------------------------------------------------

    def edits_after(self, run: int) -> list[Compaction | Elision]:
        """The compactions and elisions recorded after run ``run`` and before the next."""
        return self.after.get(run, [])

    def later_edits(self, run: int) -> dict[str, int]:
        """How many compactions and elisions were recorded after run ``run``."""
        later = [found for found in self.edits if found.after_run >= run]
        compactions = sum(isinstance(found, Compaction) for found in later)
        return {"compaction": compactions, "elision": len(later) - compactions}

    @staticmethod
    def edit_text(found: Compaction | Elision) -> str:
        """One line for a compaction or an elision, between the runs it came between."""
        kind = "elision" if isinstance(found, Elision) else "compaction"
        return f"{kind}  {_time(found.timestamp)}  {edit_summary(found)}\n"

    @staticmethod
    def edit_json(found: Compaction | Elision) -> dict[str, Any]:
        if isinstance(found, Elision):
            return {"kind": "elision", "time": found.timestamp, "indices": list(found.indices)}
        tokens = None
        if found.tokens_before is not None:
            tokens = {
                "before": found.tokens_before,
                "after": found.tokens_after,
                "quality": found.quality,
            }
        return {
            "kind": "compaction",
            "time": found.timestamp,
            "start": found.start,
            "end": found.end,
            "replaced": found.replaced,
            "messages": found.messages,
            "mode": found.mode,
            "tokens": tokens,
        }

    def _change_lines(self, previous: Run | None, current: Run) -> list[str]:
        shown = self.text_of
        found = changes(previous, current)
        before_facts = {} if previous is None else dict(previous.facts)
        after_facts = dict(current.facts)
        before_sections, after_sections = _sections(previous), _sections(current)
        lines = []
        for verb in ("added", "removed", "changed"):
            for name in found["sections"][verb]:
                if verb == "added":
                    text = self._section_text(after_sections[name])
                elif verb == "removed":
                    text = self._section_text(before_sections[name])
                else:
                    text = (
                        f"{self._section_text(before_sections[name])} → "
                        f"{self._section_text(after_sections[name])}"
                    )
                lines.append(f"  {verb:<8} section {shown[name]}: {text}")
                if verb == "changed" and self.diff:
                    diff = self._diff_lines(before_sections[name], after_sections[name])
                    lines += [f"    {visible(line)}" for line in diff]
            for name in found["facts"][verb]:
                if verb == "added":
                    text = shown[after_facts[name]]
                elif verb == "removed":
                    text = shown[before_facts[name]]
                else:
                    text = f"{shown[before_facts[name]]} → {shown[after_facts[name]]}"
                lines.append(f"  {verb:<8} fact {shown[name]}: {text}")
        return lines

    def _section_text(self, section: Section) -> str:
        digest = section.digest
        return (
            f"{section.position} {self._size(section)} B {digest[: len('blake3:') + SHORT_DIGEST]}"
        )

    # --- JSON -------------------------------------------------------------------------------

    def json_line(self, current: Run, previous: Run | None) -> str:
        return self.json.line(self.run_json(current, previous))

    def run_json(self, current: Run, previous: Run | None) -> dict[str, Any]:
        shown = {
            # "run" is Run.number, as the transcript's run records call it (TRANSCRIPT.md).
            "run": current.number,
            "time": current.timestamp,  # the recorded form: Run.time's isoformat, with Z
            "date": _told(current.facts),
            "digest": current.digest,
            "messages": current.messages,
            # The run's `tokens` record as written (TRANSCRIPT.md), or null.
            "tokens": None if current.tokens is None else dict(current.tokens),
            "changes": self._changes_json(previous, current),
        }
        if self.edits:
            # The compactions and elisions recorded since the run before (TRANSCRIPT.md); a
            # transcript without any keeps the shape it always had.
            shown["edits"] = [
                self.edit_json(found) for found in self.edits_after(current.number - 1)
            ]
        if self.replies is not None:
            shown["reply"] = self.replies[current.number - 1]
        return shown

    def _changes_json(self, previous: Run | None, current: Run) -> dict[str, Any]:
        found = changes(previous, current)
        before_facts = {} if previous is None else dict(previous.facts)
        after_facts = dict(current.facts)
        before_sections, after_sections = _sections(previous), _sections(current)
        facts, sections = found["facts"], found["sections"]
        return {
            "facts": {
                "added": [{"name": n, "value": after_facts[n]} for n in facts["added"]],
                "removed": [{"name": n, "value": before_facts[n]} for n in facts["removed"]],
                "changed": [
                    {"name": n, "old": before_facts[n], "new": after_facts[n]}
                    for n in facts["changed"]
                ],
            },
            "sections": {
                "added": [
                    {"name": n} | self._section_json(after_sections[n]) for n in sections["added"]
                ],
                "removed": [
                    {"name": n} | self._section_json(before_sections[n])
                    for n in sections["removed"]
                ],
                "changed": [
                    self._changed_json(n, before_sections[n], after_sections[n])
                    for n in sections["changed"]
                ],
            },
        }

    def _changed_json(self, name: str, before: Section, after: Section) -> dict[str, Any]:
        changed = {
            "name": name,
            "old": self._section_json(before),
            "new": self._section_json(after),
        }
        if self.diff:
            changed["diff"] = "".join(line + "\n" for line in self._diff_lines(before, after))
        return changed

    def _section_json(self, section: Section) -> dict[str, Any]:
        return {
            "position": section.position,
            "bytes": self._size(section),
            "digest": section.digest,
        }


def _sections(run: Run | None) -> dict[str, Section]:
    return {} if run is None else {section.name: section for section in run.sections}


def _told(facts: tuple[tuple[str, str], ...]) -> str | None:
    """The date the agent was told: the value of the run's ``date`` fact, if it has one."""
    for name, value in facts:
        if name == DATE_FACT:
            return value
    return None


def _unified_diff(before: Section, after: Section) -> list[str]:
    """The lines of the unified diff from ``before``'s text to ``after``'s, both redacted;
    none when only the position changed."""
    from difflib import unified_diff  # here: only --diff needs it

    from runcontext.providers.redact import redact

    if before.text == after.text:
        return []
    old, new = redact(before.text)[0], redact(after.text)[0]
    return list(
        unified_diff(
            _lines(old),
            _lines(new),
            f"{_one_line(before.name)} ({before.position}, before)",
            f"{_one_line(after.name)} ({after.position}, this run)",
            lineterm="",
        )
    )


def _lines(text: str) -> list[str]:
    """``text`` split at ``\n`` only: ``str.splitlines`` also splits at CR, U+2028 and other
    separators, which would then vanish from the diff (a CR in a line is shown as ``\x0d``)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _time(time: str) -> str:
    """A recorded timestamp (``2026-12-02T03:59:56.436428Z``) as ``%Y-%m-%d %H:%M:%SZ``, by
    slicing from the year 1000 on; before it, as strftime gives it (without padding the
    year to four digits, as the list always has)."""
    if time[0] == "0":
        return parse_time(time).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{time[:10]} {time[11:19]}Z"


def _tokens_lines(tokens: Mapping[str, Any] | None) -> list[str]:
    """The run's request size, the context's share of it, the budget's headroom and what was
    billed, from the run's ``tokens`` record (the core checked its form)."""
    if tokens is None:
        return []
    total = sum(tokens[part] for part in ("head", "conversation", "tail", "tools"))
    context = tokens["head"] + tokens["tail"]
    share = f"{100 * context / total:.0f}%" if total else "-"
    line = (
        f"  tokens   {total:,} ({tokens['quality']}): context {context:,} ({share}; head "
        f"{tokens['head']:,}, tail {tokens['tail']:,}), conversation "
        f"{tokens['conversation']:,}, tools {tokens['tools']:,}"
    )
    if "limit" in tokens:
        room = tokens["limit"] - total
        line += f"; limit {tokens['limit']:,}, " + (
            f"headroom {room:,}" if room >= 0 else f"over by {-room:,}"
        )
    lines = [line]
    billed = tokens.get("billed")
    if billed is not None:
        output = "" if "output" not in billed else f", {billed['output']:,} output"
        lines.append(
            f"  billed   {billed['input']:,} input: {_cached(billed, 'cache_read')} read from "
            f"the cache, {_cached(billed, 'cache_write')} written to it{output}"
        )
    return lines


def _cached(billed: Mapping[str, Any], part: str) -> str:
    """A part of the billed input with its share: ``256 (25%)``."""
    share = "-" if not billed["input"] else f"{billed[part] / billed['input']:.0%}"
    return f"{billed[part]:,} ({share})"


def _billed_summary(runs: Sequence[Run]) -> str:
    """What the provider billed over ``runs``: input tokens and the shares read from and
    written to its prompt cache (the figure that says whether caching works), or ``""`` when
    no run was billed."""
    billed = [run.tokens["billed"] for run in runs if run.tokens and "billed" in run.tokens]
    if not billed:
        return ""
    total = sum(bill["input"] for bill in billed)
    read = sum(bill["cache_read"] for bill in billed)
    written = sum(bill["cache_write"] for bill in billed)

    def share(part: int) -> str:
        return "-" if not total else f"{part / total:.1%}"

    return (
        f"billed  {len(billed)} of {len(runs)} runs: {total:,} input tokens, {share(read)} read "
        f"from the cache, {share(written)} written to it\n"
    )


def _role(message: Any) -> str | None:
    role = message.get("role", message.get("type")) if isinstance(message, dict) else None
    return None if role is None else _one_line(str(role))


def _reply_lines(run: Run, reply: Any) -> list[str]:
    """The reply in the list: a label, then the message as indented JSON, indented."""
    if reply is None:
        return ["  reply    none recorded"]
    role = _role(reply)
    label = f"  reply    message {run.messages}" + ("" if role is None else f": {role}")
    return [label, *(f"    {visible(line)}" for line in json_text(reply).splitlines())]


def _part_text(label: str, text: str | None) -> str:
    # "head" and "tail", not "before message 0" / "after message N": where each one went
    # depends on the adapter (Anthropic's system blocks, a tail before a prefill, Responses
    # instructions), which the transcript does not record.
    return f"\n=== {label}: none ===\n" if text is None else f"\n=== {label} ===\n{text}\n"


def _messages_text(messages: Sequence[Any], start: int = 0, label: str = "message") -> str:
    # Each message as the transcript holds it, as indented JSON: content blocks, tool calls and
    # provider fields stay visible, and no message text can pass for a heading.
    parts = []
    for index, message in enumerate(messages, start):
        role = _role(message)
        heading = f"{label} {index}" + ("" if role is None else f": {role}")
        parts.append(f"\n=== {heading} ===\n{json_text(message)}\n")
    return "".join(parts)


def _reply_text(run: Run, reply: Any) -> str:
    if reply is None:
        return "\n=== reply: none recorded ===\n"
    return _messages_text([reply], run.messages, "reply: message")


def _full_json(context: RunContext) -> dict[str, Any]:
    return {
        "head": context.head_text,
        "tail": context.tail_text,
        "sections": [
            {"position": s.position, "name": s.name, "digest": s.digest} for s in context.sections
        ],
        "facts": [list(fact) for fact in context.facts],
    }


def _print_json(value: object) -> None:
    print(json_text(value))
