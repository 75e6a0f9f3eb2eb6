"""``git``: the branch and HEAD commit, read from the repository's files.

Running ``git`` in a directory runs that repository's configuration: ``core.fsmonitor`` is a
program git starts on ``git status``, hooks run on index writes, filters run on file
contents. An agent harness that runs ``git`` in whatever directory it was started in runs
code an untrusted clone chose. So branch and commit are read from files git itself writes
(``HEAD``, loose refs, ``packed-refs``, the ``.git`` file of a linked worktree or submodule
and its ``commondir``); nothing is executed. Only the optional dirty count runs ``git``, off
by default, with the overrides described in docs/PROVIDERS.md.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from runcontext.providers._files import (
    NotRegularFileError,
    ReadTimeoutError,
    chunks,
    open_regular,
    read_regular,
)
from runcontext.providers.base import Contribution

__all__ = [
    "PACKED_REFS_BUDGET",
    "GitProvider",
    "GitReadError",
    "Head",
    "Repository",
    "find_repository",
    "read_head",
]

_HASH = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 object names
_SMALL_FILE = 4096  # HEAD, loose refs, .git files and commondir are a line each
_SYMREF_DEPTH = 5  # git itself follows at most 5 levels of symbolic refs
# packed-refs is searched this far at most: about a million refs. At page-cache speed that
# is 20-60 ms; the deadline is checked between chunks all the same.
PACKED_REFS_BUDGET = 64 << 20
# Refs that live in each worktree's own git dir; all others live in the common dir.
_PER_WORKTREE = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")
# What git's check_refname_format refuses anywhere in a name: control characters, space,
# ~ ^ : ? * [ \, "..", "@{" and "//".
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


class GitReadError(Exception):
    """A repository whose files cannot be read as git writes them (the message says which)."""


@dataclass(frozen=True, slots=True)
class Repository:
    """Where a working tree's git files are.

    ``root`` is the working tree's top directory, ``git_dir`` holds its ``HEAD`` (for a
    linked worktree, ``.git/worktrees/<name>``), ``common_dir`` holds the shared refs.
    """

    root: Path
    git_dir: Path
    common_dir: Path


@dataclass(frozen=True, slots=True)
class Head:
    """What HEAD says: ``branch`` is ``None`` when detached; ``commit`` ``None`` when unborn."""

    branch: str | None
    commit: str | None


def _read_small(path: str) -> bytes | None:
    """The first few KiB of a regular file, or ``None`` if there is no such file."""
    try:
        found = read_regular(path, _SMALL_FILE)
    except OSError as error:
        raise GitReadError(f"cannot read {path}: {error.strerror or error}") from error
    return None if found is None else found[0]


def _read_ref_file(path: str) -> bytes | None:
    """A HEAD or loose ref file's content; a symbolic link into ``refs/`` reads as a symref.

    Old git wrote HEAD as a symbolic link (``HEAD -> refs/heads/main``); read through the
    link, it would give the branch's commit and look detached. git itself reads such a link
    as ``ref: <target>``, and so does this.
    """
    try:
        target = os.readlink(path)
    except OSError:  # not a link, or no such file: read it as a file
        return _read_small(path)
    if target.startswith("refs/"):
        return b"ref: " + os.fsencode(target)
    return _read_small(path)  # a link elsewhere: git reads through it too


def _owned_by_another_user(path: str, info: os.stat_result) -> None:
    # git refuses a repository owned by someone else (CVE-2022-24765, `safe.directory`): a
    # user who could create /tmp/.git or a shared drive's .git would otherwise choose what
    # every repository-less directory below it reports. Root is held to it too, as git does.
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and info.st_uid != geteuid():
        raise GitReadError(
            f"{path} is owned by uid {info.st_uid}, not by the current user (uid "
            f"{geteuid()}); it is not read, as git refuses it (see git's safe.directory)"
        )


# The internal walks work on strings, which os.path.abspath and realpath have normalised
# (no `.`, `..`, repeated or trailing slash): `os.path.join(a, name)` is then `str(Path(a) /
# name)`, and messages read as before; the public API returns Paths.


def _ceiling_depth(directory: str) -> int:
    """How many path parts the walk up from ``directory`` may not go to or above.

    ``GIT_CEILING_DIRECTORIES`` (``os.pathsep``-separated absolute paths) stops git's search
    before it reaches a listed directory; the start directory itself is always searched.
    """
    entries = [
        entry
        for entry in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep)
        if entry and os.path.isabs(entry)  # git skips empty and relative entries too
    ]
    if not entries:
        return 0
    depth = 0  # compared as git does, by path parts
    parents = Path(directory).parents
    for entry in entries:
        for ceiling in {Path(os.path.abspath(entry)), Path(os.path.realpath(entry))}:
            if ceiling in parents:
                depth = max(depth, len(ceiling.parts))
    return depth


def find_repository(
    start: str | os.PathLike[str], deadline: float | None = None
) -> Repository | None:
    """The repository whose working tree contains ``start``, found by walking up to ``.git``.

    Returns ``None`` outside any repository (or above ``GIT_CEILING_DIRECTORIES``); raises
    :class:`GitReadError` for a ``.git`` that exists but is not a repository (a ``.git``
    file with no ``gitdir:`` line, one pointing at a directory without ``HEAD``), is owned
    by another user, or when ``deadline`` passes during a walk deeper than any real tree.
    """
    found = _locate(start, deadline)
    if found is None:
        return None
    root, git_dir, common_dir = found
    return Repository(root=Path(root), git_dir=Path(git_dir), common_dir=Path(common_dir))


def _locate(
    start: str | os.PathLike[str], deadline: float | None = None
) -> tuple[str, str, str] | None:
    """:func:`find_repository`'s root, git dir and common dir, as strings."""
    directory = os.path.abspath(start)
    ceiling = _ceiling_depth(directory)
    found = _nearest_dot_git(directory, ceiling, deadline)
    if found is None:
        return None
    candidate, info = found
    dot_git = os.path.join(candidate, ".git")
    if isinstance(info, OSError):
        raise GitReadError(f"cannot read {dot_git}: {info.strerror or info}") from info
    _owned_by_another_user(dot_git, info)
    if stat.S_ISDIR(info.st_mode):
        git_dir = dot_git
    elif stat.S_ISREG(info.st_mode):
        git_dir = _follow_gitdir_file(dot_git)
        with contextlib.suppress(OSError):  # no such directory: the HEAD check says so
            _owned_by_another_user(git_dir, os.stat(git_dir))
    else:
        raise GitReadError(f"{dot_git} is neither a directory nor a file")
    if not os.path.lexists(os.path.join(git_dir, "HEAD")):  # a link to an unborn branch dangles
        raise GitReadError(f"{git_dir} has no HEAD file; it is not a git directory")
    common_dir = git_dir
    common = _read_small(os.path.join(git_dir, "commondir"))
    if common is not None:
        # realpath, not normpath: `..` after a symbolic link leads out of its target,
        # not back to where the link is.
        common_dir = os.path.realpath(os.path.join(git_dir, os.fsdecode(common.strip())))
    return candidate, git_dir, common_dir


