"""The conformance vectors ship inside the package, copied from docs/vectors at build time,
and ``runcontext verify-vectors`` with no path checks this installation against all of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runcontext import cli
from runcontext.conformance import BUNDLED_VECTORS_DIR, bundled_vectors

from gitutil import git

ROOT = Path(__file__).resolve().parent.parent
DOCS_VECTORS = ROOT / "docs" / "vectors"


def test_docs_vectors_is_the_one_committed_copy() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist: .ci/packaging.sh checks it)")
    assert git(ROOT, "ls-files", "--", "python/runcontext/vectors") == ""
    # What an editable install copies there stays out of git.
    assert git(ROOT, "check-ignore", "python/runcontext/vectors/jcs.json") == (
        "python/runcontext/vectors/jcs.json"
    )
    assert git(ROOT, "ls-files", "--", "docs/vectors/jcs.json") == "docs/vectors/jcs.json"


def test_the_package_ships_every_vectors_file_of_docs_byte_for_byte() -> None:
    if not DOCS_VECTORS.is_dir():
        pytest.skip("not a source tree (docs/vectors absent)")
    expected = sorted(p.name for p in DOCS_VECTORS.iterdir() if p.suffix in (".json", ".txt"))
    assert [p.name for p in bundled_vectors()] == expected, (
        "rebuild: `pip install -e .` copies docs/vectors into the package"
    )
    for name in expected:
        assert (BUNDLED_VECTORS_DIR / name).read_bytes() == (DOCS_VECTORS / name).read_bytes(), (
            f"python/runcontext/vectors/{name} differs from docs/vectors/{name}: "
            "rebuild (`pip install -e .` copies docs/vectors into the package)"
        )


def test_verify_vectors_with_no_path_checks_every_bundled_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["verify-vectors"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" vectors ")[1].split(":")[0] for line in lines] == [
        str(p) for p in bundled_vectors()
    ]
    assert all(line.endswith(" 0 failed") for line in lines)
    kinds = {line.split(" vectors ")[0] for line in lines}
    assert kinds == {"adapters", "es-numbers", "jcs", "keyed-digest", "runcontext", "transcript"}


def test_verify_vectors_results_needs_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify-vectors", "--results", "port.json"]) == 1
    assert capsys.readouterr().err == (
        "runcontext verify-vectors: --results compares against one vectors file: "
        "pass its PATH too\n"
    )


def test_a_build_without_the_package_data_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from runcontext import conformance

    monkeypatch.setattr(conformance, "BUNDLED_VECTORS_DIR", tmp_path / "vectors")
    with pytest.raises(FileNotFoundError, match=r"built without its package data"):
        conformance.bundled_vectors()
