"""``cwd`` and ``platform``: where the agent runs and on what.

Both are tail facts. An agent that runs shell commands needs the working directory to read
paths right and the platform to pick ``sed -i ''`` over ``sed -i``.
"""

from __future__ import annotations

import os
import sys

from runcontext.providers.base import Contribution

__all__ = ["CwdProvider", "PlatformProvider", "platform_text"]

_SYSTEMS = {"win32": "windows", "cygwin": "cygwin", "darwin": "darwin"}


class CwdProvider:
    """Fact ``cwd``: ``path`` made absolute (symlinks kept, as a shell's ``pwd`` shows it).

    ``path=None`` reads the process's working directory at each collect.
    """

    name = "cwd"
    revision = "cwd/1"

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = None if path is None else os.fspath(path)

    def collect(self, deadline: float) -> Contribution:
        path = os.path.abspath(self._path) if self._path is not None else os.getcwd()
        return Contribution(facts=[("cwd", path)])


def platform_text() -> str:
    """``linux (x86_64)``, ``darwin (arm64)``, ``windows (AMD64)``: the OS and the machine."""
    system = _SYSTEMS.get(sys.platform, sys.platform.rstrip("0123456789") or sys.platform)
    # platform.machine() is os.uname().machine on every POSIX system, and runcontext is
    # POSIX-only.
    machine = os.uname().machine or "unknown"
    return f"{system} ({machine})"


class PlatformProvider:
    """Fact ``platform``, computed once: it cannot change while the process runs."""

    name = "platform"
    revision = "platform/1"

    def __init__(self) -> None:
        self._text = platform_text()

    def collect(self, deadline: float) -> Contribution:
        return Contribution(facts=[("platform", self._text)])