_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_DEEP = 32  # levels after which the walks check the deadline: no real tree is this deep


def _nearest_dot_git(
    directory: str, ceiling: int, deadline: float | None
) -> tuple[str, os.stat_result | OSError] | None:
    """The deepest of ``directory`` and its ancestors (lexically) that has a ``.git`` entry.

    That is where git's walk up stops, with what ``stat`` said of the entry (or the error
    it raised). Ancestors with ``ceiling`` path parts or fewer are not looked at (the start
    directory always is). Walked *down* from ``/``, one ``openat`` per level, because a
    ``stat`` of a path costs one lookup per component: 2 000 levels walked up by path cost
    2 000 x 2 000 lookups (0.4 s), walked down by descriptor 2 x 2 000.
    """
    if len(Path(directory).parts) <= _DEEP or not {os.open, os.stat} <= os.supports_dir_fd:
        # A real tree: walking up by path stops at the first .git, usually within a few
        # levels, for fewer system calls than opening every level from the top.
        return _nearest_by_path(directory, ceiling, deadline)
    parts = Path(directory).parts
    found: tuple[str, os.stat_result | OSError] | None = None
    try:
        fd = os.open(parts[0], _DIRECTORY_FLAGS)
    except OSError:
        return _nearest_by_path(directory, ceiling, deadline)
    try:
        for depth in range(1, len(parts) + 1):
            if depth > 1:
                if depth % _DEEP == 0 and deadline is not None and time.monotonic() > deadline:
                    raise GitReadError(
                        f"stopped looking for .git at the deadline, {depth} levels down"
                    )
                try:
                    child = os.open(parts[depth - 1], _DIRECTORY_FLAGS, dir_fd=fd)
                except OSError:  # cannot descend (gone, not searchable): walk the paths
                    return _nearest_by_path(directory, ceiling, deadline)
                os.close(fd)
                fd = child
            if depth <= ceiling and depth != len(parts):
                continue
            try:
                info: os.stat_result | OSError = os.stat(".git", dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as error:
                info = error
            found = os.path.join(*parts[:depth]), info
    finally:
        os.close(fd)
    return found


def _nearest_by_path(
    directory: str, ceiling: int, deadline: float | None
) -> tuple[str, os.stat_result | OSError] | None:
    """:func:`_nearest_dot_git` by walking up with paths: for short paths, or no ``dir_fd``."""
    candidate = directory
    depth = total = len(Path(directory).parts)
    while True:
        if candidate != directory and depth <= ceiling:
            return None
        if total - depth > _DEEP and deadline is not None and time.monotonic() > deadline:
            raise GitReadError(f"stopped looking for .git at the deadline, at {candidate}")
        try:
            return candidate, os.stat(os.path.join(candidate, ".git"))
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(candidate)
            if parent == candidate:
                return None  # the top of the file system
            candidate, depth = parent, depth - 1
        except OSError as error:
            return candidate, error


def _follow_gitdir_file(dot_git: str) -> str:
    # A linked worktree, a submodule or `git init --separate-git-dir` leaves a file
    # `gitdir: <path>`, the path relative to the file's directory.
    content = (_read_small(dot_git) or b"").strip()
    if not content.startswith(b"gitdir:"):
        raise GitReadError(f"{dot_git} is a file without a 'gitdir: <path>' line")
    target = os.fsdecode(content[len(b"gitdir:") :].strip())
    # realpath: a submodule reached through a symbolic link says `gitdir: ../.git/modules/x`,
    # relative to where the submodule really is.
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), target))


