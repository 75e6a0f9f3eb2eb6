"""argparse's parser and help formatter, without ``shutil``.

argparse makes a formatter for every ``add_argument`` (to check the metavar), and each one
asks ``shutil.get_terminal_size`` for the width: importing ``shutil`` (and the compression
modules it imports) is a tenth of `runcontext show`'s start-up. The width here is worked out
the same way, with ``os`` alone.
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False  # not typing's: the CLI starts without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ArgumentParser", "HelpFormatter"]


def _columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class HelpFormatter(argparse.HelpFormatter):
    """argparse's default formatter at the width it would choose (the terminal's, less 2)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's, with :class:`HelpFormatter` as its default formatter (the class of the
    top level and of every subcommand's parser)."""

    def __init__(self, **options: Any) -> None:  # argparse passes keywords only
        options.setdefault("formatter_class", HelpFormatter)
        super().__init__(**options)
