"""``runcontext transcript init DSN`` and ``runcontext transcript copy SRC DST``: set up the
PostgreSQL store, and move a session between stores byte for byte."""

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
        help="copy a session between a file and PostgreSQL (either way), byte for byte",
        description="Verify the session SRC (every record's chain and every run's context), "
        "then create DST holding exactly the same record bytes, and read it back to compare. "
        "An existing DST is never overwritten.",
    )
    copy.add_argument("src", help="a transcript file or postgresql://…?session=ID")
    copy.add_argument("dst", help="a new transcript file or postgresql://…?session=ID")
    copy.add_argument(
        "--session", metavar="ID", help="the session id of a PostgreSQL side without ?session="
    )
    copy.add_argument(
        "--tenant", metavar="T", help="the tenant of a PostgreSQL side without ?tenant="
    )
    copy.set_defaults(handler=_copy)


def _init(args: argparse.Namespace) -> int:
    try:
        from runcontext.transcript.postgres import init_schema
    except ImportError as error:
        raise ValueError(str(error)) from None
    version = init_schema(args.dsn)
    print(f"runcontext schema version {version} is installed")
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
    destination = _open(args.dst, args)
    try:
        destination.create([line + b"\n" for line in lines])  # as a writer passes them
        if isinstance(destination, FileStore):
            destination.open(writable=False)
        if read_all(destination) != lines:
            raise ValueError(f"{shown_name(destination.name)}: the copy reads back different bytes")
        name = destination.name
    finally:
        destination.close()
    print(f"copied {len(lines)} records from {shown_name(source.name)} to {shown_name(name)}")
    return 0
