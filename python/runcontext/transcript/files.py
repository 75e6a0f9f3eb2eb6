"""The file store: a transcript as an append-only JSONL file, locked with ``flock``.

Writers append under an exclusive ``flock``, each record with one ``write`` of the whole line
on an ``O_APPEND`` descriptor, so lines never interleave and a crash leaves at most one torn
last line. An append goes only to the file the store opened (its device and inode): a path
that names another file or none by then is refused before anything is written. Readers take
no lock. The file is read in bounded chunks, so a huge or sparse file costs at most the line
cap in memory. See docs/TRANSCRIPT.md (*File names*, *Crash safety*, *Concurrent writers and
readers*, *The file a session appends to*, *Limits*).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: sessions need flock, and there is no stand-in for it here
    raise ImportError(
        f"runcontext transcripts need POSIX file locking (fcntl.flock), which this platform "
        f"({sys.platform}) does not have: use runcontext.transcript on Linux, macOS or another "
        "POSIX system (WSL on Windows); RunContext and the adapters need no locking and work "
        "everywhere"
    ) from None

from runcontext._core import DEFAULT_MAX_LINE_BYTES
from runcontext.transcript.errors import TranscriptError, TranscriptReplacedError, shown_name

__all__ = ["FileStore", "LineTooLong"]

# Why opening a file for writing failed when it can still be read: fall back to read-only.
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_CHUNK = 1 << 20  # bytes read per system call: the reader's buffer, beside the line cap
_BATCH = 8 << 20  # complete lines returned by one read, at most (about): memory stays bounded


def _path_name(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """The file's name as ``pathlib.Path`` prints it (no doubled or trailing slash, no ``.``
    component). A bytes path is decoded as ``os.fsdecode`` does: a byte that is not UTF-8
    becomes a lone surrogate, which the ``os`` functions turn back into the same byte. A str
    holding a lone surrogate that stands for no byte is refused (``ValueError`` naming it)."""
    name = os.fspath(Path(os.fsdecode(path)))
    try:
        os.fsencode(name)
    except UnicodeEncodeError as error:
        raise ValueError(
            f"path: {shown_name(name)} holds {shown_name(error.object[error.start : error.end])}, "
            "a lone surrogate that stands for no byte of a file name; pass the name as bytes, "
            "or as os.fsdecode(bytes) gives it"
        ) from None
    return name


class LineTooLong(Exception):
    """A record longer than the cap; ``lines`` are the complete lines read before it (from
    :meth:`FileStore.read_chunks`: the chunks of them, as it returns them)."""

    def __init__(self, lines: list[bytes], cursor: int, cap: int) -> None:
        super().__init__(f"a record is longer than the {cap}-byte line cap")
        self.lines = lines
        self.cursor = cursor
        self.cap = cap


def _describe_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


class FileStore:
    """One transcript file (implements :class:`~runcontext.transcript.store.TranscriptStore`).

    ``FileStore(path)`` opens nothing; :meth:`open` opens an existing file, :meth:`create`
    makes a new one. ``writable=None`` opens for appending when this process may write the
    file and read-only otherwise; ``True`` insists (``PermissionError``); ``False`` only reads.
    """

    def __init__(
        self,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        *,
        durable: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._path = _path_name(path)
        self._shown = shown_name(self._path)  # what messages show (docs/TRANSCRIPT.md)
        self._durable = durable
        self._max_line_bytes = max_line_bytes
        self._fd = -1
        self._file: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._pid = os.getpid()
        self._writable = False
        self._closer: weakref.finalize[..., FileStore] | None = None
        self.partial = 0  # bytes after the last newline at the end of the last read

    # --- the protocol ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._path

    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def is_open(self) -> bool:
        return self._closer is not None and self._closer.alive

    def create(self, lines: Sequence[bytes]) -> None:
        """Write ``lines`` aside and hard-link the file into place: complete or absent, and an
        existing file is never overwritten (``FileExistsError``)."""
        data = b"".join(lines)
        target = self.path
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if self._durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            try:  # link() fails if the target exists; a reader never sees a partial header
                os.link(temporary, target)
            except FileExistsError:
                raise FileExistsError(
                    errno.EEXIST,
                    f"{self._shown} already exists; open it with Session.open(path) to resume "
                    "it, or choose another path",
                ) from None
        finally:
            os.unlink(temporary)
        if self._durable:
            _fsync_directory(target.parent)

    def open(self, *, writable: bool | None) -> None:
        """Open the existing file. Anything but a regular file is refused before it is read
        (a FIFO would block a reader forever)."""
        flags = os.O_CLOEXEC | os.O_NONBLOCK  # O_NONBLOCK: opening a FIFO must not block
        can_write = writable is not False
        fd = -1
        if can_write:
            try:
                fd = os.open(self._path, flags | os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                raise self._missing() from None
            except IsADirectoryError:
                fd = -1  # reported below, as for any other non-regular file
            except OSError as error:
                if error.errno not in _READ_ONLY_ERRNOS:
                    raise
                if writable:
                    raise PermissionError(
                        error.errno,
                        f"{self._shown}: cannot be opened for appending "
                        f"({os.strerror(error.errno or 0)}); open it with writable=False (or "
                        "the default) to read it",
                    ) from None
                can_write = False
        if fd < 0:
            try:
                fd = os.open(self._path, flags | os.O_RDONLY)
            except FileNotFoundError:
                raise self._missing() from None
            can_write = False
        try:
            status = os.fstat(fd)
            mode = status.st_mode
            if not stat.S_ISREG(mode):
                raise TranscriptError(
                    f"{_describe_kind(mode)}, not a regular file: a transcript is a regular "
                    "file (nothing was read from it)",
                    path=self._path,
                    line=None,
                )
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._file = (status.st_dev, status.st_ino)
        self._writable = can_write
        self._pid = os.getpid()
        self._closer = weakref.finalize(self, os.close, fd)

    def _missing(self) -> FileNotFoundError:
        return FileNotFoundError(
            errno.ENOENT,
            f"No such file: {self._shown}; start a transcript with Session.create(path, messages)",
        )

    def close(self) -> None:
        if self._closer is not None:
            self._closer()

    def read(self, cursor: object | None) -> tuple[list[bytes], int]:
        """The complete lines after byte offset ``cursor``: :meth:`read_chunks`, split."""
        try:
            chunks, position = self.read_chunks(cursor)
        except LineTooLong as error:
            error.lines = _split(error.lines)
            raise
        return _split(chunks), position

    @property
    def chunked(self) -> bool:
        """Whether the session should read with :meth:`read_chunks`: yes, unless a subclass
        reads its own way (it overrides :meth:`read`)."""
        return type(self).read is FileStore.read

    def read_chunks(self, cursor: object | None) -> tuple[list[bytes], int]:
        """The complete lines after byte offset ``cursor`` as chunks of them: each chunk is one
        or more lines joined by newlines (``chunk.split(b"\\n")`` gives them), so the session
        hands them to the core whole instead of making an object of each line. The file is
        read ``_CHUNK`` bytes a system call and returned in batches of about ``_BATCH``
        bytes: memory stays within one batch plus the line cap. :attr:`partial` is then the
        length of an incomplete last line (0 if the file ends with a newline)."""
        position = 0 if cursor is None else int(cursor)  # type: ignore[call-overload]
        size = os.fstat(self._fd).st_size
        if size < position:
            raise TranscriptError(
                f"the file is {size} bytes, shorter than the {position} bytes of records "
                "already read: another program truncated or rewrote it; reopen it",
                path=self._path,
                line=None,
            )
        chunks: list[bytes] = []
        pending: list[bytes] = []  # the incomplete line after the last newline, in pieces
        partial = 0  # its length
        start_position = position
        while position + partial < size:
            chunk = os.pread(self._fd, min(_CHUNK, size - position - partial), position + partial)
            if not chunk:
                break
            last = chunk.rfind(b"\n")
            if last < 0:
                pending.append(chunk)
                partial += len(chunk)
            else:
                first = 0  # where this chunk's first line begins
                if pending:  # the line begun in the chunks before ends at the first newline
                    first = chunk.find(b"\n") + 1
                    chunks.append(b"".join([*pending, chunk[: first - 1]]))
                if first <= last:  # the whole lines after it, as one chunk
                    chunks.append(chunk[first:last])
                position += partial + last + 1
                rest = chunk[last + 1 :]
                pending = [rest] if rest else []
                partial = len(rest)
            if partial > self._max_line_bytes:
                raise LineTooLong(chunks, position, self._max_line_bytes)
            if position - start_position >= _BATCH:
                self.partial = 0  # not at the end: the caller reads on from the cursor
                return chunks, position
        self.partial = partial
        return chunks, position

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the exclusive lock for one append, once the path still names the file opened
        (:class:`TranscriptReplacedError` if not): checked once the lock is held, before
        anything is written (another program replacing the file during the append, which takes
        no lock, is caught by the next one). A process forked from the one that opened the
        file first opens a descriptor of its own: an inherited descriptor shares the parent's
        lock, which would then exclude nobody."""
        self._own_descriptor()
        with _flock(self._fd, fcntl.LOCK_EX):
            self.check_appendable()
            yield

    def check_appendable(self) -> None:
        """Raise :class:`TranscriptReplacedError` if the path no longer names the file this
        store opened (replaced by a rename, renamed away, deleted, or a symlink re-pointed):
        an append would go to a file nobody finds at the path, or to one never verified."""
        try:
            status = os.stat(self._path)
        except (FileNotFoundError, NotADirectoryError):  # a directory on the way is gone too
            raise self._gone() from None
        if (status.st_dev, status.st_ino) != self._file:
            raise self._replaced(
                "the path names another file now than the one this session opened and "
                "verified (it was replaced, as an editor's save, rsync and sed -i do, or the "
                "path is a symlink pointed elsewhere since)"
            )

    def _gone(self) -> TranscriptReplacedError:
        return TranscriptReplacedError(
            "the path names no file now: the file this session opened was renamed or deleted; "
            "nothing was written: open the transcript where it is now (Session.open) to "
            "continue it, or start a new one (Session.create)",
            path=self._path,
            line=None,
        )

    def _replaced(self, what: str) -> TranscriptReplacedError:
        return TranscriptReplacedError(
            f"{what}; nothing was written: open the path again (Session.open) to continue "
            "the file now there (its records are verified then)",
            path=self._path,
            line=None,
        )

    def append(self, lines: Sequence[bytes]) -> int:
        """Write each line with one ``write`` (finishing a short one under the lock), then
        ``fsync`` once if durable: one fsync makes the whole batch durable. Returns the cursor
        after the lines: the file's length (the lock keeps other writers out)."""
        start = os.fstat(self._fd).st_size
        written = 0
        try:
            for data in lines:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                written += 1
            if self._durable:
                os.fsync(self._fd)
            return start + sum(len(data) for data in lines)
        except BaseException as error:
            # A failed or interrupted write (disk full, a signal) must not leave a torn line for
            # the next writer to glue its record onto. Its complete lines stay, as a crash at
            # this point would leave them: a lock-free reader may already have read them.
            complete = start + sum(len(data) for data in lines[:written])
            with suppress(OSError):  # if this fails too, the next open reports a torn line
                os.ftruncate(self._fd, complete)
            if written:
                error.add_note(
                    f"runcontext: {written} of the {len(lines)} records of this append were "
                    f"written to {self._shown} before it failed"
                )
            raise

    # --- what only a file has -------------------------------------------------------------

    def _own_descriptor(self) -> None:
        if os.getpid() == self._pid:
            return
        # A forked child: its copy of the descriptor shares the parent's open file
        # description, and so its flock. Open the file anew for this process: the same file
        # the parent verified, or none (the path may name another file by now).
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise self._gone() from None
        status = os.fstat(fd)
        if (status.st_dev, status.st_ino) != self._file:
            os.close(fd)
            raise self._replaced(
                "this forked process reopened the path to append and found another file than "
                "the one the session opened and verified (it was replaced, or the path is a "
                "symlink pointed elsewhere since)"
            )
        if self._closer is not None:
            self._closer.detach()
        with suppress(OSError):
            os.close(self._fd)  # the child's copy; the parent's descriptor is unaffected
        self._fd = fd
        self._pid = os.getpid()
        self._closer = weakref.finalize(self, os.close, fd)

    def writer_active(self) -> bool:
        """Whether another writer holds the lock now (without waiting for it)."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return False

    def shared(self) -> AbstractContextManager[None]:
        """Hold a shared lock: no writer appends while it is held."""
        return _flock(self._fd, fcntl.LOCK_SH)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        if self._durable:
            os.fsync(self._fd)


@contextmanager
def _flock(fd: int, operation: int) -> Iterator[None]:
    """Hold ``flock(fd, operation)`` for a ``with`` block."""
    fcntl.flock(fd, operation)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _split(chunks: list[bytes]) -> list[bytes]:
    return [line for chunk in chunks for line in chunk.split(b"\n")]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
