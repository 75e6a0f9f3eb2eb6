"""``runcontext transcript init DSN``, ``runcontext transcript copy SRC DST`` and ``runcontext
transcript prune URI|DIR``: set up (or upgrade) the PostgreSQL store, move a session between
stores byte for byte, and delete old sessions (docs/TRANSCRIPT.md, *Retention*)."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from runcontext.cli._commands import summary
from runcontext.transcript.errors import TornTranscriptWarning, shown_name
from runcontext.transcript.files import FileStore
from runcontext.transcript.session import Session
from runcontext.transcript.store import TranscriptStore, is_postgres_dsn, open_store, read_all


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "transcript",
        help=summary("transcript"),
        description="Manage where transcripts live. A store is a transcript file (a path) or "
        "a PostgreSQL session (postgresql://host/db?session=ID&tenant=T).",
    )
    commands = parser.add_subparsers(dest="transcript_command", required=True, metavar="ACTION")
    init = commands.add_parser(
        "init",
        help="create the runcontext tables in a PostgreSQL database (idempotent)",
        description="Create the runcontext tables in the database DSN names, if they are not "
        "there yet. Safe to run again and concurrently; a newer schema is refused.",
    )
    init.add_argument("dsn", help="postgresql://[user@]host[:port]/database")
    init.set_defaults(handler=_init)
    copy = commands.add_parser(
        "copy",
        help="copy a session between a file and PostgreSQL (either way), byte for byte, or "
        "bring an earlier copy up to date",
        description="Verify the session SRC (every record's chain and every run's context), "
        "then create DST holding exactly the same record bytes, and read it back to compare. "
        "Open-or-create: a DST that holds the first records of SRC (an earlier copy) gets the "
        "records it lacks; any other existing DST is refused and never overwritten.",
    )
    copy.add_argument("src", help="a transcript file or postgresql://…?session=ID")
    copy.add_argument(
        "dst", help="a transcript file or postgresql://…?session=ID (new, or an earlier copy)"
    )
    copy.add_argument(
        "--session", metavar="ID", help="the session id of a PostgreSQL side without ?session="
    )
    copy.add_argument(
        "--tenant", metavar="T", help="the tenant of a PostgreSQL side without ?tenant="
    )
    copy.set_defaults(handler=_copy)
    prune = commands.add_parser(
        "prune",
        help="delete old sessions and the section bodies no other session names (a dry run "
        "unless --yes)",
        description="Delete the sessions of a PostgreSQL database (postgresql://host/db) or "
        "the transcripts of a directory that match every criterion given, and then the "
        "section bodies no remaining record names; safe while writers append (a session or "
        "file being written is kept). Without --yes nothing is deleted: it prints what would "
        "go and how many bytes.",
    )
    prune.add_argument("target", help="postgresql://host/db or a directory of transcripts")
    prune.add_argument(
        "--older-than",
        metavar="AGE",
        help="only sessions last written more than AGE ago: 45s, 90m, 12h, 30d or 2w",
    )
    prune.add_argument("--tenant", metavar="T", help="only tenant T (PostgreSQL)")
    prune.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="ID",
        help="only session ID (a directory: the file's name; repeat: any of them)",
    )
    prune.add_argument("--yes", action="store_true", help="delete (without it: a dry run)")
    prune.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    prune.set_defaults(handler=_prune)


def _init(args: argparse.Namespace) -> int:
    try:
        from runcontext.transcript.postgres import init_schema
    except ImportError as error:
        raise ValueError(str(error)) from None
    version = init_schema(args.dsn)
    print(f"runcontext schema version {version} is installed")
    return 0


def _prune(args: argparse.Namespace) -> int:
    from runcontext.cli._terminal import JSONLines, visible
    from runcontext.cli._when import age
    from runcontext.transcript.prune import prune

    older_than = None if args.older_than is None else age("--older-than", args.older_than)
    if not is_postgres_dsn(args.target) and args.tenant is not None:
        raise ValueError("--tenant is for a PostgreSQL URI; a directory of files has no tenants")
    if older_than is None and args.tenant is None and not args.session:
        raise ValueError(
            "nothing chooses what to prune: pass --older-than AGE, --tenant T or --session ID "
            "(the whole store is never pruned by default)"
        )
    try:
        report = prune(
            args.target,
            older_than=older_than,
            tenant=args.tenant,
            session_ids=args.session,
            delete=args.yes,
        )
    except ImportError as error:  # a postgresql:// URI without the postgres extra
        raise ValueError(str(error)) from None
    if args.json:
        sessions = [
            {"tenant": s.tenant, "session": s.session_id, "bytes": s.bytes, "records": s.records}
            for s in report.sessions
        ]
        kept = [{"tenant": s.tenant, "session": s.session_id} for s in report.kept]
        print(
            JSONLines().line(
                {
                    "deleted": report.deleted,
                    "sessions": sessions,
                    "session_bytes": sum(s.bytes for s in report.sessions),
                    "sections": report.sections,
                    "section_bytes": report.section_bytes,
                    "kept": kept,
                }
            )
        )
        return 0
    verb = "deleted" if report.deleted else "would delete"
    for s in report.sessions:
        where = s.session_id if s.tenant is None else f"{s.tenant}  {s.session_id}"
        print(visible(f"{verb}  {where}  {s.bytes} bytes"))
    for s in report.kept:
        where = s.session_id if s.tenant is None else f"{s.tenant}  {s.session_id}"
        print(visible(f"kept  {where}  (a writer was using it)"))
    bodies = ""
    if is_postgres_dsn(args.target):
        bodies = (
            f" and {report.sections} section bodies no other session names "
            f"({report.section_bytes} bytes)"
        )
    total = sum(s.bytes for s in report.sessions)
    summary_line = f"{verb} {len(report.sessions)} sessions ({total} bytes){bodies}"
    if not report.deleted:
        summary_line += "; pass --yes to delete them"
    print(summary_line)
    return 0


def _open(target: str, args: argparse.Namespace) -> TranscriptStore:
    try:
        if is_postgres_dsn(target):
            return open_store(target, session_id=args.session, tenant=args.tenant)
        return open_store(target)
    except ImportError as error:  # the postgres extra is not installed: one line, not a trace
        raise ValueError(str(error)) from None


def _copy(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TornTranscriptWarning)
        # Verify first (the chain, every run's context), so a damaged source is refused with
        # its line number instead of being copied.
        with Session.open(_open(args.src, args), writable=False):
            pass
    for warning in caught:
        print(f"runcontext transcript copy: warning: {warning.message}", file=sys.stderr)
    source = _open(args.src, args)
    try:
        if isinstance(source, FileStore):
            source.open(writable=False)
        lines = read_all(source)
    finally:
        source.close()
    src = shown_name(source.name)
    destination = _open(args.dst, args)
    try:
        name = shown_name(destination.name)
        try:
            destination.create([line + b"\n" for line in lines])  # as a writer passes them
            done = f"copied {len(lines)} records from {src} to {name}"
        except FileExistsError:
            done = _bring_up_to_date(destination, lines, src, args)
        if isinstance(destination, FileStore):  # read back through a descriptor of its own
            destination.close()
            destination.open(writable=False)
        copied = read_all(destination)
        if copied[: len(lines)] != lines:
            raise ValueError(f"{name}: the copy reads back different bytes")
    finally:
        destination.close()
    print(done)
    return 0


def _bring_up_to_date(
    destination: TranscriptStore, lines: list[bytes], src: str, args: argparse.Namespace
) -> str:
    """Open-or-create: DST exists. If it holds the first records of SRC (an earlier copy of
    it), append the records it lacks; if it holds all of them, there is nothing to do; any
    other DST is refused untouched."""
    name = shown_name(destination.name)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", TornTranscriptWarning)
        # DST must be a whole transcript itself: its chain and its runs verify.
        with Session.open(_open(args.dst, args), writable=False) as existing:
            if existing.torn is not None:
                raise ValueError(
                    f"{name} already exists and its last record is torn (a writer stopped "
                    "mid-line); nothing was written: choose another DST"
                )
    if isinstance(destination, FileStore):
        destination.open(writable=True)
    with destination.writing():
        held = read_all(destination)
        common = next(
            (i for i, (a, b) in enumerate(zip(held, lines, strict=False)) if a != b),
            min(len(held), len(lines)),
        )
        if common < min(len(held), len(lines)):
            raise ValueError(
                f"{name} already exists and is not a copy of {src}: its record {common + 1} "
                "differs; nothing was written: choose another DST"
            )
        if len(held) >= len(lines):
            more = "" if len(held) == len(lines) else f" and {len(held) - len(lines)} more"
            return f"{name} already holds the {len(lines)} records of {src}{more}: nothing to copy"
        destination.append([line + b"\n" for line in lines[len(held) :]])
    return (
        f"appended {len(lines) - len(held)} records from {src} to {name}, which held the "
        f"first {len(held)}"
    )
