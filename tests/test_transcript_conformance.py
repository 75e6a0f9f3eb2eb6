"""`runcontext verify-vectors docs/vectors/transcript-v2.json`: this installation and a port.

Three layers: a port's results file (``--results``), which needs nothing from this
installation's transcript reader; the conversion of ``verify_bytes``'s answer into the
vectors' shape, checked with a stand-in ``verify_bytes`` built on the reference reader; and
this installation's own ``runcontext.transcript.verify_bytes``, once it exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import runcontext
import runcontext.transcript
from runcontext.cli import main
from runcontext.conformance import observe_transcript, verify

from conftest import VECTORS
from reference.transcript import TranscriptRefError, read

PATH = VECTORS / "transcript-v2.json"
CASES: list[dict[str, Any]] = json.loads(PATH.read_text(encoding="ascii"))["cases"]
BY_NAME = {case["name"]: case for case in CASES}


def results() -> dict[str, Any]:
    """What a port that gets every case right writes."""
    keys = ("name", "expect", "error")
    document = {"cases": [{k: case[k] for k in keys if k in case} for case in CASES]}
    copied: dict[str, Any] = json.loads(json.dumps(document))  # deepcopy recurses too deep
    return copied


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def failures(document: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    report = verify(PATH, write(tmp_path / "results.json", document))
    return dict(report.failures)


# --- a port's results ------------------------------------------------------------------------


def test_a_port_that_gets_everything_right_passes(tmp_path: Path) -> None:
    report = verify(PATH, write(tmp_path / "results.json", results()))
    assert report.kind == "transcript"
    assert report.total == len(CASES) and report.ok, report.failures[:3]
    out = tmp_path / "results.json"
    assert main(["verify-vectors", str(PATH), "--results", str(out)]) == 0


@pytest.mark.parametrize(
    ("name", "error", "problem"),
    [
        ("edited-message-content", {"kind": "chain", "line": 4}, "expected 'chain' at line 3"),
        ("edited-message-content", {"kind": "refused", "line": 3}, "got 'refused' at line 3"),
        ("seed-over-index", {"kind": "index", "line": 2}, "expected 'seed' at line 2"),
        ("two-runs", {"kind": "chain", "line": 3}, "expected the file read, got 'chain'"),
    ],
)
def test_a_wrong_refusal_fails(
    tmp_path: Path, name: str, error: dict[str, Any], problem: str
) -> None:
    document = results()
    entry = next(c for c in document["cases"] if c["name"] == name)
    entry.pop("expect", None)
    entry["error"] = error
    assert problem in failures(document, tmp_path)[name]


def test_reading_what_must_be_refused_fails(tmp_path: Path) -> None:
    document = results()
    entry = next(c for c in document["cases"] if c["name"] == "inserted-line")
    del entry["error"]
    entry["expect"] = json.loads(json.dumps(BY_NAME["two-runs"]["expect"]))
    assert failures(document, tmp_path) == {
        "inserted-line": "expected 'chain' at line 4, got the file read"
    }


def test_a_message_that_differs_by_one_byte_is_told_apart(tmp_path: Path) -> None:
    document = results()
    entry = next(c for c in document["cases"] if c["name"] == "large-whole-floats")
    entry["expect"]["messages"][0] = entry["expect"]["messages"][0].replace("1e+21", "1e+22")
    problem = failures(document, tmp_path)["large-whole-floats"]
    assert problem.startswith("messages: expected [")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("chain", "blake3:" + "0" * 64),
        ("torn", {"line": 11, "offset": 0, "length": 1}),
        ("unchained", True),
        ("runs", []),
    ],
)
def test_every_part_of_a_read_is_compared(tmp_path: Path, key: str, value: Any) -> None:
    document = results()
    entry = next(c for c in document["cases"] if c["name"] == "two-runs")
    entry["expect"][key] = value
    assert failures(document, tmp_path)["two-runs"].startswith(f"{key}: expected ")


def test_a_run_field_is_compared(tmp_path: Path) -> None:
    document = results()
    entry = next(c for c in document["cases"] if c["name"] == "two-runs")
    entry["expect"]["runs"][1]["tail_text"] = None
    assert failures(document, tmp_path)["two-runs"].startswith("runs: expected ")


def test_a_missing_case_fails(tmp_path: Path) -> None:
    document = results()
    document["cases"] = [c for c in document["cases"] if c["name"] != "empty-file"]
    assert failures(document, tmp_path) == {"empty-file": "no result for this case"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("x", 'cases[0]: expected an object, got "x"'),
        ({"expect": {}}, "cases[0]: expected a string 'name', got null"),
        ({"name": "a"}, "cases[0] ('a'): expected exactly one of 'expect' and 'error'"),
        ({"name": "a", "error": "chain"}, "cases[0] ('a'): 'error' must be an object"),
        (
            {"name": "a", "error": {"kind": 3, "line": 3}},
            "cases[0] ('a'): 'error' must have a string 'kind' and an integer 'line'",
        ),
        (
            {"name": "a", "error": {"kind": "chain", "line": "3"}},
            "cases[0] ('a'): 'error' must have a string 'kind' and an integer 'line'",
        ),
    ],
)
def test_a_malformed_results_entry_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: Any, message: str
) -> None:
    path = write(tmp_path / "results.json", {"cases": [entry]})
    assert main(["verify-vectors", str(PATH), "--results", str(path)]) == 1
    assert capsys.readouterr().err == f"runcontext verify-vectors: {path}: {message}\n"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop("text"), "expected exactly one of a string 'text' and 'hex'"),
        (lambda c: c.update(hex="00"), "expected exactly one of a string 'text' and 'hex'"),
        (lambda c: c.update(max_line_bytes="9"), "'max_line_bytes' must be an integer"),
    ],
)
def test_a_malformed_vectors_entry_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    document = json.loads(PATH.read_text(encoding="ascii"))
    change(document["cases"][0])
    path = write(tmp_path / "transcript-v2.json", document)
    assert main(["verify-vectors", str(path), "--results", str(path)]) == 1
    name = document["cases"][0]["name"]
    assert capsys.readouterr().err == (
        f"runcontext verify-vectors: {path}: cases[0] ({name!r}): {message}\n"
    )


# --- the conversion of verify_bytes's answer, with a stand-in -----------------------------


class _StandInError(runcontext.transcript.TranscriptError):
    def __init__(self, kind: str, line: int) -> None:
        super().__init__(kind, path="<bytes>", line=line)
        self.kind = kind


@dataclass(frozen=True)
class _Run:
    number: int
    digest: str
    time: str
    messages: int
    context: runcontext.RunContext
    tokens: dict[str, Any] | None


@dataclass(frozen=True)
class _Verified:
    messages: list[Any]
    runs: list[_Run]
    chain: str
    torn: object
    unchained: bool
    sent: list[list[Any]]
    edits: list[tuple[Any, list[Any]]]


@dataclass(frozen=True)
class _Compaction:
    after_run: int
    timestamp: str
    start: int
    end: int
    mode: str
    tokens_before: int | None
    tokens_after: int | None
    quality: str | None


@dataclass(frozen=True)
class _Elision:
    after_run: int
    timestamp: str
    indices: tuple[int, ...]


def _edit(edit: Any) -> tuple[Any, list[Any]]:
    if edit.kind == "elision":
        indices = tuple(index for index, _ in edit.items)
        return _Elision(edit.after_run, edit.time, indices), [m for _, m in edit.items]
    tokens = edit.tokens or {}
    return _Compaction(
        edit.after_run,
        edit.time,
        edit.start,
        edit.end,
        edit.mode,
        tokens.get("before"),
        tokens.get("after"),
        tokens.get("quality"),
    ), list(edit.messages)


def _stand_in(data: bytes, *, name: str = "<bytes>", max_line_bytes: int = 64 << 20) -> Any:
    """``verify_bytes`` as the lead's API describes it, answered by the reference reader."""
    try:
        transcript = read(data, max_line_bytes=max_line_bytes)
    except TranscriptRefError as error:
        raise _StandInError(error.kind, error.line) from None
    runs = [
        _Run(
            run.number,
            run.digest,
            run.time,
            run.messages,
            runcontext.RunContext(
                head_sections=run.context.head_sections,
                facts=run.context.facts,
                tail_sections=run.context.tail_sections,
            ),
            run.tokens,
        )
        for run in transcript.runs
    ]
    # A version 1 file has no chain: verify_bytes returns None, as the vectors say.
    chain = transcript.chain
    return _Verified(
        transcript.messages,
        runs,
        chain,
        transcript.torn,
        transcript.unchained,
        [list(run.sent) for run in transcript.runs],
        [_edit(edit) for edit in transcript.edits],
    )


