"""Repositories built to stall or mislead the default providers: build() keeps its deadline.

Each repository here is something a clone can ship (sparse huge files, one endless line,
FIFOs and devices where a file is expected, loops of links, deep directory chains, many
loose refs, a chain of symbolic refs). Every build uses a 0.2 s deadline and is asserted to
return within 2 s: a bound ten times the deadline, so a busy machine cannot make it flake,
that the old code broke by seconds (a 2 GiB sparse packed-refs took 1-8 s, because its
``mmap`` search held the GIL). The exact figures are ``benches/bench_hostile.py``'s.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from runcontext import RunContext
from runcontext.providers import Diagnostic, GitProvider, InstructionsProvider, default_providers
from runcontext.providers.builder import ContextBuilder
from runcontext.providers.git import (
    PACKED_REFS_BUDGET,
    _nearest_by_path,
    _nearest_dot_git,
    find_repository,
)

DEADLINE = 0.2
BOUND = 2.0
HASH = "0123456789abcdef0123456789abcdef01234567"
GiB = 1 << 30
MiB = 1 << 20

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root"
)


def repo(path: Path, head: str = "ref: refs/heads/main\n") -> Path:
    (path / ".git" / "refs" / "heads").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text(head)
    return path


def sparse(path: Path, size: int, tail: bytes = b"") -> None:
    with open(path, "wb") as file:
        file.truncate(size - len(tail))
        file.seek(size - len(tail))
        file.write(tail)


def build(directory: Path) -> tuple[float, RunContext, tuple[Diagnostic, ...]]:
    builder = ContextBuilder(default_providers(directory), deadline=DEADLINE)
    started = time.monotonic()
    context, diagnostics = builder.build()
    elapsed = time.monotonic() - started
    assert elapsed < BOUND
    assert "cwd" in dict(context.facts)  # the other providers were not starved
    return elapsed, context, diagnostics


def kinds(diagnostics: tuple[Diagnostic, ...]) -> set[tuple[str, str]]:
    return {(d.provider, d.kind) for d in diagnostics}


def git_head(path: Path) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
    contribution = GitProvider(path).collect(time.monotonic() + 10)
    return dict(contribution.facts), list(contribution.diagnostics)


# -- packed-refs -------------------------------------------------------------------------


def test_a_sparse_2_gib_packed_refs_is_searched_within_its_budget(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    sparse(base / ".git" / "packed-refs", 2 * GiB)
    _, _, diagnostics = build(base)
    # Searching 64 MiB of a cold sparse file can take longer than 0.2 s on a busy machine.
    assert ("git", "unreadable") in kinds(diagnostics) or ("git", "timeout") in kinds(diagnostics)
    facts, notes = git_head(base)
    assert facts == {}
    assert notes == [
        (
            "unreadable",
            f"{base / '.git' / 'packed-refs'} is larger than the {PACKED_REFS_BUDGET >> 20} MiB "
            "searched, and refs/heads/main is not in what was searched",
        )
    ]


def test_a_ref_after_the_budget_is_not_found_but_said(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    sparse(base / ".git" / "packed-refs", 2 * GiB, f"\n{HASH} refs/heads/main\n".encode())
    build(base)
    facts, [(kind, message)] = git_head(base)
    assert "git commit" not in facts and kind == "unreadable" and "MiB searched" in message


def test_a_ref_near_the_end_of_a_large_packed_refs_is_found(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo", "ref: refs/heads/wanted\n")
    other = "f" * 40
    with open(base / ".git" / "packed-refs", "w") as file:
        file.write("# pack-refs with: peeled fully-peeled \n")  # not sorted: read to the end
        file.writelines(f"{other} refs/tags/t{index}\n^{other}\n" for index in range(100_000))
        file.write(f"{HASH} refs/heads/wanted")  # the last line, without its newline
    _, context, diagnostics = build(base)
    assert dict(context.facts)["git commit"] == HASH[:12]
    assert not {kind for _, kind in kinds(diagnostics)} & {"timeout", "unreadable"}


def test_a_sorted_packed_refs_is_read_only_up_to_where_the_ref_would_be(tmp_path: Path) -> None:
    # Sorted, as git writes it, with refs/heads/zz after where refs/heads/main would be and
    # 2 GiB of nothing after that: the search stops at refs/heads/zz.
    base = repo(tmp_path / "repo")
    lines = f"# pack-refs with: peeled fully-peeled sorted \n{HASH} refs/heads/a\n"
    lines += f"{HASH} refs/heads/zz\n"
    sparse(base / ".git" / "packed-refs", 2 * GiB)
    with open(base / ".git" / "packed-refs", "r+b") as file:
        file.write(lines.encode())
    assert git_head(base) == ({"git branch": "main"}, [])


def test_a_ref_on_an_endless_line_is_not_copied(tmp_path: Path) -> None:
    # One 20 MB line ending in the wanted name: the old code found it, then copied the
    # whole line to look at it.
    base = repo(tmp_path / "repo")
    (base / ".git" / "packed-refs").write_bytes(b"a" * (20 * MiB) + b" refs/heads/main\n")
    tracemalloc.start()
    try:
        facts, notes = git_head(base)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert facts == {"git branch": "main"} and notes == []
    assert peak < 2 * MiB


# -- files that are not files --------------------------------------------------------------


def test_fifos_where_files_are_expected_do_not_block(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    os.mkfifo(base / ".git" / "packed-refs")
    os.mkfifo(base / "AGENTS.md")
    sub = base / "sub"
    sub.mkdir()
    (sub / ".git").mkdir()
    os.mkfifo(sub / ".git" / "HEAD")
    (base / "other").mkdir()
    _, context, diagnostics = build(base)
    assert dict(context.facts)["git branch"] == "main"
    assert kinds(diagnostics) == {("instructions", "unreadable")}
    _, _, diagnostics = build(sub)
    assert ("git", "unreadable") in kinds(diagnostics)


def test_a_fifo_as_commondir_or_a_loose_ref_does_not_block(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    os.mkfifo(base / ".git" / "refs" / "heads" / "main")
    _, _, diagnostics = build(base)
    assert kinds(diagnostics) == {("git", "unreadable")}
    os.mkfifo(base / ".git" / "commondir")
    _, _, diagnostics = build(base)
    assert kinds(diagnostics) == {("git", "unreadable")}


@needs_root
def test_devices_where_files_are_expected_are_never_read(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    zero = os.makedev(1, 5)  # what /dev/zero is: an endless supply of NUL bytes
    os.mknod(base / ".git" / "packed-refs", 0o600 | 0o020000, zero)
    os.mknod(base / "AGENTS.md", 0o600 | 0o020000, zero)
    _, context, diagnostics = build(base)
    assert dict(context.facts)["git branch"] == "main"
    assert kinds(diagnostics) == {("instructions", "unreadable")}
    (base / ".git" / "HEAD").unlink()
    os.mknod(base / ".git" / "HEAD", 0o600 | 0o020000, zero)
    _, _, diagnostics = build(base)
    assert ("git", "unreadable") in kinds(diagnostics)


def test_sparse_huge_small_files_cost_a_few_kib(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    sparse(base / ".git" / "HEAD", 2 * GiB)
    sparse(base / "AGENTS.md", 2 * GiB)
    elsewhere = repo(tmp_path / "elsewhere")
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    sparse(worktree / ".git", 2 * GiB, f"gitdir: {elsewhere / '.git'}\n".encode())
    _, context, diagnostics = build(base)
    assert ("git", "unreadable") in kinds(diagnostics)
    [(name, text)] = context.head_sections
    assert name == "instructions:AGENTS.md" and len(text.encode()) <= 32 * 1024
    _, _, diagnostics = build(worktree)
    assert ("git", "unreadable") in kinds(diagnostics)  # no gitdir: line in its first 4 KiB


# -- links and depth ---------------------------------------------------------------------


def test_loops_of_links_are_diagnostics(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    (base / ".git" / "HEAD").unlink()
    os.symlink("HEAD", base / ".git" / "HEAD")
    os.symlink("AGENTS.md", base / "AGENTS.md")
    _, _, diagnostics = build(base)
    assert kinds(diagnostics) == {("git", "unreadable"), ("instructions", "unreadable")}
    looped = tmp_path / "looped"
    looped.mkdir()
    os.symlink(".git", looped / ".git")
    _, _, diagnostics = build(looped)
    assert ("git", "unreadable") in kinds(diagnostics)


def test_a_loop_of_links_as_a_loose_ref_and_packed_refs(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    os.symlink("main", base / ".git" / "refs" / "heads" / "main")
    os.symlink("packed-refs", base / ".git" / "packed-refs")
    _, _, diagnostics = build(base)
    assert kinds(diagnostics) == {("git", "unreadable")}


def test_head_into_a_chain_of_symbolic_refs(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo", "ref: refs/heads/s0\n")
    for index in range(50):
        (base / ".git" / "refs" / "heads" / f"s{index}").write_text(
            f"ref: refs/heads/s{index + 1}\n"
        )
    _, context, diagnostics = build(base)
    assert "git branch" not in dict(context.facts)
    [message] = [d.message for d in diagnostics if d.provider == "git"]
    assert "symbolic refs nested deeper than 5" in message


def test_many_loose_refs(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo", "ref: refs/heads/b4999\n")
    heads = base / ".git" / "refs" / "heads"
    for index in range(5000):
        (heads / f"b{index}").write_text(HASH + "\n")
    _, context, diagnostics = build(base)
    assert dict(context.facts)["git commit"] == HASH[:12] and diagnostics == ()


def test_a_deep_directory_chain(tmp_path: Path) -> None:
    base = repo(tmp_path / "repo")
    (base / "AGENTS.md").write_text("Root rules.\n")
    directory = str(base)
    depth = (4000 - len(directory)) // 2  # as deep as PATH_MAX allows
    for _ in range(depth):
        directory = os.path.join(directory, "d")
        os.mkdir(directory)
        with open(os.path.join(directory, "AGENTS.md"), "w") as file:
            file.write("Rules for this level.\n")
    try:
        _, context, diagnostics = build(Path(directory))
        # Either everything arrived in time or what did not is a timeout; never a stall.
        assert {kind for _, kind in kinds(diagnostics)} <= {"truncated", "timeout"}
        if ("git", "timeout") not in kinds(diagnostics):
            assert dict(context.facts)["git branch"] == "main"
        # Without the deadline's pressure: the walk down by descriptor finds the repository,
        # and the nearest files get the budget (the root and most levels are left out).
        assert git_head(Path(directory)) == ({"git branch": "main"}, [])
        provider = InstructionsProvider(directory)
        contribution = provider.collect(time.monotonic() + 10)
        nearest = os.path.relpath(directory, base).replace(os.sep, "/") + "/AGENTS.md"
        assert contribution.head[-1][0] == f"instructions:{nearest}"
        assert "were not searched: at most 64 directories" in contribution.diagnostics[0][1]
    finally:
        while directory != str(base):  # shutil.rmtree recurses once per level
            os.unlink(os.path.join(directory, "AGENTS.md"))
            os.rmdir(directory)
            directory = os.path.dirname(directory)


def test_the_walk_down_finds_what_the_walk_up_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past 32 levels the .git search walks down by descriptor; it must agree with git's
    # walk up: the nearest .git wins, and GIT_CEILING_DIRECTORIES stops the search.
    levels = [tmp_path]
    for index in range(45):
        levels.append(levels[-1] / f"l{index}")
    levels[-1].mkdir(parents=True)
    for level in (0, 10, 35):
        repo(levels[level])
    start = str(levels[-1])
    for expected in (35, 10, 0):
        assert _nearest_dot_git(start, 0, None) == _nearest_by_path(start, 0, None)
        found = find_repository(start)
        assert found is not None and found.root == levels[expected]
        (levels[expected] / ".git" / "HEAD").unlink()
        (levels[expected] / ".git" / "refs" / "heads").rmdir()
        (levels[expected] / ".git" / "refs").rmdir()
        (levels[expected] / ".git").rmdir()
    assert find_repository(start) is None
    repo(levels[0])
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(levels[5]))
    assert find_repository(start) is None  # the .git above the ceiling is not looked at
    repo(levels[5])  # the ceiling itself is not searched either, as with git
    assert find_repository(start) is None
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES")
    found = find_repository(start)
    assert found is not None and found.root == levels[5]
