"""Retention: delete whole sessions by age, tenant or id, and the section bodies no remaining
record names, safely while writers append.

    plan = prune("postgresql://db.example/agents", older_than=timedelta(days=30))  # dry run
    done = prune("postgresql://db.example/agents", older_than=timedelta(days=30), delete=True)
    prune("transcripts/", older_than=timedelta(days=30), delete=True)

Nothing is deleted unless ``delete=True``: the default reports what would go. A session goes
whole or not at all; a record is never rewritten. In PostgreSQL a session is deleted under its
row lock (a writer in the middle of an append finishes first, and a session written to since
it was chosen is kept), and a section body is deleted only under the tenant's sweep lock,
which every writer that offers a body holds shared until it commits. A transcript file is
deleted only while its writer's lock is free, held by the pruner until the file is gone.
docs/TRANSCRIPT.md (*Retention*) states the rules and why they are safe.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from runcontext.transcript.fleet import read_header, transcript_files
from runcontext.transcript.store import is_postgres_dsn

__all__ = ["PruneReport", "PrunedSession", "prune"]


@dataclass(frozen=True)
class PrunedSession:
    """A session that goes (or went): ``tenant`` (``None`` for a file), ``session_id`` (a
    file's name), its size as a transcript file and its record count (``None`` for a file,
    which is not read to count them)."""

    tenant: str | None
    session_id: str
    bytes: int
    records: int | None


@dataclass(frozen=True)
class PruneReport:
    """What a prune deleted (``deleted``) or would delete (a dry run): the sessions, the
    section bodies no remaining record names and their bytes, and the sessions chosen but
    kept because a writer was using them (a file whose lock was held, a session written to
    since it was chosen)."""

    deleted: bool
    sessions: list[PrunedSession] = field(default_factory=list)
    sections: int = 0
    section_bytes: int = 0
    kept: list[PrunedSession] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        """The sessions' bytes (as transcript files) and the section bodies' bytes."""
        return sum(s.bytes for s in self.sessions) + self.section_bytes


def _check_age(older_than: timedelta | None) -> timedelta | None:
    if older_than is None:
        return None
    if not isinstance(older_than, timedelta):
        raise TypeError(f"older_than must be a timedelta, not {type(older_than).__name__}")
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, not {older_than}")
    return older_than


def prune(
    target: str | os.PathLike[str],
    *,
    older_than: timedelta | None = None,
    tenant: str | None = None,
    session_ids: Sequence[str] = (),
    delete: bool = False,
    connect_timeout: float = 10,
) -> PruneReport:
    """Delete (``delete=True``) or report the sessions of ``target`` that match every
    criterion given: last written more than ``older_than`` ago, of ``tenant`` (PostgreSQL),
    one of ``session_ids`` (session ids, or a directory's file names). At least one criterion
    is required (a prune of everything is a ``DROP``, not a prune). ``target`` is a
    ``postgresql://`` URI (its ``?tenant=`` is the ``tenant`` criterion) or a directory of
    transcript files."""
    older_than = _check_age(older_than)
    if isinstance(session_ids, str) or not all(isinstance(s, str) for s in session_ids):
        raise TypeError("session_ids must be a sequence of str")
    if isinstance(target, str) and is_postgres_dsn(target):
        from runcontext.transcript import _prune_postgres

        chosen, sections, section_bytes, kept = _prune_postgres.prune(
            target,
            older_than=older_than,
            tenant=tenant,
            session_ids=list(session_ids),
            delete=delete,
            connect_timeout=connect_timeout,
        )
        return PruneReport(
            deleted=delete,
            sessions=[PrunedSession(*row) for row in chosen],
            sections=sections,
            section_bytes=section_bytes,
            kept=[PrunedSession(*row) for row in kept],
        )
    if tenant is not None:
        raise ValueError("tenant is for a PostgreSQL URI; a directory of files has no tenants")
    if older_than is None and not session_ids:
        raise ValueError(
            "nothing chooses what to prune: give older_than or session_ids (the whole "
            "directory is never pruned by default)"
        )
    return _prune_files(Path(target), older_than, set(session_ids), delete)


def _prune_files(
    directory: Path, older_than: timedelta | None, names: set[str], delete: bool
) -> PruneReport:
    cutoff = None if older_than is None else time.time() - older_than.total_seconds()
    chosen: list[PrunedSession] = []
    kept: list[PrunedSession] = []
    for path, status, _ in transcript_files(directory):
        if names and path.name not in names:
            continue
        if cutoff is not None and status.st_mtime >= cutoff:
            continue
        entry = PrunedSession(None, path.name, status.st_size, None)
        outcome = _delete_file(path, status, cutoff, delete)
        (chosen if outcome else kept).append(entry)
    return PruneReport(deleted=delete, sessions=chosen, kept=kept)


def _delete_file(path: Path, status: os.stat_result, cutoff: float | None, delete: bool) -> bool:
    """Delete the transcript ``path`` (or, in a dry run, check that it could be): only while
    no writer holds its lock, which the pruner then holds until the name is gone, and only if
    the name still holds the same file, still a transcript, still as old. A writer that
    later takes the lock finds the path names no file and appends nothing
    (``TranscriptReplacedError``). Returns whether it was (or would be) deleted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False  # gone or replaced since it was listed: not ours to judge any more
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a writer is appending right now
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (status.st_dev, status.st_ino):
            return False
        if cutoff is not None and now.st_mtime >= cutoff:
            return False  # written to since it was listed
        try:
            named = os.lstat(path)
        except FileNotFoundError:
            return False
        if (named.st_dev, named.st_ino) != (now.st_dev, now.st_ino) or read_header(path) is None:
            return False
        if delete:
            os.unlink(path)
        return True
    finally:
        os.close(fd)  # releases the lock
