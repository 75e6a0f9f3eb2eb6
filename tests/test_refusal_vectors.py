"""docs/vectors/jcs-refusals.json: generated from the reference, checked by hand in places,
passed by this installation, and checked with places by verify-vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gen_refusal_vectors
import pytest

from runcontext.conformance import jcs_input, observe_jcs, verify

from conftest import VECTORS

PATH = VECTORS / "jcs-refusals.json"
CASES: list[dict[str, Any]] = json.loads(PATH.read_text(encoding="ascii"))["cases"]
BY_NAME = {case["name"]: case for case in CASES}


def test_file_matches_generator() -> None:
    assert PATH.read_text(encoding="ascii") == gen_refusal_vectors.render(), (
        "docs/vectors/jcs-refusals.json is stale: run python tests/gen_runcontext_vectors.py"
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    observed = observe_jcs(case)
    for key in ("canonical", "error", "at"):
        assert observed.get(key) == case.get(key)


@pytest.mark.parametrize(
    ("name", "kind", "offset", "column", "path"),
    [
        # Worked out by hand from FORMAT.md § 1.7.2, not from either implementation.
        ("duplicate-before-later-overflow", "duplicate-key", 7, 8, "$"),
        ("duplicate-earliest-repeat", "duplicate-key", 13, 14, "$"),
        ("lone-high-before-bad-escape", "lone-surrogate", 1, 2, "$"),
        ("leading-zero", "syntax", 1, 2, "$"),
        ("fraction-without-digits", "syntax", 2, 3, "$"),
        ("minus-alone", "syntax", 1, 2, "$"),
        ("missing-colon", "syntax", 5, 6, "$"),
        ("missing-value", "syntax", 5, 6, "$.a"),
        ("overflow-400-digit-integer", "number-overflow", 0, 1, "$"),
        ("column-counts-code-points", "syntax", 8, 6, "$"),
        ("utf8-before-bom", "invalid-utf8", 4, 3, "$"),
        ("path-kelvin-sign", "number-overflow", 7, 6, '$["\u212a"]'),
    ],
)
def test_spot_checks_by_hand(name: str, kind: str, offset: int, column: int, path: str) -> None:
    case = BY_NAME[name]
    assert case["error"] == kind
    assert (case["at"]["offset"], case["at"]["column"], case["at"]["path"]) == (
        offset,
        column,
        path,
    )


def test_2_to_the_53_stands_and_the_next_integer_is_refused() -> None:
    # FORMAT.md § 1.7.1 is the rule; docs/vectors/README.md and jcs.json agree with it.
    assert BY_NAME["two-to-the-53-stands"]["canonical"] == "9007199254740992"
    assert BY_NAME["two-to-the-53-plus-one-refused"]["error"] == "integer-out-of-range"


def test_invalid_utf8_is_given_as_hex() -> None:
    case = BY_NAME["utf8-encoded-surrogate"]
    assert "input" not in case
    assert jcs_input(case) == b'"\xed\xa0\x80"'


def test_verify_passes_and_checks_places(tmp_path: Path) -> None:
    assert verify(PATH).ok
    # A port that names the right kind at the wrong place fails.
    results = [observe_jcs(case) for case in CASES]
    moved = next(r for r in results if r["name"] == "missing-colon")
    moved["at"] = {**moved["at"], "offset": 4}
    for result in results:
        if result["name"] == "leading-zero":
            del result["at"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"cases": results}))
    report = verify(PATH, path)
    assert sorted(name for name, _ in report.failures) == ["leading-zero", "missing-colon"]
