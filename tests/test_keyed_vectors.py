"""docs/vectors/keyed-digest.json: exactly what tests/gen_keyed_vectors.py writes from the
reference, every case reproduced by this installation, and a port checked through
``runcontext verify-vectors --results``."""

from __future__ import annotations

import json
from pathlib import Path

import gen_keyed_vectors
import pytest
from blake3 import blake3

from runcontext.conformance import observe_keyed, verify


def test_the_committed_file_is_what_the_generator_writes() -> None:
    committed = gen_keyed_vectors.VECTORS_PATH.read_bytes()
    assert committed == gen_keyed_vectors.render().encode("ascii"), (
        "docs/vectors/keyed-digest.json is stale: run python tests/gen_keyed_vectors.py"
    )


def test_every_case_passes_against_this_installation() -> None:
    report = verify(gen_keyed_vectors.VECTORS_PATH)
    assert report.kind == "keyed-digest"
    assert report.total == len(gen_keyed_vectors.CASES) >= 8
    assert report.failures == []


def test_the_byte_cases_are_blake3_s_keyed_hash() -> None:
    # Checked with the blake3 package alone, without the reference's code.
    document = json.loads(gen_keyed_vectors.VECTORS_PATH.read_text("ascii"))
    byte_cases = [case for case in document["cases"] if "input_hex" in case]
    assert len(byte_cases) >= 3
    for case in byte_cases:
        key, data = bytes.fromhex(case["key_hex"]), bytes.fromhex(case["input_hex"])
        assert case["expect"]["keyed_digest"] == (
            "blake3-keyed:" + blake3(data, key=key).hexdigest()
        )


def test_a_port_s_wrong_result_is_reported(tmp_path: Path) -> None:
    document = json.loads(gen_keyed_vectors.VECTORS_PATH.read_text("ascii"))
    observed = [observe_keyed(case) for case in document["cases"]]
    first = observed[0]["expect"]
    wrong = "blake3-keyed:" + "0" * 64
    first["keyed_digest"] = wrong
    results = tmp_path / "port.json"
    results.write_text(json.dumps({"cases": observed[:-1]}))
    report = verify(gen_keyed_vectors.VECTORS_PATH, results)
    assert report.failures == [
        (
            "spec-key-empty-input",
            f"keyed_digest: expected {document['cases'][0]['expect']['keyed_digest']!r}, "
            f"got {wrong!r}",
        ),
        (document["cases"][-1]["name"], "no result for this case"),
    ]


def test_a_malformed_case_is_refused_naming_it(tmp_path: Path) -> None:
    document = json.loads(gen_keyed_vectors.VECTORS_PATH.read_text("ascii"))
    document["cases"][1]["key_hex"] = "00" * 16
    bad = tmp_path / "keyed.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(ValueError) as raised:
        verify(bad)
    assert str(raised.value) == (
        f"{bad}: cases[1] ('zero-key-abc'): 'key_hex' must be 64 lowercase hex digits (32 bytes)"
    )
