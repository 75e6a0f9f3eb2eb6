"""`runcontext log` over a transcript file loads what listing needs: not the run loop or the
budget, not asyncio, no database driver, nothing outside the standard library and runcontext
(optional dependencies stay optional). A fresh interpreter runs the command and reports the
modules it imported, so that an import added on the way cannot pass unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runcontext import RunContext
from runcontext.transcript import Session

# The modules the interpreter's own start-up loaded (a site .pth may load some) are left out.
PROBE = """
import os, sys
before = set(sys.modules)
sys.stdout = open(os.devnull, "w")
from runcontext.cli import main
status = main(sys.argv[1:])
sys.stderr.write("MODULES: " + " ".join(sorted(set(sys.modules) - before)) + "\\n")
sys.exit(status)
"""

UNWANTED = {"asyncio", "runcontext.budget", "runcontext.loop", "runcontext.transcript.postgres"}


def _imported(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    marked = [line for line in result.stderr.splitlines() if line.startswith("MODULES: ")]
    return set(marked[-1].split()[1:])


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [{"role": "user", "content": "hi"}]) as session:
        for day in ("2026-12-01", "2026-12-02"):
            context = RunContext(head_sections=[("rules", "Be brief.")], facts=[("date", day)])
            session.record_run([{"role": "user", "content": "hi"}], context)
    return path


@pytest.mark.parametrize(
    "options",
    [(), ("--json",), ("--run", "2"), ("--fact", "date=2026-12-02"), ("--since", "2026-12-01")],
)
def test_log_imports_neither_the_loop_nor_a_driver(
    transcript: Path, options: tuple[str, ...]
) -> None:
    imported = _imported("log", *options, str(transcript))
    assert "runcontext.transcript.session" in imported  # the probe did run the command
    assert not imported & UNWANTED
    foreign = {
        name
        for name in imported
        if name.partition(".")[0] not in sys.stdlib_module_names
        and name.partition(".")[0] not in ("runcontext", "__future__")
    }
    assert not foreign
