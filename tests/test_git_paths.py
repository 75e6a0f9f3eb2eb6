"""The git provider's walks on str paths agree with pathlib's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext.providers.git import _ceiling_depth, _locate, find_repository


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
