"""The package metadata: one license expression and home everywhere, license files that exist,
POSIX classifiers (transcripts need flock), and the sdist's own files included."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LICENSE = "MIT OR Apache-2.0"
HOME = "https://github.com/runcontext/runcontext"

if not (ROOT / "pyproject.toml").is_file():
    pytest.skip("not a source tree", allow_module_level=True)


def toml(path: str) -> dict[str, object]:
    return tomllib.loads((ROOT / path).read_text(encoding="utf-8"))


def test_one_license_and_home_for_the_package_and_both_crates() -> None:
    project = toml("pyproject.toml")["project"]
    assert isinstance(project, dict)
    assert project["license"] == LICENSE
    assert project["license-files"] == ["LICENSE-MIT", "LICENSE-APACHE"]
    for name in project["license-files"]:
        assert (ROOT / name).read_text(encoding="utf-8").strip(), name
    assert all(url.startswith(HOME) for url in project["urls"].values())
    workspace = toml("Cargo.toml")["workspace"]
    assert isinstance(workspace, dict)
    package = workspace["package"]
    assert package["license"] == LICENSE and package["repository"] == HOME
    for crate in ("rust/core/Cargo.toml", "rust/python/Cargo.toml"):
        members = toml(crate)["package"]
        assert isinstance(members, dict)
        for key in ("license", "repository", "rust-version", "version"):
            assert members[key] == {"workspace": True}, (crate, key)


def test_classifiers_say_posix_and_typed() -> None:
    project = toml("pyproject.toml")["project"]
    assert isinstance(project, dict)
    classifiers = project["classifiers"]
    assert "Operating System :: POSIX" in classifiers
    assert "Typing :: Typed" in classifiers
    assert not any("Windows" in c or "OS Independent" in c for c in classifiers)
    assert (ROOT / "python" / "runcontext" / "py.typed").is_file()


def test_the_sdist_includes_what_building_and_testing_it_needs() -> None:
    maturin = toml("pyproject.toml")["tool"]["maturin"]  # type: ignore[index]
    sdist = {entry["path"] for entry in maturin["include"] if entry.get("format") == "sdist"}
    assert {"docs/**/*", "tests/**/*"} <= sdist


def test_the_wheel_takes_the_vectors_from_the_build_not_from_a_second_copy() -> None:
    maturin = toml("pyproject.toml")["tool"]["maturin"]  # type: ignore[index]
    from_build = [entry for entry in maturin["include"] if entry.get("from") == "out-dir"]
    assert from_build == [{"path": "vectors/*", "from": "out-dir", "to": "runcontext/"}]
    build_script = (ROOT / "rust" / "python" / "build.rs").read_text(encoding="utf-8")
    assert '"../../docs/vectors"' in build_script and '.join("vectors")' in build_script
    requires = toml("pyproject.toml")["build-system"]["requires"]  # type: ignore[index]
    assert requires == ["maturin>=1.12,<2"]  # the first with `include` from `out-dir`
