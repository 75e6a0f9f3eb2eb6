"""``runcontext verify-vectors [PATH] [--results FILE]``: check conformance vectors."""

from __future__ import annotations

import argparse
from typing import Any

from runcontext.cli._commands import summary
from runcontext.conformance import bundled_vectors, verify


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify-vectors",
        help=summary("verify-vectors"),
        description="Run every case of a vectors file (docs/vectors/runcontext-v1.json, "
        "docs/vectors/jcs.json, docs/vectors/es-numbers.txt or docs/vectors/transcript-v2.json) "
        "against this installation, or, "
        "with --results, compare the results another implementation wrote in the same shape. "
        "With no PATH, check this installation against every vectors file it was built with "
        "(shipped inside the package). "
        "Exit 0 when every case passes, 1 otherwise; a malformed file is refused naming the "
        "entry.",
    )
    parser.add_argument(
        "path", nargs="?", help="the vectors file (default: every file shipped in the package)"
    )
    parser.add_argument(
        "--results",
        help="a port's observations, in the vectors' shape (see docs/CONFORMANCE.md)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.path is None:
        if args.results is not None:
            raise ValueError("--results compares against one vectors file: pass its PATH too")
        paths = [str(p) for p in bundled_vectors()]
    else:
        paths = [args.path]
    ok = True
    for path in paths:
        report = verify(path, args.results)
        for name, problem in report.failures:
            print(f"FAIL {name}: {problem}")
        passed, failed = report.total - len(report.failures), len(report.failures)
        print(f"{report.kind} vectors {report.path}: {passed} passed, {failed} failed")
        ok = ok and report.ok
    return 0 if ok else 1