def test_observe_converts_verify_bytes_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runcontext.transcript, "verify_bytes", _stand_in, raising=False)
    report = verify(PATH)
    assert report.total == len(CASES) and report.ok, report.failures[:3]


def test_observe_reports_a_crash_as_a_failed_case(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(data: bytes, *, name: str = "<bytes>") -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(runcontext.transcript, "verify_bytes", crash, raising=False)
    observed = observe_transcript(BY_NAME["minimal"])
    assert observed["error"] == {"kind": "<KeyError: 'boom'>", "line": None}
    report = verify(PATH)
    assert len(report.failures) == len(CASES)


def test_without_verify_bytes_the_check_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(runcontext.transcript, "verify_bytes")
    assert main(["verify-vectors", str(PATH)]) == 1
    assert "has no runcontext.transcript.verify_bytes" in capsys.readouterr().err


# --- this installation -----------------------------------------------------------------------


def test_this_installation_passes_every_transcript_vector() -> None:
    report = verify(PATH)
    assert report.ok, "\n".join(f"{name}: {problem}" for name, problem in report.failures)


def test_this_installation_refuses_with_kind_and_line() -> None:
    verify_bytes = runcontext.transcript.verify_bytes
    with pytest.raises(runcontext.transcript.TranscriptError) as caught:
        verify_bytes(b"", name="empty.jsonl")
    assert (caught.value.kind, caught.value.line) == ("blank-line", 1)
    assert str(caught.value).startswith("empty.jsonl:1:")
