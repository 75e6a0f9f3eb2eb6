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
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from runcontext._core import RunContext
from runcontext.cli._commands import summary
from runcontext.cli._terminal import json_records, json_text, visible
from runcontext.section import Section
from runcontext.transcript import Run, Session, TornTranscriptWarning
from runcontext.transcript.changes import changes
from runcontext.transcript.store import DEFAULT_MAX_LINE_BYTES

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
        "--max-line-bytes",
        type=int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"refuse a record longer than N bytes (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    selection = _Selection.from_args(args)  # refuse bad arguments before reading anything
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
    if args.run is not None:
        if not 1 <= args.run <= len(runs):
            span = f"runs 1 to {len(runs)}" if runs else "no runs"
            raise ValueError(f"{args.transcript}: no run {args.run}: the transcript has {span}")
        previous = runs[args.run - 2] if args.run > 1 else None
        chosen = runs[args.run - 1]
        sent = messages[: chosen.messages]
        if args.json:
            extra = {"conversation": sent} if args.messages else _full_json(chosen)
            _print_json(_run_json(chosen, previous) | extra)
        else:
            print(visible(_run_text(chosen, previous)), end="")
            print(visible(_messages_text(sent) if args.messages else _full_text(chosen)), end="")
        return 0
    # Changes are always against the run before in the transcript, listed or not. Runs are
    # compared by their sections and facts: no RunContext is built for the list (the core
    # verified each run's digest on open).
    pairs = zip(runs, [None, *runs], strict=False)  # each run with the one before
    listed = [pair for pair in pairs if selection.keeps(*pair)] if selection.active else pairs
    if args.json:
        # One run per line: json.dumps with indent= runs the pure-Python encoder, several
        # times slower than this on a long transcript (TRANSCRIPT.md, "runcontext log").
        sys.stdout.write(
            json_records(_run_json(recorded, previous) for recorded, previous in listed)
        )
        return 0
    # One string, escaped in one pass and written at once: per-run prints cost more than the
    # rest of the listing.
    parts = [_run_text(recorded, previous) for recorded, previous in listed]
    if selection.active:
        parts.append(f"{len(parts)} of {len(runs)} runs match\n")
    # The anchor: kept elsewhere, it shows a later rewrite of the whole tail (TRANSCRIPT.md).
    parts.append(
        f"chain  {chain}\n" if chain else "chain  none (a version 1 transcript: unchained)\n"
    )
    if anchored is not None:
        parts.append(f"anchored  {anchored[0]} records: the session row holds the same chain\n")
    sys.stdout.write(visible("".join(parts)))
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

    def keeps(self, recorded: Run, previous: Run | None) -> bool:
        if self.since is not None and recorded.time < self.since:
            return False
        if self.until is not None and recorded.time > self.until:
            return False
        told = dict(recorded.facts)
        if any(told.get(name) != value for name, value in self.facts):
            return False
        if self.sections:
            found = _changes(previous, recorded)["sections"]
            touched = {name for verb in found.values() for name in verb}
            return any(name in touched for name in self.sections)
        return True


def _moment(option: str, text: str, *, end: bool) -> datetime:
    """An ISO date (the whole day, UTC) or date-time (UTC when it names no offset)."""
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
        f"{session.store.name}: the records end with chain {session.chain}, but the session "
        f"row anchors {chain} after {records} records: records were removed or rewritten"
    )


def _value_changes(previous: Run | None, current: Run) -> list[tuple[str, str, str]] | None:
    """The case of most runs of a long session, without ``changes``'s name maps: the same
    sections as the run before (tuples, shared when equal) and the same fact names in the same
    order, some values new. Those facts as ``(name, old, new)`` (none when nothing changed);
    ``None`` in any other case. A context's fact names are distinct, so this is ``changes``."""
    if previous is None or previous.sections != current.sections:
        return None
    before, after = previous.facts, current.facts
    if len(before) != len(after):
        return None
    found = []
    for (name, old), (same, new) in zip(before, after, strict=True):
        if name != same:
            return None
        if old != new:
            found.append((name, old, new))
    return found


def _changes(previous: Run | None, current: Run) -> dict[str, dict[str, list[str]]]:
    """``changes``, through :func:`_value_changes` where it applies."""
    quick = _value_changes(previous, current)
    if quick is None:
        return changes(previous, current)
    changed = [name for name, _, _ in quick]
    return {"sections": _none(), "facts": {"added": [], "removed": [], "changed": changed}}


def _none() -> dict[str, list[str]]:
    return {"added": [], "removed": [], "changed": []}


def told_date(context: RunContext | Run) -> str | None:
    """The date the agent was told: the value of the context's ``date`` fact, if it has one."""
    return dict(context.facts).get(DATE_FACT)


def _one_line(text: str) -> str:
    # A fact's value may hold line breaks; shown raw, one could forge a "run N" line (the other
    # controls, carriage return included, are escaped by `visible` on the way out).
    return text.replace("\n", "\\n")


def _section_text(section: Section) -> str:
    size = len(section.text.encode("utf-8"))
    return f"{section.position} {size} B {section.digest[: len('blake3:') + SHORT_DIGEST]}"


