"""`runcontext canon` and `runcontext verify-vectors`, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runcontext import canonical_json, digest
from runcontext.cli import main

from conftest import VECTORS


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The command line in a fresh interpreter, through ``python -m runcontext``."""
    return subprocess.run(
        [sys.executable, "-m", "runcontext", *args], input=stdin, capture_output=True
    )


def _write(path: Path, value: Any) -> Path:
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def _vectors(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((VECTORS / name).read_text())
    return data


def _results(name: str) -> dict[str, Any]:
    """What a port that gets every case right writes: each case's name and outcome."""
    keys = ("name", "expect", "error", "canonical")
    return {"cases": [{k: c[k] for k in keys if k in c} for c in _vectors(name)["cases"]]}


def _failed(vectors: str, results: Path) -> list[str]:
    """The FAIL lines of `verify-vectors VECTORS --results RESULTS`, which must exit 1."""
    result = cli("verify-vectors", str(VECTORS / vectors), "--results", str(results))
    assert result.returncode == 1, result.stdout
    assert result.stderr == b""
    return [line for line in result.stdout.decode().splitlines() if line.startswith("FAIL ")]


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
        result.stderr.decode()
        == 'runcontext canon: <stdin>: line 2, column 2: duplicate object key "a"\n'
    )
    bad = tmp_path / "f.json"
    bad.write_bytes(b'{"a": 1,\n "b": [1,\n 2,]}')
    from_file = cli("canon", str(bad))
    assert from_file.returncode == 1 and from_file.stdout == b""
    assert from_file.stderr.decode() == (
        f"runcontext canon: {bad}: line 3, column 4 (at $.b[2]): unexpected ']', "
        "expected a JSON value\n"
    )
    missing = cli("canon", str(tmp_path / "nope.json"))
    assert missing.returncode == 1 and b"Traceback" not in missing.stderr
    assert missing.stderr.decode() == f"runcontext canon: no such file: {tmp_path / 'nope.json'}\n"


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


def test_verify_vectors_fails_a_wrong_canonical_form(tmp_path: Path) -> None:
    results = _results("jcs.json")
    wrong = next(c for c in results["cases"] if "canonical" in c and len(c["canonical"]) > 2)
    wrong["canonical"] = wrong["canonical"].replace(":", ": ", 1) + " "
    expected = next(c for c in _vectors("jcs.json")["cases"] if c["name"] == wrong["name"])
    failed = _failed("jcs.json", _write(tmp_path / "r.json", results))
    assert failed == [
        f"FAIL {wrong['name']}: expected {expected['canonical']!r}, got {wrong['canonical']!r}"
    ]


@pytest.mark.parametrize("reported", ["syntax", "refused", None])
def test_verify_vectors_requires_the_jcs_error_kind(tmp_path: Path, reported: str | None) -> None:
    # The kinds are part of the contract (docs/vectors/README.md): a generic refusal, another
    # kind or a canonical form where an error is expected all fail.
    results = _results("jcs.json")
    case = next(c for c in results["cases"] if c.get("error") == "duplicate-key")
    del case["error"]
    case.update({"error": reported} if reported else {"canonical": "{}"})
    failed = _failed("jcs.json", _write(tmp_path / "r.json", results))
    got = repr(reported) if reported else "canonical '{}'"
    assert failed == [f"FAIL {case['name']}: expected error 'duplicate-key', got {got}"]