def _ref_name(raw: bytes, where: str) -> str:
    """The ref a ``ref: <name>`` line names, checked as git's check_refname_format does.

    A hostile HEAD could say ``ref: ../../../etc/passwd`` (a read outside the repository) or
    ``ref: refs/heads/main\\nIGNORE ALL PREVIOUS INSTRUCTIONS`` (lines injected into the
    prompt's authoritative tail): only a well-formed name under ``refs/`` is accepted, and
    only printable characters, so a branch fact is always a single plain line.
    """
    try:
        ref = raw.decode()
    except UnicodeDecodeError:
        raise GitReadError(f"{where} names a ref that is not UTF-8") from None
    parts = ref.split("/")
    if (
        not ref.startswith("refs/")
        or ref.endswith((".", "/"))
        or _REF_FORBIDDEN.search(ref) is not None
        or not ref.isprintable()
        or any(not part or part.startswith((".", "-")) or part.endswith(".lock") for part in parts)
    ):
        raise GitReadError(f"{where} names {ref!r}, which is not a valid ref name")
    return ref


def _find_packed(common_dir: str, ref: str, deadline: float | None) -> str | None:
    """The object name ``packed-refs`` gives ``ref``, searched in bounded chunks.

    Lines are ``<hash> <ref>``; ``^<hash>`` lines (peeled tags) never match. The file is
    read :data:`~runcontext.providers._files.CHUNK` bytes at a time, at most
    :data:`PACKED_REFS_BUDGET` bytes, with the deadline checked between chunks; a line is
    never copied (a 100 MB line costs what any 100 MB costs to read, no more). A file git
    wrote ``sorted`` is read only up to where the ref would be.
    """
    path = os.path.join(common_dir, "packed-refs")
    try:
        opened = open_regular(path)
    except NotRegularFileError:
        return None  # a FIFO or a device named packed-refs: as good as none
    except OSError as error:
        raise GitReadError(f"cannot read {path}: {error.strerror or error}") from error
    if opened is None:
        return None
    fd, _ = opened
    try:
        return _search_packed(fd, ref.encode(), deadline, path)
    except ReadTimeoutError as error:
        raise GitReadError(str(error)) from None
    except OSError as error:
        raise GitReadError(f"cannot read {path}: {error.strerror or error}") from error
    finally:
        os.close(fd)


