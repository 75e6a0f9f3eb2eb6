"""The ``runcontext`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds
its parser and sets ``handler``; only the module of the command being run is imported (the
others appear in ``--help`` from the table in ``_commands``). Errors the user can fix print
one line on stderr, in the command line's terms (``cli._errors``), and exit 1, never a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from runcontext import __version__
from runcontext.cli._commands import COMMANDS

__all__ = ["main"]

VERSION = f"runcontext {__version__}"


class UsageError(Exception):
    """An error to report as one line on stderr with exit status 1."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full parser of ``command`` (every command's, if ``None``) and a
    one-line entry for each other command (from ``_commands``, without importing it)."""
    parser = argparse.ArgumentParser(
        prog="runcontext",
        description="The refreshable half of an LLM prompt: show, canonicalise and verify it.",
    )
    parser.add_argument("--version", action="version", version=VERSION)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    # The top level takes no option with a value, so the first other word names the command;
    # only that command's module is imported ("" when there is none: --version, --help).
    named = next((word for word in arguments if not word.startswith("-")), "")
    command = named if named in COMMANDS or not named else None
    args = build_parser(command).parse_args(arguments)
    try:
        status: int = args.handler(args)
    except BrokenPipeError:  # e.g. `runcontext show | head`: not an error worth a message
        return 1
    except (UsageError, ValueError, TypeError, OSError) as error:
        from runcontext.cli._errors import message
        from runcontext.cli._terminal import visible

        command = " ".join(filter(None, (args.command, getattr(args, "transcript_command", None))))
        print(f"runcontext {command}: {visible(message(error))}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
