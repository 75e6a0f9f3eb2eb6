"""`runcontext log` imports only what listing a transcript needs (issue 13): not pathlib (with
urllib.parse and ipaddress), typing, contextlib, datetime, threading or collections.abc, which
were most of what its imports cost. A fresh interpreter runs the command and reports
``sys.modules`` at exit, so that an import added on the way cannot pass unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runcontext.transcript import Session

# Run the command with stdout at the descriptor level (redirect_stdout would import contextlib),
# then name every module loaded.
PROBE = """
import os, sys
sys.stdout = open(os.devnull, "w")
from runcontext.cli import main
status = main(sys.argv[1:])
sys.stderr.write("MODULES: " + " ".join(sorted(sys.modules)) + "\\n")
sys.exit(status)
"""

UNWANTED = {
    "pathlib",
    "urllib",
    "urllib.parse",
    "ipaddress",
    "ntpath",
    "fnmatch",
    "typing",
    "contextlib",
    "datetime",
    "threading",
    "collections.abc",
    "runcontext.transcript.store",  # the TranscriptStore protocol, which needs typing
}


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
        from runcontext import RunContext

        for day in ("2026-12-01", "2026-12-02"):
            context = RunContext(head_sections=[("rules", "Be brief.")], facts=[("date", day)])
            session.record_run([{"role": "user", "content": "hi"}], context)
    return path


@pytest.mark.parametrize(
    "options", [(), ("--json",), ("--run", "2"), ("--fact", "date=2026-12-02")]
)
def test_log_does_not_import_what_it_does_not_use(
    transcript: Path, options: tuple[str, ...]
) -> None:
    imported = _imported("log", *options, str(transcript))
    assert "runcontext.transcript.session" in imported  # the probe did run the command
    assert not imported & UNWANTED


def test_the_time_filters_import_datetime_when_given(transcript: Path) -> None:
    imported = _imported("log", "--since", "2026-12-01", str(transcript))
    assert "datetime" in imported
    assert not imported & (UNWANTED - {"datetime"})
