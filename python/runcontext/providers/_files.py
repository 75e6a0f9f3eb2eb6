"""Bounded reads of files a repository controls (HEAD, refs, AGENTS.md).

Any of these names may be a FIFO, a device or a directory planted by whoever made the
repository. The open uses ``O_NONBLOCK`` so a FIFO cannot block it, ``fstat`` on the open
descriptor refuses anything but a regular file, and ``read`` takes at most ``limit`` bytes,
so a 1 GB file costs ``limit`` bytes of I/O.
"""

from __future__ import annotations

import os
import stat

__all__ = ["NotRegularFileError", "read_regular"]


class NotRegularFileError(OSError):
    """The path names a directory, a FIFO, a device or a socket, not a regular file."""


def read_regular(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result] | None:
    """Up to ``limit`` bytes of the regular file ``path`` and its ``fstat``.

    ``None`` when there is no such file; :class:`NotRegularFileError` when it is not a
    regular file; any other ``OSError`` (permission denied, a loop of links) as raised.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(f"{os.fspath(path)} is not a regular file")
        return file.read(limit), info
