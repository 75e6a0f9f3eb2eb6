"""`runcontext --version` and `--help` import no subcommand, each subcommand imports only its
own module, and `import runcontext` loads its subpackages on first use and nothing outside the
standard library (no framework, SDK or driver)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    and m not in ("runcontext.cli._terminal", "runcontext.cli._parser"))
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


@pytest.mark.parametrize("args", [("-h", "show"), ("--he", "log")])
def test_a_top_level_option_before_a_command_lists_every_command(args: tuple[str, ...]) -> None:
    # A named command gets its own parser only, unless the top level may print its help.
    result = subprocess.run(
        [sys.executable, "-m", "runcontext", *args], capture_output=True, text=True, check=True
    )
    shown = " ".join(result.stdout.split())
    assert all(name in shown and summary in shown for name, (_, summary) in COMMANDS.items())


NEW_MODULES = """
import sys
before = set(sys.modules)
{code}
print("NEW:", " ".join(sorted(set(sys.modules) - before)))
"""


def _new_modules(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter imports to run ``code`` (beyond its start-up's)."""
    result = subprocess.run(
        [sys.executable, "-c", NEW_MODULES.format(code=code), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    marked = [line for line in result.stdout.splitlines() if line.startswith("NEW:")]
    return set(marked[-1].split()[1:])


def test_import_runcontext_loads_the_core_and_no_subpackage() -> None:
    imported = _new_modules("import runcontext")
    assert {name for name in imported if name.startswith("runcontext")} == {
        "runcontext",
        "runcontext._checks",
        "runcontext._core",
        "runcontext._splice",
        "runcontext.errors",
    }
    # Optional dependencies stay optional: nothing but the standard library besides.
    assert all(
        name.partition(".")[0] in sys.stdlib_module_names
        for name in imported
        if not name.startswith("runcontext")
    )


def test_version_prints_what_argparse_prints_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from runcontext.cli import build_parser, main

    with pytest.raises(SystemExit) as fast:
        main(["--version"])
    printed = capsys.readouterr()
    with pytest.raises(SystemExit) as parsed:
        build_parser("").parse_args(["--version"])  # argparse's version action
    assert (printed, fast.value.code) == (capsys.readouterr(), parsed.value.code)
    assert printed.out.startswith("runcontext ") and fast.value.code == 0


def test_show_imports_no_asyncio_or_subprocess(tmp_path: Path) -> None:
    # The default providers are synchronous and read git's files themselves: asyncio, a thread
    # pool and subprocess are only for async providers and `--git-dirty`.
    code = (
        "import io, contextlib\nfrom runcontext.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['show', sys.argv[1]])"
    )
    imported = _new_modules(code, str(tmp_path))
    assert "runcontext.cli.show" in imported
    assert not imported & {"asyncio", "subprocess", "concurrent.futures"}
