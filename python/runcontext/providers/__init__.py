"""Providers: bounded, failure-isolated collectors of what is true for this run.

The built-ins are :class:`ClockProvider` (``clock``), :class:`CwdProvider` (``cwd``),
:class:`PlatformProvider` (``platform``), :class:`GitProvider` (``git``) and
:class:`InstructionsProvider` (``instructions``). :func:`default_providers` gives the set
``runcontext show`` uses. The contract is in :mod:`runcontext.providers.base` and
docs/PROVIDERS.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from runcontext.providers.base import Contribution, Diagnostic, Provider
from runcontext.providers.clock import ClockProvider
from runcontext.providers.git import GitProvider
from runcontext.providers.instructions import (
    DEFAULT_MAX_BYTES,
    DEFAULT_NAMES,
    InstructionsProvider,
)
from runcontext.providers.system import CwdProvider, PlatformProvider

__all__ = [
    "ClockProvider",
    "Contribution",
    "CwdProvider",
    "Diagnostic",
    "GitProvider",
    "InstructionsProvider",
    "PlatformProvider",
    "Provider",
    "default_providers",
]


def default_providers(
    directory: str | os.PathLike[str] | None = None,
    *,
    instruction_names: Sequence[str] = DEFAULT_NAMES,
    instructions_max_bytes: int = DEFAULT_MAX_BYTES,
    git_dirty: bool = False,
    clock_time: bool = False,
) -> list[Provider]:
    """clock, cwd, platform, git and instructions for ``directory`` (default: the cwd).

    A new list each call, in the order their facts and sections render. ``clock_time`` adds
    the time and zone facts; the other options are those of the providers they name. The
    instructions provider declares ``max_output_bytes``, so a ``ContextBuilder`` of these
    providers accepts whatever ``instructions_max_bytes`` allows.
    """
    return [
        ClockProvider(time=clock_time, zone=clock_time),
        CwdProvider(directory),
        PlatformProvider(),
        GitProvider(directory, dirty=git_dirty),
        InstructionsProvider(directory, names=instruction_names, max_bytes=instructions_max_bytes),
    ]
