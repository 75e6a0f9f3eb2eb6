"""docs/vectors/adapters.json: exactly what tests/gen_adapter_vectors.py writes from the Python
adapters, every case reproduced by this installation (bodies compared as JSON text, members in
order), and a port's adapters checked through ``runcontext verify-vectors --results``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gen_adapter_vectors
import pytest

from runcontext.conformance import observe_adapter, verify


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gen_adapter_vectors.VECTORS_PATH.read_text("ascii"))
    return document


def test_the_committed_file_is_what_the_generator_writes() -> None:
    committed = gen_adapter_vectors.VECTORS_PATH.read_bytes()
    assert committed == gen_adapter_vectors.render().encode("ascii"), (
        "docs/vectors/adapters.json is stale: run python tests/gen_adapter_vectors.py"
    )


def test_every_case_passes_against_this_installation() -> None:
    report = verify(gen_adapter_vectors.VECTORS_PATH)
    assert report.kind == "adapters"
    assert report.total == len(_document()["cases"]) >= 90
    assert report.failures == []


def test_every_adapter_and_both_outcomes_are_covered() -> None:
    cases = _document()["cases"]
    for adapter in ("openai_chat", "openai_chat_request", "openai_responses", "anthropic_messages"):
        mine = [case for case in cases if case["adapter"] == adapter]
        assert any("expect" in case for case in mine), adapter
    for adapter in ("openai_chat", "openai_responses", "anthropic_messages"):
        mine = [case for case in cases if case["adapter"] == adapter]
        assert {case["error"]["type"] for case in mine if "error" in case} == {
            "TypeError",
            "ValueError",
        }, adapter


def test_a_port_s_wrong_body_wrong_refusal_and_missing_case_are_reported(tmp_path: Path) -> None:
    cases = _document()["cases"]
    observed = [observe_adapter(case) for case in cases]
    body = next(
        o for o in observed if isinstance(o.get("expect"), dict) and "system" in o["expect"]
    )
    # The same members in another order is another body: the bytes an SDK sends differ.
    body["expect"] = dict(reversed(list(body["expect"].items())))
    refusal = next(o for o in observed if "error" in o)
    refusal["error"] = {"type": "TypeError", "where": "elsewhere"}
    results = tmp_path / "port.json"
    results.write_text(json.dumps({"cases": observed[:-1]}))
    report = verify(gen_adapter_vectors.VECTORS_PATH, results)
    order = [case["name"] for case in cases]
    assert [name for name, _ in report.failures] == sorted(
        [body["name"], refusal["name"], cases[-1]["name"]], key=order.index
    )
    problems = dict(report.failures)
    assert problems[body["name"]].startswith('expected {"system": ')
    error = cases[order.index(refusal["name"])]["error"]
    want = {"type": error["type"], "where": error["where"]}
    assert problems[refusal["name"]] == (
        f"expected the refusal {want}, got " + '{"type": "TypeError", "where": "elsewhere"}'
    )
    assert problems[cases[-1]["name"]] == "no result for this case"


def test_a_malformed_case_is_refused_naming_it(tmp_path: Path) -> None:
    document = _document()
    document["cases"][3]["adapter"] = "gemini_contents"
    vectors = tmp_path / "adapters.json"
    vectors.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"cases\[3\] \('gpt-6-luna'\): 'adapter' must be one of"):
        verify(vectors)
