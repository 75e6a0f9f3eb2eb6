"""Without a PostgreSQL server the PostgreSQL tests skip with one summary line, however many
there are; with ``CI`` set they fail instead (tests/transcript/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Two modules: the store's own tests and the contract suite's postgres rows (`-k postgres`).
MODULES = [str(HERE / "test_postgres_store.py"), str(HERE / "test_store_contract.py")]
NEED_A_SERVER = (
    "PostgreSQL tests need a server: RUNCONTEXT_TEST_POSTGRES_DSN is not set. Start one with "
    '`eval "$(.ci/postgres.sh start)"`, which sets RUNCONTEXT_TEST_POSTGRES_DSN'
)


def _pytest(*args: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RUNCONTEXT_TEST_POSTGRES_DSN")}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-ra", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_a_server_every_postgres_skip_is_one_summary_line() -> None:
    run = _pytest(*MODULES, "-k", "postgres", ci=False)
    assert run.returncode == 0, run.stdout + run.stderr
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, run.stdout
    line = re.fullmatch(
        r"SKIPPED \[(\d+)\] tests/transcript/conftest\.py:\d+: " + re.escape(NEED_A_SERVER),
        skipped[0],
    )
    assert line is not None, skipped[0]
    count = int(line[1])
    assert count >= 20, skipped[0]  # every PostgreSQL test of both modules, in one line
    assert f"{count} skipped" in run.stdout.splitlines()[-1], run.stdout


def test_with_ci_set_a_missing_server_fails_rather_than_skips() -> None:
    run = _pytest(MODULES[0], "-x", ci=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"Failed: {NEED_A_SERVER} (CI is set, so this fails rather than skips)" in run.stdout
    assert "skipped" not in run.stdout.splitlines()[-1], run.stdout
