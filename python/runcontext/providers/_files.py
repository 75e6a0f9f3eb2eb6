"""Bounded reads of files a repository controls (HEAD, refs, packed-refs, AGENTS.md).

Any of these names may be a FIFO, a device, a directory or a loop of links planted by
whoever made the repository, and a regular file may be a 2 GB sparse file or one endless
line. So:

- the path is ``stat``-ed first and anything but a regular file is refused *without being
  opened* (opening some devices has effects: a tape rewinds, a terminal can become the
  controlling one); a loop of links fails that ``stat`` (``ELOOP``);
- the open uses ``O_NONBLOCK`` (a FIFO swapped in after the ``stat`` cannot block it) and
  ``O_NOCTTY``, and ``fstat`` on the descriptor checks it is still that regular file;
- reads are ``os.read`` calls of at most :data:`CHUNK` bytes, which release the GIL, up to
  a byte budget the caller gives, with the deadline checked between chunks: a file past
  its budget or its time is the caller's diagnostic, never a stall. No read copies more
  than one chunk at a time, and nothing is ``mmap``-ed (a search through a mapping holds
  the GIL for as long as it runs: seconds, on a 2 GB file).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator

__all__ = [
    "CHUNK",
    "NotRegularFileError",
    "ReadTimeoutError",
    "chunks",
    "open_regular",
    "read_regular",
]

CHUNK = 64 * 1024  # one os.read
_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class NotRegularFileError(OSError):
    """The path names a directory, a FIFO, a device or a socket, not a regular file."""


class ReadTimeoutError(TimeoutError):
    """The deadline passed while a file was being read; what was read is dropped."""


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result] | None:
    """An open descriptor on the regular file ``path`` and its ``fstat``; close it yourself.

    ``None`` when there is no such file; :class:`NotRegularFileError` when it is not a
    regular file (it is then never opened); any other ``OSError`` (permission denied, a
    loop of links) as raised.
    """
    try:
        before = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFileError(f"{os.fspath(path)} is not a regular file")
    try:
        fd = os.open(path, _FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise NotRegularFileError(f"{os.fspath(path)} was replaced while it was opened")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def chunks(fd: int, budget: int, deadline: float | None, path: object) -> Iterator[bytes]:
    """The file's bytes in reads of at most :data:`CHUNK`, ``budget`` bytes in all.

    Stops at the end of the file or once ``budget`` bytes were read; raises
    :class:`ReadTimeoutError` when ``deadline`` (``time.monotonic()``) has passed between
    two reads.
    """
    left = budget
    while left > 0:
        # Between reads, not before the first: a file of one chunk is always read.
        if left < budget and deadline is not None and time.monotonic() > deadline:
            raise ReadTimeoutError(f"stopped reading {path} at the deadline")
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def read_regular(
    path: str | os.PathLike[str], limit: int, deadline: float | None = None
) -> tuple[bytes, os.stat_result] | None:
    """Up to ``limit`` bytes of the regular file ``path`` and its ``fstat``.

    ``None`` when there is no such file; :class:`NotRegularFileError` when it is not a
    regular file; :class:`ReadTimeoutError` past ``deadline``; any other ``OSError``
    (permission denied, a loop of links) as raised.
    """
    opened = open_regular(path)
    if opened is None:
        return None
    fd, info = opened
    try:
        return b"".join(chunks(fd, limit, deadline, os.fspath(path))), info
    finally:
        os.close(fd)
