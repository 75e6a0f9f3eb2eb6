"""``runcontext find TARGET``: the runs told a section (by digest or name) or a fact value, in
a time range, across the sessions of a PostgreSQL database or a directory of transcripts
(docs/TRANSCRIPT.md, *Questions across sessions*)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from runcontext.cli._commands import summary
from runcontext.cli._terminal import JSONLines, json_array, visible
from runcontext.cli.sessions import add_range, check_tenant, json_time, shown_time, time_range
from runcontext.transcript.fleet import find_runs
from runcontext.transcript.store import is_postgres_dsn

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "find",
        help=summary("find"),
        description="List the runs told a section (by digest or by name) or a fact value, "
        "recorded in a time range, across the sessions of a PostgreSQL database "
        "(postgresql://host/db) or the transcripts of a directory, newest first, each with "
        "the command that shows it. Every criterion given must hold. Exit status 1 when no "
        "run matches.",
    )
    parser.add_argument(
        "target", help="postgresql://host/db, a directory of transcripts or one transcript"
    )
    parser.add_argument(
        "--digest", metavar="DIGEST", help="only runs told the section with this digest"
    )
    parser.add_argument(
        "--section", metavar="NAME", help="only runs told a section named NAME (head or tail)"
    )
    parser.add_argument(
        "--fact",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only runs told this fact with exactly this value (repeat: all must hold)",
    )
    parser.add_argument("--tenant", metavar="T", help="only tenant T (PostgreSQL)")
    parser.add_argument("--session", metavar="ID", help="only session ID (PostgreSQL)")
    add_range(parser, "runs recorded")
    parser.set_defaults(handler=run)


def _facts(given: list[str]) -> dict[str, str]:
    facts: dict[str, str] = {}
    for text in given:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise ValueError(f"--fact {text!r}: expected NAME=VALUE (such as branch=release)")
        if name in facts and facts[name] != value:
            raise ValueError(
                f"--fact {name}= is given twice with different values ({facts[name]!r}, "
                f"{value!r}): no run is told both"
            )
        facts[name] = value
    return facts


def run(args: argparse.Namespace) -> int:
    since, until = time_range(args)
    facts = _facts(args.fact)
    check_tenant(args)
    if not is_postgres_dsn(args.target) and args.session is not None:
        raise ValueError("--session is for a PostgreSQL URI; name a transcript file instead")
    try:
        found = find_runs(
            args.target,
            section_digest=args.digest,
            section_name=args.section,
            facts=facts,
            tenant=args.tenant,
            session_id=args.session,
            since=since,
            until=until,
            limit=args.limit,
        )
    except ImportError as error:  # a postgresql:// URI without the postgres extra
        raise ValueError(str(error)) from None
    if args.json:
        encoder = JSONLines()
        sys.stdout.write(
            json_array(
                encoder.line(
                    {
                        "tenant": r.tenant,
                        "session": r.session_id,
                        "run": r.run,
                        "time": json_time(r.time),
                        "digest": r.digest,
                        "address": r.address,
                        "command": _command(r.address, r.run),
                    }
                )
                for r in found
            )
        )
    else:
        for r in found:
            where = r.session_id if r.tenant is None else f"{r.tenant}  {r.session_id}"
            line = f"{where}  run {r.run}  {shown_time(r.time)}  {_command(r.address, r.run)}"
            print(visible(line))
    if not found:
        print("runcontext find: no run matches", file=sys.stderr)
        return 1
    if len(found) == args.limit and not args.json:
        print(
            f"runcontext find: showing the newest {args.limit}; pass --limit N for more",
            file=sys.stderr,
        )
    return 0


def _command(address: str, run: int) -> str:
    """The command line that shows the run (quoted for a POSIX shell)."""
    return f"runcontext log {shlex.quote(address)} --run {run}"