def _change_lines(previous: Run | None, current: Run) -> list[str]:
    quick = _value_changes(previous, current)
    if quick is not None:
        return [
            f"  changed  fact {_one_line(name)}: {_one_line(old)} → {_one_line(new)}"
            for name, old, new in quick
        ]
    found = changes(previous, current)
    before_facts = {} if previous is None else dict(previous.facts)
    after_facts = dict(current.facts)
    before_sections = {} if previous is None else {s.name: s for s in previous.sections}
    after_sections = {s.name: s for s in current.sections}
    lines = []
    for verb in ("added", "removed", "changed"):
        for name in found["sections"][verb]:
            if verb == "added":
                shown = _section_text(after_sections[name])
            elif verb == "removed":
                shown = _section_text(before_sections[name])
            else:
                shown = (
                    f"{_section_text(before_sections[name])} → "
                    f"{_section_text(after_sections[name])}"
                )
            lines.append(f"  {verb:<8} section {_one_line(name)}: {shown}")
        for name in found["facts"][verb]:
            if verb == "added":
                shown = _one_line(after_facts[name])
            elif verb == "removed":
                shown = _one_line(before_facts[name])
            else:
                shown = f"{_one_line(before_facts[name])} → {_one_line(after_facts[name])}"
            lines.append(f"  {verb:<8} fact {_one_line(name)}: {shown}")
    return lines


def _run_text(recorded: Run, previous: Run | None) -> str:
    told = told_date(recorded)
    when = _time(recorded)
    # when[:10] is the recording date but before the year 1000 (see _time)
    if told is not None and told != (
        when[:10] if len(when) == 20 else recorded.time.date().isoformat()
    ):
        when += f"  told {_one_line(told)}"
    count = recorded.messages
    head = f"run {recorded.number}  {when}  {recorded.digest}  {count} message"
    lines = _change_lines(previous, recorded)
    if recorded.tokens is not None:
        lines[:0] = _tokens_lines(recorded.tokens)
    if len(lines) == (recorded.tokens is not None):  # no change: the counts' line at most
        lines.append("  (no context)" if previous is None else "  unchanged")
    return f"{head}{'' if count == 1 else 's'}\n" + "\n".join(lines) + "\n"


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


def _full_text(recorded: Run) -> str:
    # "head" and "tail", not "before message 0" / "after message N": where each one went
    # depends on the adapter (Anthropic's system blocks, a tail before a prefill, Responses
    # instructions), which the transcript does not record.
    context = recorded.context
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


def _time(recorded: Run) -> str:
    """``%Y-%m-%d %H:%M:%SZ``: isoformat is several times faster than strftime, and the same
    text from the year 1000 on (strftime does not pad the year to four digits)."""
    moment = recorded.time
    if moment.year < 1000:
        return moment.strftime("%Y-%m-%d %H:%M:%SZ")
    return moment.isoformat(" ", "seconds")[:19] + "Z"


def _section_json(section: Section) -> dict[str, Any]:
    return {
        "position": section.position,
        "bytes": len(section.text.encode("utf-8")),
        "digest": section.digest,
    }


def _changes_json(previous: Run | None, current: Run) -> dict[str, Any]:
    quick = _value_changes(previous, current)
    if quick is not None:
        return {
            "facts": {
                "added": [],
                "removed": [],
                "changed": [{"name": n, "old": old, "new": new} for n, old, new in quick],
            },
            "sections": _none(),
        }
    found = changes(previous, current)
    before_facts = {} if previous is None else dict(previous.facts)
    after_facts = dict(current.facts)
    before_sections = {} if previous is None else {s.name: s for s in previous.sections}
    after_sections = {s.name: s for s in current.sections}
    facts = found["facts"]
    sections = found["sections"]
    return {
        "facts": {
            "added": [{"name": n, "value": after_facts[n]} for n in facts["added"]],
            "removed": [{"name": n, "value": before_facts[n]} for n in facts["removed"]],
            "changed": [
                {"name": n, "old": before_facts[n], "new": after_facts[n]} for n in facts["changed"]
            ],
        },
        "sections": {
            "added": [{"name": n} | _section_json(after_sections[n]) for n in sections["added"]],
            "removed": [
                {"name": n} | _section_json(before_sections[n]) for n in sections["removed"]
            ],
            "changed": [
                {
                    "name": n,
                    "old": _section_json(before_sections[n]),
                    "new": _section_json(after_sections[n]),
                }
                for n in sections["changed"]
            ],
        },
    }


def _run_json(recorded: Run, previous: Run | None) -> dict[str, Any]:
    return {
        # "run" is Run.number, as the transcript's run records call it (TRANSCRIPT.md).
        "run": recorded.number,
        "time": recorded.time.isoformat().replace("+00:00", "Z"),
        "date": told_date(recorded),
        "digest": recorded.digest,
        "messages": recorded.messages,
        # The run's `tokens` record as written (TRANSCRIPT.md), or null.
        "tokens": None if recorded.tokens is None else dict(recorded.tokens),
        "changes": _changes_json(previous, recorded),
    }


def _full_json(recorded: Run) -> dict[str, Any]:
    context = recorded.context
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
