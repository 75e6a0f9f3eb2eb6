"""The subcommands, their modules and their one-line help: the one table ``runcontext --help``
is built from without importing any subcommand (start-up stays at the interpreter's)."""

from __future__ import annotations

# name -> (module, one-line help), in the order `runcontext --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "show": (
        "runcontext.cli.show",
        "print the context an agent started in DIR would be given",
    ),
    "log": (
        "runcontext.cli.log",
        "list the runs of a session transcript and what changed in each context",
    ),
    "sessions": (
        "runcontext.cli.sessions",
        "list the sessions of a PostgreSQL database or a directory of transcripts",
    ),
    "find": (
        "runcontext.cli.find",
        "find the runs told a section or a fact value, across sessions",
    ),
    "canon": (
        "runcontext.cli.canon",
        "print the canonical JSON (RFC 8785) of a JSON text, or its digest",
    ),
    "verify-vectors": (
        "runcontext.cli.vectors",
        "check this installation, or a port's results, against conformance vectors",
    ),
    "transcript": (
        "runcontext.cli.transcript",
        "set up the PostgreSQL transcript store; copy a session between stores; prune old sessions",
    ),
}


def summary(name: str) -> str:
    """The one-line help of subcommand ``name``."""
    return COMMANDS[name][1]
