"""``runcontext log TRANSCRIPT [--run N] [--json]``: what each run of a session was told."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from runcontext._core import RunContext
from runcontext.cli._terminal import json_text, visible
from runcontext.transcript import Run, Session, TornTranscriptWarning
from runcontext.transcript.store import DEFAULT_MAX_LINE_BYTES


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "log",
        help="list the runs of a session transcript and what changed in each context",
        description="List each run of a session transcript with its date, context digest and "
        "what changed since the previous run (facts and sections added, removed, changed, by "
        "name). With --run N, print that run's head and tail exactly as sent. Every run's "
        "context is rebuilt and its digest verified.",
    )
    parser.add_argument(
        "transcript", help="a session transcript (.jsonl) or postgresql://…?session=ID"
    )
    parser.add_argument("--session", metavar="ID", help="the session id, for a PostgreSQL URI")
    parser.add_argument("--tenant", metavar="T", help="the tenant, for a PostgreSQL URI")
    parser.add_argument("--run", type=int, metavar="N", help="show run N in full")
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
    for warning in caught:
        # A torn last line is worth a note, not a failure: every complete run is listed.
        print(f"runcontext log: warning: {visible(str(warning.message))}", file=sys.stderr)
    if args.run is not None:
        if not 1 <= args.run <= len(runs):
            span = f"runs 1 to {len(runs)}" if runs else "no runs"
            raise ValueError(f"{args.transcript}: no run {args.run}: the transcript has {span}")
        previous = runs[args.run - 2].context if args.run > 1 else None
        chosen = runs[args.run - 1]
        if args.json:
            _print_json(_run_json(chosen, previous) | _full_json(chosen))
        else:
            print(visible(_run_text(chosen, previous)), end="")
            print(visible(_full_text(chosen)), end="")
        return 0
    if args.json:
        _print_json([_run_json(r, runs[i - 1].context if i else None) for i, r in enumerate(runs)])
    else:
        for index, recorded in enumerate(runs):
            print(visible(_run_text(recorded, runs[index - 1].context if index else None)), end="")
        # The anchor: kept elsewhere, it shows a later rewrite of the whole tail (TRANSCRIPT.md).
        print(f"chain  {chain}" if chain else "chain  none (a version 1 transcript: unchained)")
        if anchored is not None:
            print(f"anchored  {anchored[0]} records: the session row holds the same chain")
    return 0


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


def changes(previous: RunContext | None, current: RunContext) -> dict[str, dict[str, list[str]]]:
    """Names of the sections and facts added, removed and changed since ``previous``.

    A section changes when its text or its position (head or tail) does; a fact when its value
    does. Names are listed in the current context's order (removed ones in the previous one's).
    """
    before_sections = {} if previous is None else {s.name: s for s in previous.sections}
    after_sections = {s.name: s for s in current.sections}
    before_facts = {} if previous is None else dict(previous.facts)
    after_facts = dict(current.facts)
    result: dict[str, dict[str, list[str]]] = {}
    for kind, before, after in (
        ("sections", before_sections, after_sections),
        ("facts", before_facts, after_facts),
    ):
        result[kind] = {
            "added": [name for name in after if name not in before],
            "removed": [name for name in before if name not in after],
            "changed": [name for name in after if name in before and before[name] != after[name]],
        }
    return result


def _run_text(recorded: Run, previous: RunContext | None) -> str:
    lines = [
        f"run {recorded.number}  {_time(recorded)}  {recorded.digest}  "
        f"{recorded.messages} message{'' if recorded.messages == 1 else 's'}"
    ]
    found = changes(previous, recorded.context)
    for verb in ("added", "removed", "changed"):
        names = [f"section {name}" for name in found["sections"][verb]]
        names += [f"fact {name}" for name in found["facts"][verb]]
        if names:
            lines.append(f"  {verb:<8} {', '.join(names)}")
    if len(lines) == 1:
        lines.append("  (no context)" if previous is None else "  unchanged")
    return "\n".join(lines) + "\n"


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


def _time(recorded: Run) -> str:
    return recorded.time.strftime("%Y-%m-%d %H:%M:%SZ")


def _run_json(recorded: Run, previous: RunContext | None) -> dict[str, Any]:
    return {
        "run": recorded.number,
        "time": recorded.time.isoformat().replace("+00:00", "Z"),
        "digest": recorded.digest,
        "messages": recorded.messages,
        "changes": changes(previous, recorded.context),
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