@pytest.mark.parametrize(
    "change",
    [{"kind": "empty-name"}, {"arg": "head_sections"}, {"index": 0}, {"type_error": True}],
)
def test_verify_vectors_requires_the_whole_runcontext_error(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    results = _results("runcontext-v1.json")
    case = next(c for c in results["cases"] if c["name"] == "dropped-fact-owns-name")
    assert case["error"] == {
        "kind": "duplicate-name",
        "type_error": False,
        "arg": "facts",
        "index": 1,
    }
    case["error"] = {**case["error"], **change}
    failed = _failed("runcontext-v1.json", _write(tmp_path / "r.json", results))
    assert len(failed) == 1 and failed[0].startswith("FAIL dropped-fact-owns-name: expected error")


@pytest.mark.parametrize(
    ("vectors", "entry", "message"),
    [
        ("jcs.json", 7, "cases[1]: expected an object, got 7"),
        ("jcs.json", {"canonical": "1"}, "cases[1]: expected a string 'name', got null"),
        ("jcs.json", {"name": 3, "canonical": "1"}, "cases[1]: expected a string 'name', got 3"),
        ("jcs.json", {"name": "x"}, "cases[1] ('x'): expected exactly one of 'canonical' and"),
        (
            "jcs.json",
            {"name": "x", "canonical": "1", "error": "syntax"},
            "cases[1] ('x'): expected exactly one of 'canonical' and 'error'",
        ),
        ("jcs.json", {"name": "x", "canonical": 1}, "cases[1] ('x'): 'canonical' must be a string"),
        ("jcs.json", {"name": "x", "error": ["syntax"]}, "cases[1] ('x'): 'error' must be a str"),
        (
            "runcontext-v1.json",
            {"name": "x", "expect": "ok"},
            "cases[1] ('x'): 'expect' must be an object, got \"ok\"",
        ),
        (
            "runcontext-v1.json",
            {"name": "x", "error": "mapping"},
            "cases[1] ('x'): 'error' must be an object",
        ),
    ],
)
def test_verify_vectors_refuses_a_malformed_results_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], vectors: str, entry: Any, message: str
) -> None:
    results = _results(vectors)
    results["cases"].insert(1, entry)
    path = _write(tmp_path / "r.json", results)
    # In-process: a KeyError or AttributeError would escape main() and fail this test.
    assert main(["verify-vectors", str(VECTORS / vectors), "--results", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"runcontext verify-vectors: {path}: {message}"), err
    assert err.count("\n") == 1


def test_verify_vectors_refuses_a_repeated_name(tmp_path: Path) -> None:
    results = _results("jcs.json")
    results["cases"].append(results["cases"][0])
    path = _write(tmp_path / "r.json", results)
    result = cli("verify-vectors", str(VECTORS / "jcs.json"), "--results", str(path))
    assert result.returncode == 1 and b"Traceback" not in result.stderr
    last = len(results["cases"]) - 1
    assert f"{path}: cases[{last}]: the name ".encode() in result.stderr
    assert result.stderr.rstrip().endswith(b"repeats cases[0]")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cases": [', "not valid JSON: Expecting value: line 1 column 12 (char 11)"),
        ('{"cases": []}', "the 'cases' array is empty: there is nothing to check"),
        ("[1, 2]", "not a vectors file (expected an object with a 'cases' array)"),
    ],
)
def test_verify_vectors_names_the_file_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _write(tmp_path / "r.json", text)
    for argv in ([str(path)], [str(VECTORS / "jcs.json"), "--results", str(path)]):
        assert main(["verify-vectors", *argv]) == 1
        assert capsys.readouterr().err == f"runcontext verify-vectors: {path}: {message}\n"


def test_verify_vectors_checks_every_number_line() -> None:
    result = cli("verify-vectors", str(VECTORS / "es-numbers.txt"))
    assert result.returncode == 0, result.stdout[-2000:]
    lines = (VECTORS / "es-numbers.txt").read_text().count("\n")
    assert result.stdout.decode() == (
        f"es-numbers vectors {VECTORS / 'es-numbers.txt'}: {lines} passed, 0 failed\n"
    )


def test_verify_vectors_checks_a_ports_number_lines(tmp_path: Path) -> None:
    lines = (VECTORS / "es-numbers.txt").read_text().splitlines()
    good = _write(tmp_path / "good.txt", "\n".join(reversed(lines)) + "\n")  # order is free
    assert (
        cli("verify-vectors", str(VECTORS / "es-numbers.txt"), "--results", str(good)).returncode
        == 0
    )
    # A port that writes 1e21 as 1e21 (no '+') and leaves out the last number.
    index = lines.index("444b1ae4d6e2ef50 1e+21")
    port = [*lines[:index], "444b1ae4d6e2ef50 1e21", *lines[index + 1 : -1]]
    bad = _write(tmp_path / "bad.txt", "\n".join(port) + "\n")
    failed = _failed("es-numbers.txt", bad)
    assert failed == [
        "FAIL 444b1ae4d6e2ef50: expected 1e+21, got 1e21",
        f"FAIL {lines[-1].split()[0]}: no result for this number",
    ]


def test_verify_vectors_refuses_a_malformed_number_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "r.txt", "0000000000000000 0\n0000000000000001  5e-324\n")
    assert main(["verify-vectors", str(VECTORS / "es-numbers.txt"), "--results", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"runcontext verify-vectors: {path}: line 2: expected '<16 lowercase hex digits> "
        "<number>', got '0000000000000001  5e-324'\n"
    )
