"""The ``runcontext`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds
its parser and sets ``handler``. Errors the user can fix print one line on stderr and exit 1,
never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from runcontext import __version__
from runcontext.cli import canon, log, show, transcript, vectors
from runcontext.cli._terminal import visible

__all__ = ["main"]

_COMMANDS = (show, log, canon, vectors, transcript)


class UsageError(Exception):
    """An error to report as one line on stderr with exit status 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runcontext",
        description="The refreshable half of an LLM prompt: show, canonicalise and verify it.",
    )
    parser.add_argument("--version", action="version", version=f"runcontext {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except BrokenPipeError:  # e.g. `runcontext show | head`: not an error worth a message
        return 1
    except (UsageError, ValueError, TypeError, OSError) as error:
        print(f"runcontext {args.command}: {visible(str(error))}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
