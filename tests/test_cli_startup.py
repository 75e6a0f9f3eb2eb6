"""`runcontext --version` and `--help` import no subcommand, and each subcommand imports only
its own module: start-up is the interpreter's plus the core (issue 13's start-up target)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runcontext.cli._commands import COMMANDS

PROBE = """
import sys
from runcontext.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.startswith(("runcontext.cli.", "runcontext.transcript",
    "runcontext.providers", "asyncio")) and m != "runcontext.cli._commands"
    and m != "runcontext.cli._terminal")
print("MODULES:", " ".join(heavy))
"""


def _imported(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    marked = [line for line in result.stdout.splitlines() if line.startswith("MODULES:")]
    return set(marked[-1].split()[1:])


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()])
def test_the_top_level_imports_no_subcommand(args: tuple[str, ...]) -> None:
    assert _imported(*args) == set()


def test_a_subcommand_imports_its_own_module_only() -> None:
    imported = _imported("canon", "--help")
    assert "runcontext.cli.canon" in imported
    others = {module for name, (module, _) in COMMANDS.items() if name != "canon"}
    assert not imported & others
    assert not any(m.startswith(("runcontext.transcript", "asyncio")) for m in imported)


def test_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runcontext", "--help"], capture_output=True, text=True, check=True
    )
    shown = " ".join(result.stdout.split())  # argparse wraps long lines
    for name, (_, summary) in COMMANDS.items():
        assert name in shown and summary in shown
