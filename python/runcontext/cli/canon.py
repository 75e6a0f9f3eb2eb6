"""``runcontext canon [FILE|-] [--digest]``: canonical JSON of a JSON text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from runcontext._core import canonicalize_text, digest_bytes
from runcontext.cli._commands import summary
from runcontext.errors import CanonicalJSONError


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "canon",
        help=summary("canon"),
        description="Parse a JSON text strictly and print its canonical form (RFC 8785) or, "
        "with --digest, its blake3 digest. Duplicate member names, numbers a double cannot "
        "hold and invalid text are refused with line and column.",
    )
    parser.add_argument("file", nargs="?", default="-", help="JSON file, or - for stdin (default)")
    parser.add_argument("--digest", action="store_true", help="print the digest instead")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.file == "-":
        name, data = "<stdin>", sys.stdin.buffer.read()
    else:
        name, data = args.file, Path(args.file).read_bytes()
    try:
        canonical = canonicalize_text(data)
    except CanonicalJSONError as error:
        # The message says where in the text ("line 3, column 2: ..."); say which text too.
        raise ValueError(f"{name}: {error}") from None
    if args.digest:
        print(digest_bytes(canonical))
    else:
        # Exactly the canonical bytes, so `runcontext canon f.json | b3sum` matches --digest;
        # a newline only for a person at a terminal.
        sys.stdout.buffer.write(canonical + (b"\n" if sys.stdout.isatty() else b""))
        sys.stdout.flush()
    return 0
