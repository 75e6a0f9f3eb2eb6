"""``runcontext transcript init DSN``: set up the PostgreSQL store."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "transcript",
        help="set up the PostgreSQL transcript store",
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


def _init(args: argparse.Namespace) -> int:
    try:
        from runcontext.transcript.postgres import init_schema
    except ImportError as error:
        raise ValueError(str(error)) from None
    version = init_schema(args.dsn)
    print(f"runcontext schema version {version} is installed")
    return 0
