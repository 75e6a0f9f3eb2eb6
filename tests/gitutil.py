"""Running the real `git` binary in test repositories, isolated from this machine's config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Only what the tests set: no global or system configuration, a fixed identity for commits
# (CI machines have no user.name), whatever the machine has.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` and return its stripped standard output; raise if it fails."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    )
    return result.stdout.strip()
