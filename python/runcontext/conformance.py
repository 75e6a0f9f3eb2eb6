"""Check an implementation against the conformance vectors of ``docs/vectors/``.

Two kinds of vector file are understood:

* RunContext vectors (``runcontext-v1.json``, ``"format": "runcontext-v1"``): constructor
  arguments and the expected texts, digests and sections, or the expected error.
* Canonical JSON vectors (``jcs.json``): a JSON text and its canonical form, or the kind of
  error that refuses it.

By default this installation is checked. A port in another language runs every case itself,
writes what it observed in the same shape as the vectors (``{"cases": [{"name": ..., "expect":
{...}} | {"name": ..., "error": {...}} | {"name": ..., "canonical": ...}]}``) and passes that
file as ``results``; see ``docs/CONFORMANCE.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runcontext._core import RunContext, canonicalize_text
from runcontext.errors import CanonicalJSONError, RunContextError

__all__ = ["Report", "observe_jcs", "observe_runcontext", "verify"]

_RUNCONTEXT_FIELDS = (
    "head_text",
    "tail_text",
    "digest",
    "facts",
    "head_sections",
    "tail_sections",
    "sections",
)


@dataclass(frozen=True)
class Report:
    """The outcome of one vectors file: how many cases, and which failed and why."""

    path: str
    kind: str
    total: int
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _pairs(pairs: tuple[tuple[str, str], ...]) -> list[list[str]]:
    return [list(p) for p in pairs]


def observe_runcontext(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation does with one RunContext case, in the vectors' shape."""
    args = case.get("args", {})
    try:
        rc = RunContext(
            head_sections=args.get("head_sections"),
            facts=args.get("facts"),
            tail_sections=args.get("tail_sections"),
        )
    except RunContextError as error:
        return {
            "name": case["name"],
            "error": {
                "kind": error.kind,
                "type_error": isinstance(error, TypeError),
                "arg": error.argument,
                "index": error.index,
            },
        }
    return {
        "name": case["name"],
        "expect": {
            "head_text": rc.head_text,
            "tail_text": rc.tail_text,
            "digest": rc.digest,
            "facts": _pairs(rc.facts),
            "head_sections": _pairs(rc.head_sections),
            "tail_sections": _pairs(rc.tail_sections),
            "sections": [
                {"position": s.position, "name": s.name, "digest": s.digest} for s in rc.sections
            ],
        },
    }


def observe_jcs(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation does with one canonical JSON case, in the vectors' shape."""
    try:
        canonical = canonicalize_text(case["input"].encode("utf-8", "surrogatepass"))
    except CanonicalJSONError as error:
        return {"name": case["name"], "error": error.kind}
    return {"name": case["name"], "canonical": canonical.decode("utf-8")}


def _differences(expected: dict[str, Any], observed: dict[str, Any], kind: str) -> str | None:
    if "error" in expected:
        if observed.get("error") != expected["error"]:
            got = observed.get("error") or "no error"
            return f"expected error {expected['error']!r}, got {got!r}"
        return None
    if kind == "jcs":
        if observed.get("canonical") != expected["canonical"]:
            got = observed.get("canonical", observed.get("error"))
            return f"expected {expected['canonical']!r}, got {got!r}"
        return None
    if "expect" not in observed:
        return f"expected a context, got error {observed.get('error')!r}"
    wrong = [
        f"{name}: expected {expected['expect'].get(name)!r}, got {observed['expect'].get(name)!r}"
        for name in _RUNCONTEXT_FIELDS
        if observed["expect"].get(name) != expected["expect"].get(name)
    ]
    return "; ".join(wrong) or None


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ValueError(f"{path}: not a vectors file (expected an object with a 'cases' array)")
    return data


def verify(path: str | Path, results: str | Path | None = None) -> Report:
    """Check every case of the vectors file at ``path``.

    Without ``results`` the cases run against this installation; with it, against the
    observations a port wrote to that file (matched to cases by name).
    """
    vectors_path = Path(path)
    vectors = _load(vectors_path)
    cases: list[dict[str, Any]] = vectors["cases"]
    kind = "runcontext" if vectors.get("format") == "runcontext-v1" else "jcs"
    if kind == "jcs" and not all("input" in c for c in cases):
        raise ValueError(f"{vectors_path}: neither RunContext nor canonical JSON vectors")
    observed: dict[str, dict[str, Any]]
    if results is None:
        observe = observe_runcontext if kind == "runcontext" else observe_jcs
        observed = {c["name"]: observe(c) for c in cases}
    else:
        observed = {r["name"]: r for r in _load(Path(results))["cases"]}
    failures = []
    for case in cases:
        found = observed.get(case["name"])
        problem = "no result for this case" if found is None else _differences(case, found, kind)
        if problem is not None:
            failures.append((case["name"], problem))
    return Report(path=str(vectors_path), kind=kind, total=len(cases), failures=failures)
