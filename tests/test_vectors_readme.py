"""The counts docs/vectors/README.md and docs/CONFORMANCE.md state match the vector files, so
regenerating the vectors without updating the prose fails here."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from reference.transcript import KINDS

DOCS = Path(__file__).resolve().parent.parent / "docs"
VECTORS = DOCS / "vectors"
README = (VECTORS / "README.md").read_text(encoding="utf-8")
CONFORMANCE = (DOCS / "CONFORMANCE.md").read_text(encoding="utf-8")


def _cases(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((VECTORS / name).read_text())["cases"]
    return cases


def _stated(text: str, pattern: str) -> int:
    found = re.findall(pattern, text, re.MULTILINE)
    assert len(found) == 1, f"{pattern!r} occurs {len(found)} times"
    return int(found[0].replace(",", ""))


def test_the_transcript_counts_in_the_readme_are_the_files() -> None:
    cases = _cases("transcript-v2.json")
    read = [case["expect"] for case in cases if "expect" in case]
    refused = [case["error"] for case in cases if "error" in case]
    contents = README.split("### Contents", 2)[2].split("###", 1)[0]
    assert _stated(contents, r"^(\d+) cases: ") == len(cases)
    assert _stated(contents, r"cases: (\d+) read \(") == len(read)
    assert _stated(contents, r"\) and (\d+) refused, every kind") == len(refused)
    assert _stated(contents, r"(\d+) with `tokens` members") == sum(
        any(run["tokens"] is not None for run in e["runs"]) for e in read
    )
    assert _stated(contents, r"(\d+) torn last lines") == sum(e["torn"] is not None for e in read)
    assert _stated(contents, r"(\d+) version 1 files") == sum(e["unchained"] for e in read)
    kinds = Counter(error["kind"] for error in refused)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 2, "every kind at least twice"
    assert _stated(README, r"one of the (\d+) kinds of TRANSCRIPT.md's table") == len(KINDS)
    assert _stated(CONFORMANCE, r"reading of version 1\): (\d+) whole files") == len(cases)


def test_every_run_member_of_the_vectors_is_in_the_readme_schema() -> None:
    schema = README.split("## `transcript-v2.json`", 1)[1].split("```", 2)[1]
    members = {
        member
        for case in _cases("transcript-v2.json")
        for run in case.get("expect", {}).get("runs", [])
        for member in run
    }
    for member in sorted(members):
        assert f'"{member}":' in schema, f"the schema lacks runs[].{member}"


def test_the_other_counts_in_conformance_are_the_files() -> None:
    assert _stated(CONFORMANCE, r"`jcs.json` \| (\d+) JSON texts") == len(_cases("jcs.json"))
    refusals = _cases("jcs-refusals.json")
    assert _stated(CONFORMANCE, r"`jcs-refusals.json` \| (\d+) JSON texts") == len(refusals)
    runcontext = _cases("runcontext-v1.json")
    assert _stated(CONFORMANCE, r"`runcontext-v1.json` \| (\d+) RunContext") == len(runcontext)
    doubles = len((VECTORS / "es-numbers.txt").read_text().splitlines())
    assert _stated(CONFORMANCE, r"`es-numbers.txt` \| ([\d,]+) doubles") == doubles
    assert _stated(README, r"for ([\d,]+) doubles\.") == doubles


def test_the_adapter_counts_in_the_readme_are_the_file() -> None:
    cases = _cases("adapters.json")
    policy = [case for case in cases if case["adapter"] == "openai_prompt_caching"]
    contents = README.split("## `adapters.json`", 1)[1].split("### Contents", 1)[1]
    assert _stated(contents, r"^(\d+) cases: ") == len(cases)
    assert _stated(contents, r"cases: (\d+) of `openai_prompt_caching`") == len(policy)
    assert _stated(contents, r"\) and (\d+) bodies or refusals") == len(cases) - len(policy)
    assert _stated(contents, r"bodies or refusals, (\d+)\s+refused") == sum(
        "error" in case for case in cases
    )
