"""``runcontext sessions TARGET``: the sessions of a PostgreSQL database or of a directory of
transcript files, newest activity first (docs/TRANSCRIPT.md, *Questions across sessions*)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from runcontext.cli._commands import summary
from runcontext.cli._terminal import JSONLines, json_array, visible
from runcontext.cli._when import moment
from runcontext.transcript.fleet import DEFAULT_LIMIT, MAX_LIMIT, list_sessions
from runcontext.transcript.store import is_postgres_dsn

__all__ = [
    "add_range",
    "check_tenant",
    "json_time",
    "register",
    "shown_time",
    "table",
    "time_range",
]


def limit_argument(text: str) -> int:
    """``--limit N``: a whole number from 1 to ``MAX_LIMIT``."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_LIMIT}")
    return value


def add_range(parser: argparse.ArgumentParser, what: str) -> None:
    """``--since``/``--until`` and ``--limit``, as both fleet commands take them."""
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help=f"only {what} at or after WHEN: an ISO date or date-time (UTC unless it says) or "
        "an age (30d, 12h: that long ago)",
    )
    parser.add_argument(
        "--until",
        metavar="WHEN",
        help=f"only {what} at or before WHEN (a date includes that whole day)",
    )
    parser.add_argument(
        "--limit",
        type=limit_argument,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N, newest first (default: {DEFAULT_LIMIT}; at most {MAX_LIMIT})",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of text")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sessions",
        help=summary("sessions"),
        description="List the sessions of a PostgreSQL database (postgresql://host/db) or "
        "the transcripts of a directory, newest activity first: tenant, session, created, "
        "last written, runs, last run, bytes (its size as a transcript file). Exit status 1 "
        "when none matches.",
    )
    parser.add_argument("target", help="postgresql://host/db or a directory of transcripts")
    parser.add_argument("--tenant", metavar="T", help="only tenant T (PostgreSQL)")
    add_range(parser, "sessions last written")
    parser.set_defaults(handler=run)


def time_range(args: argparse.Namespace) -> tuple[datetime | None, datetime | None]:
    since = None if args.since is None else moment("--since", args.since, end=False, ages=True)
    until = None if args.until is None else moment("--until", args.until, end=True, ages=True)
    if since is not None and until is not None and since > until:
        raise ValueError(f"--since {args.since} is after --until {args.until}: nothing can match")
    return since, until


def shown_time(value: datetime | None) -> str:
    """A time as UTC to the second (``2026-12-01T09:30:00Z``), or ``-``."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_time(value: datetime | None) -> str | None:
    """A time as JSON gives it: UTC in ISO 8601 with a ``Z`` (microseconds kept), or null."""
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell (the last one not padded), every cell escaped."""
    shown = [[visible(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))]
    lines = [
        "  ".join([cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]])
        for row in shown
    ]
    return "".join(line.rstrip() + "\n" for line in lines)


def check_tenant(args: argparse.Namespace) -> None:
    if not is_postgres_dsn(args.target) and getattr(args, "tenant", None) is not None:
        raise ValueError("--tenant is for a PostgreSQL URI; a directory of files has no tenants")


def run(args: argparse.Namespace) -> int:
    since, until = time_range(args)
    check_tenant(args)
    try:
        found = list_sessions(
            args.target, tenant=args.tenant, since=since, until=until, limit=args.limit
        )
    except ImportError as error:  # a postgresql:// URI without the postgres extra
        raise ValueError(str(error)) from None
    if args.json:
        encoder = JSONLines()
        sys.stdout.write(
            json_array(
                encoder.line(
                    {
                        "tenant": s.tenant,
                        "session": s.session_id,
                        "created": json_time(s.created),
                        "updated": json_time(s.updated),
                        "runs": s.runs,
                        "last_run": json_time(s.last_run),
                        "bytes": s.bytes,
                        "address": s.address,
                    }
                )
                for s in found
            )
        )
    elif found:
        rows = [["TENANT", "SESSION", "CREATED", "LAST WRITE", "RUNS", "LAST RUN", "BYTES"]]
        rows += [
            [
                s.tenant if s.tenant is not None else "-",
                s.session_id,
                shown_time(s.created),
                shown_time(s.updated),
                str(s.runs),
                shown_time(s.last_run),
                str(s.bytes),
            ]
            for s in found
        ]
        sys.stdout.write(table(rows))
    if not found:
        print("runcontext sessions: no session matches", file=sys.stderr)
        return 1
    if len(found) == args.limit and not args.json:
        print(
            f"runcontext sessions: showing the newest {args.limit}; pass --limit N for more",
            file=sys.stderr,
        )
    return 0