def _search_packed(fd: int, ref: bytes, deadline: float | None, path: str) -> str | None:
    needle = b" " + ref + b"\n"
    keep = len(needle) + 64  # what a match ending in the next chunk may need of this one
    buffer = b""
    start = 0  # where matches not yet looked at may begin
    first = True  # buffer[0] is the start of the file
    is_sorted = False
    read = 0
    for chunk in chunks(fd, PACKED_REFS_BUDGET + 1, deadline, path):
        read += len(chunk)
        if first and not buffer:
            header = chunk.split(b"\n", 1)[0]
            is_sorted = header.startswith(b"# pack-refs with:") and b" sorted" in header + b" "
        buffer += chunk
        if read > PACKED_REFS_BUDGET:
            break
        found = _match(buffer, needle, start, first)
        if found is not None:
            return found
        if is_sorted and _past(buffer, ref):
            return None  # sorted by name: the ref would have come already
        if len(buffer) > keep:
            buffer = buffer[-keep:]
            first = False
        start = max(len(buffer) - len(needle) + 1, 0)
    else:
        # The end of the file: the last line may lack its newline.
        return _match(buffer + b"\n", needle, start, first)
    raise GitReadError(
        f"{path} is larger than the {PACKED_REFS_BUDGET >> 20} MiB searched, and "
        f"{ref.decode()} is not in what was searched"
    )


def _match(buffer: bytes, needle: bytes, start: int, first: bool) -> str | None:
    """The hash of the line ``<hash><needle>`` in ``buffer`` that ends at or after ``start``."""
    position = buffer.find(needle, start)
    while position >= 0:
        for width in (40, 64):
            begin = position - width
            if begin < 0:
                continue
            whole_line = buffer[begin - 1 : begin] == b"\n" if begin > 0 else first
            if whole_line and _HASH.fullmatch(buffer, begin, position):
                return buffer[begin:position].decode()
        position = buffer.find(needle, position + 1)
    return None


def _past(buffer: bytes, ref: bytes) -> bool:
    """Whether the last whole line of ``buffer`` names a ref that sorts after ``ref``."""
    end = buffer.rfind(b"\n")
    begin = buffer.rfind(b"\n", 0, end) + 1 if end > 0 else -1
    if begin <= 0 or end - begin > 4096:
        return False  # no whole line here, or not a ref line
    line = buffer[begin:end]
    for width in (40, 64):
        if len(line) > width and line[width : width + 1] == b" " and _HASH.fullmatch(line[:width]):
            return line[width + 1 :] > ref
    return False


def _resolve(
    git_dir: str, common_dir: str, ref: str, where: str, deadline: float | None
) -> str | None:
    """The object name ``ref`` points to, or ``None`` for a ref that does not exist yet."""
    for _ in range(_SYMREF_DEPTH):
        base = git_dir if ref.startswith(_PER_WORKTREE) else common_dir
        loose = _read_ref_file(os.path.join(base, ref))
        if loose is None:
            return _find_packed(common_dir, ref, deadline)
        value = loose.strip()
        if _HASH.fullmatch(value):
            return value.decode()
        if not value.startswith(b"ref:"):
            raise GitReadError(
                f"{os.path.join(base, ref)} holds neither an object name nor 'ref: <name>'"
            )
        where = os.path.join(base, ref)
        ref = _ref_name(value[4:].strip(), where)
    raise GitReadError(f"{where}: symbolic refs nested deeper than {_SYMREF_DEPTH}")


def read_head(repo: Repository, deadline: float | None = None) -> Head:
    """Branch and commit of ``repo``'s HEAD, from its files alone, by ``deadline`` if given."""
    return _read_head(os.fspath(repo.git_dir), os.fspath(repo.common_dir), deadline)


def _read_head(git_dir: str, common_dir: str, deadline: float | None) -> Head:
    if Path(common_dir, "reftable").is_dir():
        # The reftable backend (git 2.45+) stores refs in a binary format; HEAD then holds
        # the placeholder `ref: refs/heads/.invalid`. Better no fact than a wrong one.
        raise GitReadError("the repository uses the reftable ref format, which is not read")
    head_path = os.path.join(git_dir, "HEAD")
    content = (_read_ref_file(head_path) or b"").strip()
    if _HASH.fullmatch(content):
        return Head(branch=None, commit=content.decode())
    if not content.startswith(b"ref:"):
        raise GitReadError(f"{head_path} holds neither an object name nor 'ref: <name>'")
    ref = _ref_name(content[4:].strip(), head_path)
    branch = ref.removeprefix("refs/heads/")
    return Head(branch=branch, commit=_resolve(git_dir, common_dir, ref, head_path, deadline))


