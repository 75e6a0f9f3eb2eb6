"""`runcontext canon` and `runcontext verify-vectors`, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from runcontext import canonical_json, digest

from conftest import VECTORS


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "runcontext.cli", *args], input=stdin, capture_output=True
    )


def test_canon_file_and_stdin(tmp_path: Path) -> None:
    value = {"b": [1.0, "é"], "a": None}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(value, indent=4))
    from_file = cli("canon", str(path))
    assert from_file.returncode == 0
    assert from_file.stdout == canonical_json(value)  # exact bytes, no newline when piped
    assert cli("canon", stdin=path.read_bytes()).stdout == canonical_json(value)
    assert (
        cli("canon", "-", "--digest", stdin=path.read_bytes()).stdout
        == (digest(value) + "\n").encode()
    )


def test_canon_error_is_one_line_exit_1(tmp_path: Path) -> None:
    result = cli("canon", stdin=b'{"a": 1,\n "a": 2}')
    assert result.returncode == 1
    assert result.stdout == b""
    assert (
        result.stderr.decode() == 'runcontext canon: line 2, column 2: duplicate object key "a"\n'
    )
    missing = cli("canon", str(tmp_path / "nope.json"))
    assert missing.returncode == 1 and b"Traceback" not in missing.stderr
    assert b"No such file" in missing.stderr and missing.stderr.count(b"\n") == 1


def test_verify_vectors_passes_on_both_files() -> None:
    for name, count in (("runcontext-v1.json", 60), ("jcs.json", 40)):
        result = cli("verify-vectors", str(VECTORS / name))
        assert result.returncode == 0, result.stdout
        passed = int(result.stdout.split(b": ")[-1].split(b" passed")[0])
        assert passed >= count and result.stdout.endswith(b", 0 failed\n")


def test_verify_vectors_checks_a_ports_results(tmp_path: Path) -> None:
    vectors = json.loads((VECTORS / "runcontext-v1.json").read_text())
    results = {"cases": [dict(c) for c in vectors["cases"]]}  # a port that gets all right
    good = tmp_path / "good.json"
    good.write_text(json.dumps(results))
    assert (
        cli(
            "verify-vectors", str(VECTORS / "runcontext-v1.json"), "--results", str(good)
        ).returncode
        == 0
    )
    # A port that renders one tail differently and misses one case.
    wrong = next(c for c in results["cases"] if "expect" in c and c["expect"]["tail_text"])
    wrong["expect"] = {**wrong["expect"], "tail_text": wrong["expect"]["tail_text"] + "\n"}
    results["cases"].pop()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(results))
    result = cli("verify-vectors", str(VECTORS / "runcontext-v1.json"), "--results", str(bad))
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    assert any(line.startswith(f"FAIL {wrong['name']}: tail_text") for line in lines)
    assert any(line.endswith("no result for this case") for line in lines)
    assert lines[-1].endswith(", 2 failed")


def test_verify_vectors_refuses_other_files(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    result = cli("verify-vectors", str(other))
    assert result.returncode == 1
    assert b"not a vectors file" in result.stderr
