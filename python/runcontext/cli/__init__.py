"""The ``runcontext`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds
its parser and sets ``handler``; only the module of the command being run is imported (the
others appear in ``--help`` from the table in ``_commands``), so ``runcontext --version``
starts as fast as the interpreter. ``--version`` alone is answered before argparse is even
imported; argparse, and what the terminal escaping needs (json, re), load only when a command
line is parsed (issue 13's start-up targets). Errors the user can fix print one line on stderr
and exit 1, never a traceback.
"""

from __future__ import annotations

import sys

from runcontext import __version__
from runcontext.cli._commands import COMMANDS

TYPE_CHECKING = False  # not typing's: the import of typing would cost more than the rest
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["main"]

VERSION = f"runcontext {__version__}"


class UsageError(Exception):
    """An error to report as one line on stderr with exit status 1."""


def build_parser(command: str | None = None, *, others: bool = True) -> argparse.ArgumentParser:
    """The parser, with the full parser of ``command`` (every command's, if ``None``) and,
    if ``others``, a one-line entry for each other command. ``main`` leaves the others out when
    the command line names a command and nothing before it: what that command prints (its
    help, its errors, the top level's usage) does not name them, and each parser argparse
    makes costs a dozen gettext look-ups."""
    from runcontext.cli._parser import ArgumentParser

    parser = ArgumentParser(
        prog="runcontext",
        description="The refreshable half of an LLM prompt: show, canonicalise and verify it.",
    )
    parser.add_argument("--version", action="version", version=VERSION)
    subparsers = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        parser_class=ArgumentParser,
    )
    for name, (module, summary) in COMMANDS.items():
        if command is None or name == command:
            __import__(module)  # the builtin: importlib would add the warnings module
            sys.modules[module].register(subparsers)
        elif others:
            subparsers.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments == ["--version"]:  # what argparse's version action prints, and its exit
        sys.stdout.write(VERSION + "\n")
        sys.exit(0)
    # The top level takes no option with a value, so the first other word names the command.
    position = next((i for i, word in enumerate(arguments) if not word.startswith("-")), None)
    named = None if position is None else arguments[position]
    command = named if named in COMMANDS else None
    if command is None and named is None:
        command = ""  # `--version`, `--help` or nothing: no subcommand module is needed
    # A top-level option before the command (`runcontext -h show`) may print the top level's
    # help, which lists every command.
    others = not command or any(word.startswith("-") for word in arguments[:position])
    args = build_parser(command, others=others).parse_args(arguments)
    try:
        status: int = args.handler(args)
    except BrokenPipeError:  # e.g. `runcontext show | head`: not an error worth a message
        return 1
    except (UsageError, ValueError, TypeError, OSError) as error:
        from runcontext.cli._terminal import visible

        print(f"runcontext {args.command}: {visible(str(error))}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