# Configuration that would make `git status` run a program, switched off. `core.fsmonitor`
# is a program git starts to list changed files; hooks (`post-index-change`) run when the
# index is written, which --no-optional-locks already prevents. Clean/smudge filters cannot
# be switched off this way (their driver names are arbitrary): see docs/PROVIDERS.md.
_STATUS = (
    "git",
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=normal",
    "--ignore-submodules=all",  # a submodule's status runs git with the submodule's config
)
# The only GIT_* variables passed on: which user and system configuration to read, and
# where git's own helpers are. Every other one could point git at another repository
# (GIT_DIR, GIT_OBJECT_DIRECTORY, GIT_INDEX_FILE), inject configuration
# (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT) or make it write files (GIT_TRACE*).
_KEPT_GIT_ENV = frozenset(
    ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_EXEC_PATH")
)


def count_changes(root: str | os.PathLike[str], timeout: float) -> int:
    """Paths ``git status`` reports as changed or untracked; raises ``OSError``/``TimeoutError``."""
    import signal  # only for the dirty count, which is off by default
    import subprocess

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.upper().startswith("GIT_") or key in _KEPT_GIT_ENV
    }
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    process = subprocess.Popen(
        _STATUS,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=os.name == "posix",  # so a timeout kills filters it started too
    )
    try:
        output, errors = process.communicate(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover
            process.kill()
        process.communicate()
        raise TimeoutError(f"git status did not finish within {timeout:.3f} s") from None
    if process.returncode != 0:
        message = errors.decode("utf-8", "replace").strip().splitlines()
        raise OSError(f"git status failed: {message[0] if message else process.returncode}")
    count = 0
    fields = iter(output.split(b"\0"))
    for field in fields:
        if not field:
            continue
        count += 1
        if field[:1] in (b"R", b"C") or field[1:2] in (b"R", b"C"):
            next(fields, None)  # a rename's or copy's second field is its source path
    return count


class GitProvider:
    """Facts ``git branch`` (or ``detached``) and ``git commit`` (12-hex-digit short hash).

    No facts outside a repository. A repository with no commits yet has a branch and no
    commit. ``dirty=True`` adds ``git changes`` (paths changed or untracked) by running
    ``git status`` with at most ``dirty_timeout`` seconds or the time left, whichever is
    less; it is off by default because it runs a program (see docs/PROVIDERS.md).
    """

    name = "git"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        dirty: bool = False,
        dirty_timeout: float = 0.2,
        abbrev: int = 12,
    ) -> None:
        if not 4 <= abbrev <= 64:
            raise ValueError(f"abbrev: expected 4 to 64 hex digits, got {abbrev}")
        self._path = None if path is None else os.fspath(path)
        self._dirty = dirty
        self._dirty_timeout = dirty_timeout
        self._abbrev = abbrev
        self.revision = f"git/3+abbrev{abbrev}" + ("+dirty" if dirty else "")

    def collect(self, deadline: float) -> Contribution:
        try:
            start = self._path if self._path is not None else os.getcwd()
            found = _locate(start, deadline)
            if found is None:
                return Contribution()
            root, git_dir, common_dir = found
            head = _read_head(git_dir, common_dir, deadline)
        except (GitReadError, OSError) as error:
            return Contribution(diagnostics=[("unreadable", str(error))])
        facts: list[tuple[str, str | None]] = [("git branch", head.branch or "detached")]
        if head.commit is not None:
            facts.append(("git commit", head.commit[: self._abbrev]))
        diagnostics: list[tuple[str, str]] = []
        if self._dirty:
            timeout = min(self._dirty_timeout, deadline - time.monotonic())
            try:
                if timeout <= 0:
                    raise TimeoutError("no time left before the deadline to run git status")
                changes = count_changes(root, timeout)
            except (OSError, TimeoutError) as error:
                diagnostics.append(("dirty-count", f"left out: {error}"))
            else:
                plural = "" if changes == 1 else "s"
                facts.append(("git changes", "none" if changes == 0 else f"{changes} path{plural}"))
        return Contribution(facts=facts, diagnostics=diagnostics)
