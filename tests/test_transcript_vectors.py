"""docs/vectors/transcript-v2.json agrees with the reference reader, case by case.

Independent of this installation: the committed file is exactly what the generator writes
now, every case's file, read by the reference, gives the recorded outcome, and a few facts
of the format are checked by hand (with the ``blake3`` package, not the reference), so the
vectors can never drift from docs/TRANSCRIPT.md's executable form.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from blake3 import blake3

import gen_transcript_vectors
from conftest import VECTORS
from reference.jcs import canonical_json
from reference.transcript import KINDS, TranscriptRefError, read

PATH = VECTORS / "transcript-v2.json"
DOCUMENT: dict[str, Any] = json.loads(PATH.read_text(encoding="ascii"))
CASES: list[dict[str, Any]] = DOCUMENT["cases"]


def same(a: object, b: object) -> bool:
    """Equal as JSON values, with ints and floats told apart (``1 == 1.0`` in Python):
    ``json.dumps`` writes ``1`` and ``1.0`` differently."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def data_of(case: dict[str, Any]) -> bytes:
    if "text" in case:
        text: str = case["text"]
        return text.encode("utf-8")
    return bytes.fromhex(case["hex"])


def test_file_matches_generator() -> None:
    assert PATH.read_text(encoding="ascii") == gen_transcript_vectors.render(), (
        "docs/vectors/transcript-v2.json is stale: run `python tests/gen_transcript_vectors.py`"
    )


def test_structure() -> None:
    assert DOCUMENT["format"] == "transcript-v2"
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert ("text" in case) != ("hex" in case), case["name"]
        assert ("expect" in case) != ("error" in case), case["name"]
        if "hex" in case:  # hex only where the bytes are not UTF-8
            with pytest.raises(UnicodeDecodeError):
                bytes.fromhex(case["hex"]).decode("utf-8")
        if "error" in case:
            assert set(case["error"]) == {"kind", "line"}
            assert case["error"]["kind"] in KINDS
        else:
            assert set(case["expect"]) == {
                "messages",
                "runs",
                "edits",
                "chain",
                "torn",
                "unchained",
            }


def test_every_kind_is_pinned() -> None:
    pinned = {case["error"]["kind"] for case in CASES if "error" in case}
    assert pinned == set(KINDS)


def test_read_torn_and_v1_cases_exist() -> None:
    read_cases = [case["expect"] for case in CASES if "expect" in case]
    assert any(e["torn"] is not None and not e["unchained"] for e in read_cases)
    assert any(e["unchained"] and e["chain"] is None for e in read_cases)
    assert any(e["runs"] for e in read_cases)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_reference_agrees(case: dict[str, Any]) -> None:
    options = {"max_line_bytes": case["max_line_bytes"]} if "max_line_bytes" in case else {}
    try:
        transcript = read(data_of(case), **options)
    except TranscriptRefError as error:
        assert "error" in case, f"refused as {error}"
        assert {"kind": error.kind, "line": error.line} == case["error"]
        return
    assert "expect" in case, f"read, expected {case.get('error')}"
    got = gen_transcript_vectors.expected(transcript)
    assert same(got, case["expect"]), (got, case["expect"])


def test_chain_by_hand() -> None:
    """The chain of TRANSCRIPT.md, computed with blake3 directly, over every valid v2 file."""
    for case in CASES:
        if "expect" not in case or case["expect"]["unchained"]:
            continue
        data = data_of(case)
        previous = b""
        complete = data.split(b"\n")[:-1]
        for line in complete:
            assert line.startswith(b'{"chain":"blake3:') and line[81:83] == b'",'
            body = b"{" + line[83:]
            chain = b"blake3:" + blake3(previous + body).hexdigest().encode()
            assert line[10:81] == chain, case["name"]
            previous = chain
        assert previous.decode() == case["expect"]["chain"], case["name"]


def test_large_integers_read_as_floats() -> None:
    case = next(c for c in CASES if c["name"] == "large-whole-floats")
    message = read(case["text"].encode()).messages[0]
    assert all(type(x) is float for x in message["floats"])
    assert all(type(x) is int for x in message["ints"])
    assert [type(x) for x in message["whole"]] == [int, int, float, float, float]
    # The seed was the digest of the message as given, floats and all.
    assert b"1152921504606847000," in canonical_json(message)
