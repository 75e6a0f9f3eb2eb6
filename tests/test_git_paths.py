"""The git provider's str paths agree with the pathlib operations they replace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runcontext.providers.git import _ceiling_depth, _is_dir, _locate, _parts, find_repository


@pytest.mark.parametrize(
    "directory", ["/", "/a", "/a/b/c", "//", "//a", "//a/b", "///a", "/a b/ü/..x", "/.git"]
)
def test_parts_is_pathlibs(directory: str) -> None:
    normalised = os.path.abspath(directory)
    assert _parts(normalised) == len(Path(normalised).parts)


def test_is_dir_is_pathlibs(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for name in ("", "file", "missing", "file/below", "loop", "bad\x00name"):
        path = os.path.join(tmp_path, name)
        assert _is_dir(path) == Path(path).is_dir(), name


def test_ceiling_depth_is_pathlibs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES", raising=False)
    assert _ceiling_depth(str(deep)) == 0
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", f"relative:{tmp_path}::{deep}")
    assert _ceiling_depth(str(deep)) == len(tmp_path.parts)


def test_locate_gives_find_repositorys_paths_as_strings(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "sub").mkdir()
    found = _locate(tmp_path / "sub")
    repo = find_repository(tmp_path / "sub")
    assert found is not None and repo is not None
    assert found == (str(repo.root), str(repo.git_dir), str(repo.common_dir))
    assert all(type(path) is type(tmp_path) for path in (repo.root, repo.git_dir, repo.common_dir))
