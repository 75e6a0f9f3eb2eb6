"""Questions across sessions: which sessions a store holds, and which runs were told what.

    list_sessions("postgresql://db.example/agents", tenant="acme", limit=20)
    find_runs("postgresql://db.example/agents", section_digest="blake3:…")
    find_runs("transcripts/", facts={"branch": "release"}, since=yesterday)

A PostgreSQL database answers from its indexes (schema version 2: the columns a trigger fills
from each ``run-context`` line); a directory of transcript files is scanned (its transcripts:
the regular files whose first line is a transcript header). ``runcontext sessions`` and
``runcontext find`` print the same answers. docs/TRANSCRIPT.md (*Questions across sessions*)
states what each field means and the limits.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runcontext.transcript.store import is_postgres_dsn

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "FoundRun",
    "SessionSummary",
    "find_runs",
    "list_sessions",
    "transcript_files",
]

# How many sessions or runs a question returns unless told otherwise, and at most: a fleet
# holds millions; a question returns a page, newest first.
DEFAULT_LIMIT = 100
MAX_LIMIT = 100_000
# A transcript file's first line is its header: a file whose first this-many bytes hold no
# newline is not a transcript (headers are under 300 bytes).
_HEADER_BYTES = 4096
_TAIL_BLOCK = 64 * 1024  # bytes read per step when looking for a file's last run
_RUN_MARK = b'"type":"run-context"'
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class SessionSummary:
    """One session: ``tenant`` (``None`` for a file), ``session_id`` (a file's name),
    ``created`` (its header's time), ``updated`` (its last write: the session row's, or the
    file's modification time), ``runs`` (its last run's number, 0 before the first),
    ``last_run`` (that run's time), ``bytes`` (its size as a transcript file: a PostgreSQL
    session's lines and their newlines) and ``address`` (what ``runcontext log`` opens)."""

    tenant: str | None
    session_id: str
    created: datetime | None
    updated: datetime
    runs: int
    last_run: datetime | None
    bytes: int
    address: str


@dataclass(frozen=True)
class FoundRun:
    """One run that matched: where it is, its number, when it was recorded and its context
    digest; ``address`` is what ``runcontext log ADDRESS --run RUN`` opens."""

    tenant: str | None
    session_id: str
    run: int
    time: datetime | None
    digest: str | None
    address: str


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
    return limit


def _check_moment(value: datetime | None, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None:
        raise ValueError(f"{what} must be an aware datetime (a naive one's zone is a guess)")
    return value


def _check_range(since: datetime | None, until: datetime | None) -> None:
    _check_moment(since, "since")
    _check_moment(until, "until")
    if since is not None and until is not None and since > until:
        raise ValueError(f"since ({since.isoformat()}) is after until ({until.isoformat()})")


def list_sessions(
    target: str | os.PathLike[str],
    *,
    tenant: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    connect_timeout: float = 10,
) -> list[SessionSummary]:
    """The sessions of a PostgreSQL database (a ``postgresql://`` URI; its ``?tenant=`` is the
    ``tenant`` filter) or of a directory of transcript files, newest activity first: those
    last written at or after ``since`` and at or before ``until``, at most ``limit``."""
    _check_range(since, until)
    _check_limit(limit)
    if isinstance(target, str) and is_postgres_dsn(target):
        from runcontext.transcript import _fleet_postgres

        rows = _fleet_postgres.list_sessions(
            target,
            tenant=tenant,
            since=since,
            until=until,
            limit=limit,
            connect_timeout=connect_timeout,
        )
        return [SessionSummary(*row) for row in rows]
    if tenant is not None:
        raise ValueError("tenant is for a PostgreSQL URI; a directory of files has no tenants")
    chosen = []
    for path, status, header in transcript_files(target):
        updated = datetime.fromtimestamp(status.st_mtime, UTC)
        if (since is not None and updated < since) or (until is not None and updated > until):
            continue
        chosen.append((updated, path, status, header))
    chosen.sort(key=lambda found: (-found[0].timestamp(), found[1].name))
    summaries = []
    for updated, path, status, header in chosen[:limit]:  # the page only is read further
        runs, last_run = _last_run(path, status.st_size)
        summaries.append(
            SessionSummary(
                tenant=None,
                session_id=path.name,
                created=_moment(header.get("time")),
                updated=updated,
                runs=runs,
                last_run=last_run,
                bytes=status.st_size,
                address=os.fspath(path),
            )
        )
    return summaries


def find_runs(
    target: str | os.PathLike[str],
    *,
    section_digest: str | None = None,
    section_name: str | None = None,
    facts: Mapping[str, str] | None = None,
    tenant: str | None = None,
    session_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    connect_timeout: float = 10,
) -> list[FoundRun]:
    """The runs told a section with digest ``section_digest`` and one named ``section_name``
    (head or tail), every fact of ``facts`` with exactly that value, recorded at or after
    ``since`` and at or before ``until``: every criterion given must hold. Newest first, at
    most ``limit``. ``target`` is a ``postgresql://`` URI (its ``?tenant=`` and ``?session=``
    narrow the search as ``tenant`` and ``session_id`` do), a directory of transcript files or
    one transcript file."""
    _check_range(since, until)
    _check_limit(limit)
    told = dict(facts or {})
    for what, value in (("section_digest", section_digest), ("section_name", section_name)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    for name, value in told.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"facts must map str names to str values, not {name!r}: {value!r}")
    if isinstance(target, str) and is_postgres_dsn(target):
        from runcontext.transcript import _fleet_postgres

        rows = _fleet_postgres.find_runs(
            target,
            section_digest=section_digest,
            section_name=section_name,
            facts=told,
            tenant=tenant,
            session_id=session_id,
            since=since,
            until=until,
            limit=limit,
            connect_timeout=connect_timeout,
        )
        return [FoundRun(*row) for row in rows]
    if tenant is not None or session_id is not None:
        raise ValueError(
            "tenant and session_id are for a PostgreSQL URI; name a transcript file instead"
        )
    found: list[FoundRun] = []
    files: Iterator[tuple[Path, os.stat_result, dict[str, Any]]]
    if Path(target).is_file():
        files = iter([(Path(target), os.stat(target), {})])
    else:
        files = transcript_files(target)
    for path, _, _ in files:
        for record in _runs_of(path):
            time = _moment(record.get("time"))
            if (since is not None and (time is None or time < since)) or (
                until is not None and (time is None or time > until)
            ):
                continue
            if not _told(record, section_digest, section_name, told):
                continue
            run = record.get("run")
            found.append(
                FoundRun(
                    tenant=None,
                    session_id=path.name,
                    run=run if isinstance(run, int) else 0,
                    time=time,
                    digest=record.get("digest") if isinstance(record.get("digest"), str) else None,
                    address=os.fspath(path),
                )
            )
    # Newest first (a run without a time last); at one moment by session, later runs first,
    # as the database orders them.
    found.sort(key=lambda r: (r.run,), reverse=True)
    found.sort(key=lambda r: r.session_id)
    found.sort(key=lambda r: (r.time is not None, r.time or _OLDEST), reverse=True)
    return found[:limit]


def transcript_files(
    directory: str | os.PathLike[str],
) -> Iterator[tuple[Path, os.stat_result, dict[str, Any]]]:
    """The transcripts directly in ``directory`` (not in its subdirectories), in name order:
    each regular file (a symlink is not followed) whose name does not begin with a dot (a
    transcript being created is a dot-file until it is linked into place) and whose first line
    is a transcript header, with its status and that header. Anything else is skipped."""
    root = Path(directory)
    try:
        names = sorted(os.listdir(root))
    except NotADirectoryError:
        raise NotADirectoryError(
            f"{os.fspath(root)}: not a directory (give a directory of transcripts)"
        ) from None
    except FileNotFoundError:
        raise FileNotFoundError(f"no such directory: {os.fspath(root)}") from None
    for name in names:
        if name.startswith("."):
            continue
        path = root / name
        try:
            status = os.lstat(path)
        except FileNotFoundError:  # deleted since it was listed
            continue
        if not stat.S_ISREG(status.st_mode):
            continue
        header = read_header(path)
        if header is not None:
            yield path, status, header


def read_header(path: Path) -> dict[str, Any] | None:
    """The header record that begins the file ``path``, or ``None`` if it does not begin
    with one (or cannot be read): how a transcript is told from any other file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        first = os.pread(fd, _HEADER_BYTES, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    end = first.find(b"\n")
    if end < 0:
        return None
    try:
        record = json.loads(first[:end])
    except ValueError:
        return None
    if (
        isinstance(record, dict)
        and record.get("type") == "header"
        and record.get("format") == "runcontext-transcript"
    ):
        return record
    return None


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _last_run(path: Path, size: int) -> tuple[int, datetime | None]:
    """The number and time of the file's last ``run-context``, read from its end backwards."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return 0, None
    try:
        end = size
        carry = b""  # the start of a line that began in the block after this one
        while end > 0:
            start = max(0, end - _TAIL_BLOCK)
            block = os.pread(fd, end - start, start) + carry
            lines = block.split(b"\n")
            # The first piece may be the end of a line that began before this block.
            carry = lines.pop(0) if start > 0 else b""
            for line in reversed(lines):
                if _RUN_MARK in line:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("type") == "run-context":
                        run = record.get("run")
                        return (run if isinstance(run, int) else 0), _moment(record.get("time"))
            end = start
    finally:
        os.close(fd)
    return 0, None


def _runs_of(path: Path) -> Iterator[dict[str, Any]]:
    """The ``run-context`` records of a transcript file (a line that does not parse is
    skipped: ``runcontext log`` is where a transcript is verified)."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, across the generator's life
    except OSError:
        return
    with file:
        for line in file:
            if _RUN_MARK not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("type") == "run-context":
                yield record


def _told(
    record: dict[str, Any],
    section_digest: str | None,
    section_name: str | None,
    facts: Mapping[str, str],
) -> bool:
    sections = record.get("sections")
    sections = sections if isinstance(sections, list) else []
    if section_digest is not None and not any(
        isinstance(s, dict) and s.get("digest") == section_digest for s in sections
    ):
        return False
    if section_name is not None and not any(
        isinstance(s, dict) and s.get("name") == section_name for s in sections
    ):
        return False
    if facts:
        pairs = record.get("facts")
        told = {
            p[0]: p[1]
            for p in (pairs if isinstance(pairs, list) else [])
            if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
        }
        if any(told.get(name) != value for name, value in facts.items()):
            return False
    return True
