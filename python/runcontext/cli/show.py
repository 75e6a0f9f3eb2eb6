"""``runcontext show [DIR]``: what an agent started in DIR would be told.

Builds the default context (clock, cwd, platform, git, instructions) for DIR and prints the
head and the tail exactly as a model receives them, then the digest, each section's size
and digest, and the diagnostics. ``--json`` prints the same for machines; ``--request``
prints a complete request body for a one-message example conversation.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from typing import Any

from runcontext._core import RunContext
from runcontext.cli._commands import summary
from runcontext.cli._terminal import json_text, visible
from runcontext.providers import Diagnostic, default_providers
from runcontext.providers.builder import ContextBuilder
from runcontext.providers.instructions import DEFAULT_MAX_BYTES, DEFAULT_NAMES

EXAMPLE_MESSAGE = "What should I work on next in this repository?"
MODEL_PLACEHOLDER = "<model>"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "show",
        help=summary("show"),
        description="Build the default runtime context for DIR (date, cwd, platform, git "
        "branch and commit, instruction files) and print the head and tail messages exactly "
        "as a model receives them, the digest, each section's size and digest, and any "
        "diagnostics. Nothing in DIR is executed: git facts are read from the repository's "
        "files.",
    )
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR", help="default: .")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON document instead")
    output.add_argument(
        "--request",
        choices=("openai", "anthropic"),
        help="print a full request body (Chat Completions or Messages) for a one-message "
        "example conversation",
    )
    parser.add_argument(
        "--model", default=MODEL_PLACEHOLDER, help="model name for --request (a placeholder)"
    )
    parser.add_argument(
        "--instructions",
        action="append",
        metavar="NAME",
        help="instruction file name to look for, repeatable (default: AGENTS.md)",
    )
    parser.add_argument(
        "--instructions-max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"byte budget of all instruction files together (default: {DEFAULT_MAX_BYTES})",
    )
    parser.add_argument("--time", action="store_true", help="add the time and zone facts")
    parser.add_argument(
        "--git-dirty",
        action="store_true",
        help="count changed paths by running `git status` (with fsmonitor and hooks off; "
        "clean filters can still run, see docs/PROVIDERS.md)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=0.25,
        metavar="SECONDS",
        help="time bound of the whole build (default: 0.25)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    _check_directory(args.directory)
    directory = os.path.abspath(args.directory)
    providers = default_providers(
        directory,
        instruction_names=tuple(args.instructions) if args.instructions else DEFAULT_NAMES,
        instructions_max_bytes=args.instructions_max_bytes,
        git_dirty=args.git_dirty,
        clock_time=args.time,
    )
    builder = ContextBuilder(providers, deadline=args.deadline)
    context, diagnostics = builder.build()
    if args.request:
        _print_json(_request(args.request, args.model, context))
        for diagnostic in diagnostics:  # stderr, so stdout stays a request body
            print(f"runcontext show: {visible(str(diagnostic))}", file=sys.stderr)
    elif args.json:
        _print_json(_document(directory, builder, context, diagnostics))
    else:
        sys.stdout.write(visible(_report(context, builder, diagnostics)))
    return 0


def _check_directory(directory: str) -> None:
    """Say what is wrong with ``directory``: missing, not a directory, too long, …"""
    try:
        mode = os.stat(directory).st_mode
    except OSError as error:
        shown = directory if len(directory) <= 80 else f"{directory[:60]}… ({len(directory)} bytes)"
        if error.errno == errno.ENOENT:
            raise FileNotFoundError(error.errno, f"{shown}: no such directory") from None
        if error.errno == errno.ENAMETOOLONG:
            path_max, name_max = os.pathconf("/", "PC_PATH_MAX"), os.pathconf("/", "PC_NAME_MAX")
            raise OSError(
                error.errno,
                f"{shown}: the path is too long for this system (a path may have at most "
                f"{path_max} bytes, one name {name_max}); run from a directory nearer to it",
            ) from None
        raise OSError(error.errno, f"{shown}: {os.strerror(error.errno or 0)}") from None
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(f"{directory}: is not a directory")


def _print_json(value: object) -> None:
    sys.stdout.write(json_text(value) + "\n")


def _request(api: str, model: str, context: RunContext) -> dict[str, Any]:
    from runcontext.adapters import anthropic_messages, openai_chat  # only for --request

    conversation = [{"role": "user", "content": EXAMPLE_MESSAGE}]
    if api == "openai":
        return {"model": model, "messages": openai_chat(conversation, context)}
    return {"model": model, "max_tokens": 1024, **anthropic_messages(conversation, context)}


def _size(text: str) -> int:
    return len(text.encode())


def _document(
    directory: str,
    builder: ContextBuilder,
    context: RunContext,
    diagnostics: tuple[Diagnostic, ...],
) -> dict[str, Any]:
    return {
        "directory": directory,
        "digest": context.digest,
        "revision": builder.revision,
        "head": context.head_text,
        "tail": context.tail_text,
        "facts": [list(fact) for fact in context.facts],
        "sections": [
            {
                "position": section.position,
                "name": section.name,
                "bytes": _size(section.text),
                "digest": section.digest,
                "text": section.text,
            }
            for section in context.sections
        ],
        "diagnostics": [diagnostic._asdict() for diagnostic in diagnostics],
    }


def _report(
    context: RunContext, builder: ContextBuilder, diagnostics: tuple[Diagnostic, ...]
) -> str:
    lines: list[str] = []
    for position, text in (("head", context.head_text), ("tail", context.tail_text)):
        if text is None:
            lines += [f"--- {position} message: none ---", ""]
        else:
            lines += [f"--- {position} message (system, {_size(text)} bytes) ---", text, ""]
    lines += [
        f"digest    {context.digest}",
        # The builder's revision: which providers, at which versions and with which options,
        # made this text from the environment (docs/PROVIDERS.md); a new one may turn the same
        # environment into another text, so it belongs in a request's fingerprint.
        f"revision  {builder.revision}  (of the builder: its providers, their versions and "
        "options)",
        "",
    ]
    lines.append("sections" if context.sections else "sections: none")
    width = max((len(section.name) for section in context.sections), default=0)
    for section in context.sections:
        size = f"{_size(section.text)} B"
        lines.append(f"  {section.position}  {section.name:<{width}}  {size:>8}  {section.digest}")
    lines.append("diagnostics" if diagnostics else "diagnostics: none")
    lines += [f"  {diagnostic}" for diagnostic in diagnostics]
    return "\n".join(lines) + "\n"
