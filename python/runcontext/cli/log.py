"""``runcontext log TRANSCRIPT``: what each run of a session was told, and when.

The list shows each run's recording time, the date the agent was told (its ``date`` fact) where
that differs, its digest and message count, and what changed since the previous run: facts
with their old and new values, sections with their old and new position, size and digest.
Filters pick runs by recording time, by a fact's value or by a changed section; ``--run N``
shows one run's head and tail, ``--run N --messages`` the conversation it was sent with.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from functools import cached_property

from runcontext._core import DEFAULT_MAX_LINE_BYTES, RunContext
from runcontext.cli._commands import summary
from runcontext.cli._terminal import JSONLines, json_array, json_text, visible
from runcontext.section import Section
from runcontext.transcript import Run, Session, TornTranscriptWarning
from runcontext.transcript._records import parse_time
from runcontext.transcript.changes import changes
from runcontext.transcript.errors import shown_name

TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime
    from typing import Any

# The fact that says which day the agent was told it is (the default providers' `date`).
DATE_FACT = "date"
# Section digests are shortened to this many hex digits in text (JSON has them in full).
SHORT_DIGEST = 12


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "log",
        help=summary("log"),
        description="List each run of a session transcript: when it was recorded (UTC), the "
        "date the agent was told (its 'date' fact) where that differs, its context digest, "
        "how many messages it was sent with, and what changed since the previous run (facts "
        "with their values, sections with their position, size and digest). With --run N, "
        "print that run's head and tail exactly as sent; with --run N --messages, the "
        "conversation it was sent with. Every run's context is rebuilt and its digest verified.",
    )
    parser.add_argument(
        "transcript", help="a session transcript (.jsonl) or postgresql://…?session=ID"
    )
    parser.add_argument("--session", metavar="ID", help="the session id, for a PostgreSQL URI")
    parser.add_argument("--tenant", metavar="T", help="the tenant, for a PostgreSQL URI")
    parser.add_argument("--run", type=int, metavar="N", help="show run N in full")
    parser.add_argument(
        "--messages",
        action="store_true",
        help="with --run N: print the messages run N was sent with, instead of head and tail",
    )
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="only runs recorded at or after WHEN (ISO date or date-time; UTC unless it says)",
    )
    parser.add_argument(
        "--until",
        metavar="WHEN",
        help="only runs recorded at or before WHEN (a date includes that whole day)",
    )
    parser.add_argument(
        "--fact",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only runs told this fact with exactly this value (repeat: all must hold)",
    )
    parser.add_argument(
        "--section",
        action="append",
        default=[],
        metavar="NAME",
        help="only runs in which this section was added, removed or changed (repeat: any)",
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

        return write_from_args(args, others=selection.active)
    if args.messages and args.run is None:
        raise ValueError("--messages shows one run's conversation: pass --run N too")
    if args.run is not None and selection.active:
        raise ValueError(
            "--since, --until, --fact and --section select runs to list; --run N shows one "
            "run: use one or the other"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TornTranscriptWarning)
        try:
            session = Session.open(
                args.transcript,
                writable=False,
                max_line_bytes=args.max_line_bytes,
                session_id=args.session,
                tenant=args.tenant,
            )
        except ImportError as error:  # a postgresql:// URI without the postgres extra
            raise ValueError(str(error)) from None
        with session:
            anchored = _anchored_head(session)
            runs = session.runs()
            chain = session.chain
            messages = session.messages() if args.messages else []
    for warning in caught:
        # A torn last line is worth a note, not a failure: every complete run is listed.
        print(f"runcontext log: warning: {visible(str(warning.message))}", file=sys.stderr)
    listing = _Listing()
    if args.run is not None:
        if not 1 <= args.run <= len(runs):
            span = f"runs 1 to {len(runs)}" if runs else "no runs"
            raise ValueError(
                f"{shown_name(session.store.name)}: no run {args.run}: the transcript has {span}"
            )
        previous = runs[args.run - 2] if args.run > 1 else None
        chosen = runs[args.run - 1]
        context = chosen.context
        sent = messages[: chosen.messages]
        if args.json:
            extra = {"conversation": sent} if args.messages else _full_json(context)
            _print_json(listing.run_json(chosen, previous) | extra)
        else:
            print(listing.text(chosen, previous), end="")
            print(visible(_messages_text(sent) if args.messages else _full_text(context)), end="")
        return 0
    # Changes are always against the run before in the transcript, listed or not. Runs are
    # compared by their sections and facts: no RunContext is built for the list (the core
    # verified each run's digest on open).
    pairs = zip(runs, [None, *runs], strict=False)  # each run with the one before
    listed = [pair for pair in pairs if selection.keeps(*pair)] if selection.active else pairs
    if args.json:
        sys.stdout.write(json_array(listing.json_line(*pair) for pair in listed))
        return 0
    # One string, written at once: per-run prints cost more than the rest of the listing.
    parts = [listing.text(*pair) for pair in listed]
    if selection.active:
        parts.append(f"{len(parts)} of {len(runs)} runs match\n")
    # The anchor: kept elsewhere, it shows a later rewrite of the whole tail (TRANSCRIPT.md).
    parts.append(
        f"chain  {chain}\n" if chain else "chain  none (a version 1 transcript: unchained)\n"
    )
    if anchored is not None:
        parts.append(f"anchored  {anchored[0]} records: the session row holds the same chain\n")
    sys.stdout.write("".join(parts))
    return 0


class _Selection:
    """The filters of the list; every one given must hold for a run to be listed."""

    def __init__(
        self,
        since: datetime | None,
        until: datetime | None,
        facts: list[tuple[str, str]],
        sections: list[str],
    ) -> None:
        self.since, self.until, self.facts, self.sections = since, until, facts, sections

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> _Selection:
        facts = []
        for given in args.fact:
            name, equals, value = given.partition("=")
            if not equals or not name:
                raise ValueError(
                    f"--fact {given!r}: expected NAME=VALUE, such as --fact date=2026-12-01"
                )
            facts.append((name, value))
        since = None if args.since is None else _moment("--since", args.since, end=False)
        until = None if args.until is None else _moment("--until", args.until, end=True)
        if since is not None and until is not None and since > until:
            raise ValueError(
                f"--since {args.since} is after --until {args.until}: no run can match"
            )
        return cls(since, until, facts, list(args.section))

    @property
    def active(self) -> bool:
        return bool(self.since or self.until or self.facts or self.sections)

    def keeps(self, current: Run, previous: Run | None) -> bool:
        if self.since is not None or self.until is not None:
            time = current.time
            if self.since is not None and time < self.since:
                return False
            if self.until is not None and time > self.until:
                return False
        told = dict(current.facts)
        if any(told.get(name) != value for name, value in self.facts):
            return False
        if self.sections:
            found = changes(previous, current)["sections"]
            touched = {name for verb in found.values() for name in verb}
            return any(name in touched for name in self.sections)
        return True


def _moment(option: str, text: str, *, end: bool) -> datetime:
    """An ISO date (the whole day, UTC) or date-time (UTC when it names no offset)."""
    from datetime import UTC, date, datetime, timedelta

    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1, microseconds=-1) if end else start
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{option} {text!r}: expected an ISO date (2026-12-01) or date-time "
            "(2026-12-01T09:30:00Z)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


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
    character. What changed is :func:`~runcontext.transcript.changes.changes`.
    """

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}  # section digest: UTF-8 bytes of its text
        self.text_of = _Shown(_shown)

    def _size(self, section: Section) -> int:
        size = self.sizes.get(section.digest)
        if size is None:
            size = self.sizes[section.digest] = len(section.text.encode("utf-8"))
        return size

    # --- text -------------------------------------------------------------------------------

    def text(self, current: Run, previous: Run | None) -> str:
        """The run's lines: its head, its token counts, what changed."""
        time = current.timestamp
        told = _told(current.facts)
        when = _time(time)
        if told is not None and told != time[:10]:  # time[:10] is the recording date
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
        return head + "\n".join(lines) + "\n"

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

    @cached_property
    def json(self) -> JSONLines:  # made for JSON output only: it imports json
        return JSONLines()

    def json_line(self, current: Run, previous: Run | None) -> str:
        return self.json.line(self.run_json(current, previous))

    def run_json(self, current: Run, previous: Run | None) -> dict[str, Any]:
        return {
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
                    {
                        "name": n,
                        "old": self._section_json(before_sections[n]),
                        "new": self._section_json(after_sections[n]),
                    }
                    for n in sections["changed"]
                ],
            },
        }

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
            f"  billed   {billed['input']:,} input ({billed['cache_read']:,} read from the cache, "
            f"{billed['cache_write']:,} written to it){output}"
        )
    return lines


def _full_text(context: RunContext) -> str:
    # "head" and "tail", not "before message 0" / "after message N": where each one went
    # depends on the adapter (Anthropic's system blocks, a tail before a prefill, Responses
    # instructions), which the transcript does not record.
    parts = []
    for label, text in (("head", context.head_text), ("tail", context.tail_text)):
        parts.append(
            f"\n=== {label}: none ===\n" if text is None else f"\n=== {label} ===\n{text}\n"
        )
    return "".join(parts)


def _messages_text(messages: Sequence[Any]) -> str:
    # Each message as the transcript holds it, as indented JSON: content blocks, tool calls and
    # provider fields stay visible, and no message text can pass for a heading.
    parts = []
    for index, message in enumerate(messages):
        role = message.get("role", message.get("type")) if isinstance(message, dict) else None
        label = f"message {index}" + ("" if role is None else f": {_one_line(str(role))}")
        parts.append(f"\n=== {label} ===\n{json_text(message)}\n")
    return "".join(parts)


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
