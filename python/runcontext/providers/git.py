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

import mmap
import os
import re
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from runcontext.providers.base import Contribution

__all__ = ["GitProvider", "GitReadError", "Head", "Repository", "find_repository", "read_head"]

_HASH = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 object names
_SMALL_FILE = 4096  # HEAD, loose refs, .git files and commondir are a line each
_SYMREF_DEPTH = 5  # git itself follows at most 5 levels of symbolic refs
# Refs that live in each worktree's own git dir; all others live in the common dir.
_PER_WORKTREE = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


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


def _read_small(path: Path) -> bytes | None:
    """The first few KiB of a regular file, or ``None`` if there is no such file."""
    try:
        # O_NONBLOCK so a FIFO planted as HEAD cannot block the open; fstat refuses it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise GitReadError(f"cannot read {path}: {error.strerror}") from error
    with os.fdopen(fd, "rb") as file:
        if not _is_regular(fd):
            raise GitReadError(f"{path} is not a regular file")
        return file.read(_SMALL_FILE)


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def find_repository(start: str | os.PathLike[str]) -> Repository | None:
    """The repository whose working tree contains ``start``, found by walking up to ``.git``.

    Returns ``None`` outside any repository; raises :class:`GitReadError` for a ``.git``
    that exists but is not a repository (a ``.git`` file with no ``gitdir:`` line, or one
    pointing at a directory without ``HEAD``).
    """
    directory = Path(os.path.abspath(start))
    for candidate in (directory, *directory.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            git_dir = _follow_gitdir_file(dot_git)
        else:
            continue
        if not (git_dir / "HEAD").is_file():
            raise GitReadError(f"{git_dir} has no HEAD file; it is not a git directory")
        common_dir = git_dir
        common = _read_small(git_dir / "commondir")
        if common is not None:
            common_dir = Path(os.path.normpath(git_dir / common.decode("utf-8", "replace").strip()))
        return Repository(root=candidate, git_dir=git_dir, common_dir=common_dir)
    return None


def _follow_gitdir_file(dot_git: Path) -> Path:
    # A linked worktree, a submodule or `git init --separate-git-dir` leaves a file
    # `gitdir: <path>`, the path relative to the file's directory.
    content = (_read_small(dot_git) or b"").decode("utf-8", "replace").strip()
    if not content.startswith("gitdir:"):
        raise GitReadError(f"{dot_git} is a file without a 'gitdir: <path>' line")
    target = content[len("gitdir:") :].strip()
    return Path(os.path.normpath(dot_git.parent / target))


def _check_ref_name(ref: str, where: Path) -> None:
    # A hostile HEAD could say `ref: ../../../etc/passwd`; only plain names under refs/.
    parts = ref.split("/")
    if not ref.startswith("refs/") or any(part in ("", ".", "..") for part in parts):
        raise GitReadError(f"{where} names {ref!r}, which is not a valid ref name")


def _find_packed(common_dir: Path, ref: str) -> str | None:
    path = common_dir / "packed-refs"
    try:
        file = path.open("rb")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise GitReadError(f"cannot read {path}: {error.strerror}") from error
    with file:
        if not _is_regular(file.fileno()) or os.fstat(file.fileno()).st_size == 0:
            return None
        # mmap, not read(): packed-refs of a large monorepo runs to tens of MB and one line
        # is wanted. Lines are `<hash> <ref>`; `^<hash>` lines (peeled tags) never match.
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            needle = b" " + ref.encode() + b"\n"
            end = data.find(needle)
            if end < 0:
                tail = needle[:-1]
                if data[-len(tail) :] != tail:
                    return None
                end = len(data) - len(tail)
            start = data.rfind(b"\n", 0, end) + 1
            line = data[start:end]
    return line.decode() if _HASH.fullmatch(line) else None


def _resolve(repo: Repository, ref: str, where: Path) -> str | None:
    """The object name ``ref`` points to, or ``None`` for a ref that does not exist yet."""
    for _ in range(_SYMREF_DEPTH):
        _check_ref_name(ref, where)
        base = repo.git_dir if ref.startswith(_PER_WORKTREE) else repo.common_dir
        loose = _read_small(base / ref)
        if loose is None:
            return _find_packed(repo.common_dir, ref)
        value = loose.strip()
        if _HASH.fullmatch(value):
            return value.decode()
        if not value.startswith(b"ref:"):
            raise GitReadError(f"{base / ref} holds neither an object name nor 'ref: <name>'")
        where, ref = base / ref, value[4:].strip().decode("utf-8", "replace")
    raise GitReadError(f"{where}: symbolic refs nested deeper than {_SYMREF_DEPTH}")


def read_head(repo: Repository) -> Head:
    """Branch and commit of ``repo``'s HEAD, from its files alone."""
    if (repo.common_dir / "reftable").is_dir():
        # The reftable backend (git 2.45+) stores refs in a binary format; HEAD then holds
        # the placeholder `ref: refs/heads/.invalid`. Better no fact than a wrong one.
        raise GitReadError("the repository uses the reftable ref format, which is not read")
    head_path = repo.git_dir / "HEAD"
    content = (_read_small(head_path) or b"").strip()
    if _HASH.fullmatch(content):
        return Head(branch=None, commit=content.decode())
    if not content.startswith(b"ref:"):
        raise GitReadError(f"{head_path} holds neither an object name nor 'ref: <name>'")
    ref = content[4:].strip().decode("utf-8", "replace")
    branch = ref.removeprefix("refs/heads/")
    return Head(branch=branch, commit=_resolve(repo, ref, head_path))


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
# Variables that would point git at another repository than the one whose files were read.
_DROPPED_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def count_changes(root: Path, timeout: float) -> int:
    """Paths ``git status`` reports as changed or untracked; raises ``OSError``/``TimeoutError``."""
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED_ENV}
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
        self.revision = f"git/1+abbrev{abbrev}" + ("+dirty" if dirty else "")

    def collect(self, deadline: float) -> Contribution:
        try:
            repo = find_repository(self._path if self._path is not None else os.getcwd())
            if repo is None:
                return Contribution()
            head = read_head(repo)
        except GitReadError as error:
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
                changes = count_changes(repo.root, timeout)
            except (OSError, TimeoutError) as error:
                diagnostics.append(("dirty-count", f"left out: {error}"))
            else:
                plural = "" if changes == 1 else "s"
                facts.append(("git changes", "none" if changes == 0 else f"{changes} path{plural}"))
        return Contribution(facts=facts, diagnostics=diagnostics)
