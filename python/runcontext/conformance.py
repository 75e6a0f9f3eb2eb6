"""Check an implementation against the conformance vectors of ``docs/vectors/``.

Six kinds of vector file are understood:

* RunContext vectors (``runcontext-v1.json``, ``"format": "runcontext-v1"``): constructor
  arguments and the expected texts, digests and sections, or the expected error.
* Canonical JSON vectors (``jcs.json``): a JSON text and its canonical form, or the kind of
  error that refuses it.
* Number lines (``es-numbers.txt``): ``<16 hex digits> <text>`` per line, the IEEE 754 bits
  of a double and how canonical JSON writes it.
* Transcript vectors (``transcript-v2.json``, ``"format": "transcript-v2"``): whole transcript
  files and what a reader makes of them (messages, runs, chain, torn line) or the refusal
  (kind and line), checked through ``runcontext.transcript.verify_bytes``.
* Keyed-digest vectors (``keyed-digest.json``, ``"format": "keyed-digest-v1"``): a 32-byte key
  and bytes, a JSON value or RunContext arguments, with the plain and keyed digests of each.
* Adapter vectors (``adapters.json``, ``"format": "adapters-v1"``): an adapter's arguments and
  the request body it builds, or its refusal (``TypeError`` or ``ValueError`` and the place it
  names), checked through ``runcontext.adapters``.

By default this installation is checked. A port in another language runs every case itself,
writes what it observed in the same shape as the vectors (``{"cases": [{"name": ..., "expect":
{...}} | {"name": ..., "error": {...}} | {"name": ..., "canonical": ...}]}``, or number lines
for ``es-numbers.txt``) and passes that file as ``results``; see ``docs/CONFORMANCE.md``.
Errors must name the same kind as the vectors: the kinds are part of the contract.
"""

from __future__ import annotations

import json
import re
import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runcontext._core import (
    RunContext,
    canonical_json,
    canonicalize_text,
    digest,
    digest_bytes,
    keyed_digest,
    keyed_digest_bytes,
)
from runcontext.errors import CanonicalJSONError, RunContextError

__all__ = [
    "Report",
    "bundled_vectors",
    "observe_adapter",
    "observe_jcs",
    "observe_keyed",
    "observe_number",
    "observe_runcontext",
    "observe_transcript",
    "verify",
]

_RUNCONTEXT_FIELDS = (
    "head_text",
    "tail_text",
    "digest",
    "facts",
    "head_sections",
    "tail_sections",
    "sections",
)

# The outcome keys of a case, and the JSON type each must have, per kind of vectors file.
_OUTCOMES: dict[str, dict[str, type]] = {
    "runcontext": {"expect": dict, "error": dict},
    "jcs": {"canonical": str, "error": str},
}
_JSON_TYPE: dict[type, str] = {dict: "an object", str: "a string"}

_NUMBER_LINE = re.compile(r"([0-9a-f]{16}) (\S+)")


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


def _text_object(value: Any) -> str | None:
    """The string a ``{"utf16": [code units]}`` object stands for, or None if it is not one."""
    if not (isinstance(value, dict) and list(value) == ["utf16"]):
        return None
    units = value["utf16"]
    if not (
        isinstance(units, list)
        and all(type(u) is int and 0 <= u <= 0xFFFF for u in units)  # bool is not a code unit
    ):
        return None
    data = b"".join(u.to_bytes(2, "big") for u in units)
    return data.decode("utf-16-be", "surrogatepass")


def vector_args(value: Any) -> Any:
    """RunContext arguments as the vectors write them, as Python values: a
    ``{"utf16": [...]}`` object is the string of those UTF-16 code units (how a vector writes
    a lone surrogate, which JSON text cannot hold); every other value is itself."""
    text = _text_object(value)
    if text is not None:
        return text
    if isinstance(value, list):
        return [vector_args(item) for item in value]
    if isinstance(value, dict):
        return {key: vector_args(item) for key, item in value.items()}
    return value


def observe_runcontext(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation does with one RunContext case, in the vectors' shape."""
    args = vector_args(case.get("args") or {})
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


def jcs_input(case: dict[str, Any]) -> bytes:
    """The bytes a canonical JSON case gives the canonicaliser: ``input`` as UTF-8, or
    ``input_hex`` (for bytes that are not UTF-8)."""
    if "input_hex" in case:
        return bytes.fromhex(case["input_hex"])
    text: str = case["input"]
    return text.encode("utf-8", "surrogatepass")


_AT_FIELDS = ("offset", "line", "column", "path")


def observe_jcs(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation does with one canonical JSON case, in the vectors' shape; where
    the case pins a refusal's place (``at``), the place too."""
    try:
        canonical = canonicalize_text(jcs_input(case))
    except CanonicalJSONError as error:
        observed: dict[str, Any] = {"name": case["name"], "error": error.kind}
        if "at" in case:
            observed["at"] = {key: getattr(error, key, None) for key in _AT_FIELDS}
        return observed
    return {"name": case["name"], "canonical": canonical.decode("utf-8")}


def observe_number(bits: str) -> str:
    """How this installation writes the double with IEEE 754 bit pattern ``bits`` (16 hex)."""
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    try:
        return canonical_json(value).decode("ascii")
    except CanonicalJSONError as error:
        return f"<refused: {error.kind}>"


def _differences(expected: dict[str, Any], observed: dict[str, Any], kind: str) -> str | None:
    if "error" in expected:
        got = observed.get("error")
        if got == expected["error"]:
            if "at" in expected and observed.get("at") != expected["at"]:
                return f"expected error {got!r} at {expected['at']}, got it at {observed.get('at')}"
            return None
        if got is None:
            shown = f"canonical {observed.get('canonical')!r}" if kind == "jcs" else "a context"
        else:
            shown = repr(got)
        return f"expected error {expected['error']!r}, got {shown}"
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


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ValueError(f"{path}: not a vectors file (expected an object with a 'cases' array)")
    if not data["cases"]:
        raise ValueError(f"{path}: the 'cases' array is empty: there is nothing to check")
    return data


def _has_input(case: dict[str, Any]) -> bool:
    if "input_hex" in case:
        try:
            bytes.fromhex(case["input_hex"])
        except (TypeError, ValueError):
            return False
        return "input" not in case
    return isinstance(case.get("input"), str)


def _named_cases(path: Path, cases: list[Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each case with where it is and its name; a case that is not an object with a unique
    string ``name`` is refused naming the file and its index, rather than crash on it."""
    seen: dict[str, int] = {}
    for i, case in enumerate(cases):
        where = f"{path}: cases[{i}]"
        if not isinstance(case, dict):
            raise ValueError(f"{where}: expected an object, got {json.dumps(case)[:60]}")
        name = case.get("name")
        if not isinstance(name, str):
            raise ValueError(f"{where}: expected a string 'name', got {json.dumps(name)}")
        if name in seen:
            raise ValueError(f"{where}: the name {name!r} repeats cases[{seen[name]}]")
        seen[name] = i
        yield where, name, case


def _check_cases(path: Path, cases: list[Any], kind: str, *, vectors: bool) -> None:
    """Refuse a malformed entry naming the file and its index, rather than crash on it."""
    outcomes = _OUTCOMES[kind]
    for where, name, case in _named_cases(path, cases):
        present = [key for key in outcomes if key in case]
        if len(present) != 1:
            keys = " and ".join(repr(key) for key in outcomes)
            raise ValueError(f"{where} ({name!r}): expected exactly one of {keys}")
        expected_type = outcomes[present[0]]
        if not isinstance(case[present[0]], expected_type):
            raise ValueError(
                f"{where} ({name!r}): '{present[0]}' must be {_JSON_TYPE[expected_type]}, got "
                f"{json.dumps(case[present[0]])[:60]}"
            )
        if vectors and kind == "jcs" and not _has_input(case):
            raise ValueError(f"{where} ({name!r}): expected a string 'input' or a hex 'input_hex'")
        if "at" in case and not isinstance(case["at"], dict):
            raise ValueError(f"{where} ({name!r}): 'at' must be an object")
        if vectors and kind == "runcontext" and not isinstance(case.get("args", {}), dict | None):
            raise ValueError(f"{where} ({name!r}): 'args' must be an object")


def _read_number_lines(path: Path, text: str) -> dict[str, str]:
    lines = text.split("\n")
    if lines[-1] == "":  # the final line end
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: the file is empty: there is nothing to check")
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        match = _NUMBER_LINE.fullmatch(line)
        if match is None:
            raise ValueError(
                f"{path}: line {number}: expected '<16 lowercase hex digits> <number>', got "
                f"{line[:60]!r}"
            )
        if match[1] in found:
            raise ValueError(f"{path}: line {number}: the bit pattern {match[1]} repeats")
        found[match[1]] = match[2]
    return found


def _verify_numbers(path: Path, text: str, results: Path | None) -> Report:
    expected = _read_number_lines(path, text)
    observed: Callable[[str], str | None]
    if results is None:
        observed = observe_number
    else:
        observed = _read_number_lines(results, _read_text(results)).get
    failures = []
    for bits, want in expected.items():
        got = observed(bits)
        if got is None:
            failures.append((bits, "no result for this number"))
        elif got != want:
            failures.append((bits, f"expected {want}, got {got}"))
    return Report(path=str(path), kind="es-numbers", total=len(expected), failures=failures)


def _is_number_lines(text: str) -> bool:
    return _NUMBER_LINE.match(text) is not None


# The vectors this package was built with: docs/vectors/*.json and *.txt, copied into the
# package at build time (rust/python/build.rs; an editable install copies them here too).
BUNDLED_VECTORS_DIR = Path(__file__).resolve().parent / "vectors"
_VECTOR_SUFFIXES = (".json", ".txt")


def bundled_vectors() -> list[Path]:
    """The vectors files shipped inside this installation, sorted by name.

    Raises ``FileNotFoundError`` when there are none (a build that left the package data out).
    """
    found = sorted(
        p
        for p in (BUNDLED_VECTORS_DIR.iterdir() if BUNDLED_VECTORS_DIR.is_dir() else ())
        if p.suffix in _VECTOR_SUFFIXES and p.is_file()
    )
    if not found:
        raise FileNotFoundError(
            f"no conformance vectors in {BUNDLED_VECTORS_DIR}: this installation was built "
            "without its package data; pass a vectors file (docs/vectors/ in the source)"
        )
    return found


def verify(path: str | Path, results: str | Path | None = None) -> Report:
    """Check every case of the vectors file at ``path``.

    Without ``results`` the cases run against this installation; with it, against the
    observations a port wrote to that file (matched to cases by name, or for number lines by
    bit pattern). A malformed file raises ``ValueError`` naming the file and the entry.
    """
    vectors_path = Path(path)
    results_path = None if results is None else Path(results)
    text = _read_text(vectors_path)
    if _is_number_lines(text):
        return _verify_numbers(vectors_path, text, results_path)
    vectors = _load(vectors_path)
    cases: list[Any] = vectors["cases"]
    if vectors.get("format") == "transcript-v2":
        return _verify_transcripts(vectors_path, cases, results_path)
    if vectors.get("format") == "keyed-digest-v1":
        return _verify_keyed(vectors_path, cases, results_path)
    if vectors.get("format") == "adapters-v1":
        return _verify_adapters(vectors_path, cases, results_path)
    if vectors.get("format") == "runcontext-v1":
        kind = "runcontext"
    elif all(isinstance(c, dict) and ("input" in c or "input_hex" in c) for c in cases):
        kind = "jcs"
    else:
        raise ValueError(f"{vectors_path}: neither RunContext nor canonical JSON vectors")
    _check_cases(vectors_path, cases, kind, vectors=True)
    observed: dict[str, dict[str, Any]]
    if results_path is None:
        observe = observe_runcontext if kind == "runcontext" else observe_jcs
        observed = {c["name"]: observe(c) for c in cases}
    else:
        reported = _load(results_path)["cases"]
        _check_cases(results_path, reported, kind, vectors=False)
        observed = {r["name"]: r for r in reported}
    failures = []
    for case in cases:
        found = observed.get(case["name"])
        problem = "no result for this case" if found is None else _differences(case, found, kind)
        if problem is not None:
            failures.append((case["name"], problem))
    return Report(path=str(vectors_path), kind=kind, total=len(cases), failures=failures)


# --- keyed-digest vectors (keyed-digest.json) ------------------------------------------------

_KEYED_INPUTS = ("input_hex", "value", "args")


def observe_keyed(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation computes for one keyed-digest case, in the vectors' shape."""
    key = bytes.fromhex(case["key_hex"])
    expect: dict[str, Any]
    if "input_hex" in case:
        data = bytes.fromhex(case["input_hex"])
        expect = {"digest": digest_bytes(data), "keyed_digest": keyed_digest_bytes(key, data)}
    elif "value" in case:
        value = case["value"]
        expect = {
            "canonical": canonical_json(value).decode("utf-8"),
            "digest": digest(value),
            "keyed_digest": keyed_digest(key, value),
        }
    else:
        args = vector_args(case["args"] or {})
        rc = RunContext(
            head_sections=args.get("head_sections"),
            facts=args.get("facts"),
            tail_sections=args.get("tail_sections"),
        )
        keyed, keyed_sections = rc.keyed_digests(key)
        expect = {
            "digest": rc.digest,
            "keyed_digest": keyed,
            "section_digests": list(rc.section_digests),
            "keyed_section_digests": list(keyed_sections),
        }
    return {"name": case["name"], "expect": expect}


def _check_keyed_cases(path: Path, cases: list[Any], *, vectors: bool) -> None:
    """Refuse a malformed entry naming the file and its index, rather than crash on it."""
    for at, name, case in _named_cases(path, cases):
        where = f"{at} ({name!r})"
        if not isinstance(case.get("expect"), dict):
            raise ValueError(f"{where}: expected an object 'expect'")
        if not vectors:
            continue
        key_hex = case.get("key_hex")
        if not (isinstance(key_hex, str) and re.fullmatch(r"[0-9a-f]{64}", key_hex)):
            raise ValueError(f"{where}: 'key_hex' must be 64 lowercase hex digits (32 bytes)")
        present = [key for key in _KEYED_INPUTS if key in case]
        if len(present) != 1:
            raise ValueError(f"{where}: expected exactly one of 'input_hex', 'value' and 'args'")
        if "input_hex" in case and not (
            isinstance(case["input_hex"], str)
            and re.fullmatch(r"(?:[0-9a-f]{2})*", case["input_hex"])
        ):
            raise ValueError(f"{where}: 'input_hex' must be lowercase hex digits, two a byte")
        if "args" in case and not isinstance(case["args"], dict | None):
            raise ValueError(f"{where}: 'args' must be an object")


def _verify_keyed(path: Path, cases: list[Any], results: Path | None) -> Report:
    _check_keyed_cases(path, cases, vectors=True)
    observed: dict[str, dict[str, Any]]
    if results is None:
        observed = {case["name"]: observe_keyed(case) for case in cases}
    else:
        reported = _load(results)["cases"]
        _check_keyed_cases(results, reported, vectors=False)
        observed = {r["name"]: r for r in reported}
    failures = []
    for case in cases:
        found = observed.get(case["name"])
        if found is None:
            failures.append((case["name"], "no result for this case"))
            continue
        wrong = [
            f"{member}: expected {want!r}, got {found['expect'].get(member)!r}"
            for member, want in case["expect"].items()
            if found["expect"].get(member) != want
        ]
        if wrong:
            failures.append((case["name"], "; ".join(wrong)))
    return Report(path=str(path), kind="keyed-digest", total=len(cases), failures=failures)


# --- adapter vectors (adapters.json) ---------------------------------------------------------

_ADAPTER_NAMES = (
    "openai_chat",
    "openai_chat_request",
    "openai_responses",
    "anthropic_messages",
    "openai_prompt_caching",
)


def observe_adapter(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation's adapter builds for one adapter case, in the vectors' shape:
    ``expect`` (the body) or ``error`` (``type`` and ``where``, the message up to its first
    ``": "``)."""
    from runcontext import adapters

    args = case["context"]
    context = None if args is None else RunContext(**args)  # a bad context is not the case's
    try:
        if case["adapter"] == "openai_prompt_caching":
            return {"name": case["name"], "expect": adapters.openai_prompt_caching(case["input"])}
        adapter = getattr(adapters, case["adapter"])
        body = adapter(case["input"], context, **case["options"])
    except (TypeError, ValueError) as error:
        where = str(error).split(": ", 1)[0]
        return {"name": case["name"], "error": {"type": type(error).__name__, "where": where}}
    return {"name": case["name"], "expect": body}


def _check_adapter_cases(path: Path, cases: list[Any], *, vectors: bool) -> None:
    """Refuse a malformed entry naming the file and its index, rather than crash on it."""
    for at, name, case in _named_cases(path, cases):
        where = f"{at} ({name!r})"
        if ("expect" in case) == ("error" in case):
            raise ValueError(f"{where}: expected exactly one of 'expect' and 'error'")
        error = case.get("error")
        if error is not None and not (
            isinstance(error, dict)
            and error.get("type") in ("TypeError", "ValueError")
            and isinstance(error.get("where"), str)
        ):
            raise ValueError(f"{where}: 'error' must be {{'type': TypeError|ValueError, 'where'}}")
        if not vectors:
            continue
        if case.get("adapter") not in _ADAPTER_NAMES:
            raise ValueError(f"{where}: 'adapter' must be one of {', '.join(_ADAPTER_NAMES)}")
        if "input" not in case or not isinstance(case.get("options"), dict):
            raise ValueError(f"{where}: expected 'input' and an object 'options'")
        if not isinstance(case.get("context"), dict | None):
            raise ValueError(f"{where}: 'context' must be RunContext arguments or null")


def _ordered_json(value: object) -> str:
    """JSON text with the members in their order: the bytes an SDK would send."""
    return json.dumps(value, ensure_ascii=False)


def _verify_adapters(path: Path, cases: list[Any], results: Path | None) -> Report:
    _check_adapter_cases(path, cases, vectors=True)
    observed: dict[str, dict[str, Any]]
    if results is None:
        observed = {case["name"]: observe_adapter(case) for case in cases}
    else:
        reported = _load(results)["cases"]
        _check_adapter_cases(results, reported, vectors=False)
        observed = {r["name"]: r for r in reported}
    failures = []
    for case in cases:
        found = observed.get(case["name"])
        if found is None:
            failures.append((case["name"], "no result for this case"))
            continue
        if "error" in case:
            want = {key: case["error"][key] for key in ("type", "where")}
            got = found.get("error")
            if got is None or {key: got.get(key) for key in ("type", "where")} != want:
                shown = _shorten(_as_json(found.get("expect", got)))
                failures.append((case["name"], f"expected the refusal {want}, got {shown}"))
        elif _ordered_json(found.get("expect")) != _ordered_json(case["expect"]):
            failures.append(
                (
                    case["name"],
                    f"expected {_shorten(_ordered_json(case['expect']))}, "
                    f"got {_shorten(_ordered_json(found.get('expect', found.get('error'))))}",
                )
            )
    return Report(path=str(path), kind="adapters", total=len(cases), failures=failures)


# --- transcript vectors (transcript-v2.json) --------------------------------------------------

_TRANSCRIPT_EXPECT = ("messages", "runs", "edits", "chain", "torn", "unchained")


def _transcript_bytes(case: dict[str, Any]) -> bytes:
    if "text" in case:
        text: str = case["text"]
        return text.encode("utf-8")
    return bytes.fromhex(case["hex"])


def _timestamp(moment: Any) -> str:
    """A run's time as the transcript writes it (a stand-in may already give the text)."""
    from runcontext.transcript._timestamps import format_time

    return moment if isinstance(moment, str) else format_time(moment)


def observe_transcript(case: dict[str, Any]) -> dict[str, Any]:
    """What this installation's ``runcontext.transcript.verify_bytes`` does with one case."""
    from runcontext import transcript

    verify_bytes = getattr(transcript, "verify_bytes", None)
    if verify_bytes is None:
        raise ValueError(
            "this installation has no runcontext.transcript.verify_bytes to check transcripts "
            "with; a port can still be checked with --results"
        )
    options = {"max_line_bytes": case["max_line_bytes"]} if "max_line_bytes" in case else {}
    with warnings.catch_warnings():  # v1 files and torn lines warn; the outcome says so
        warnings.simplefilter("ignore")
        try:
            verified = verify_bytes(_transcript_bytes(case), name=case["name"], **options)
        except transcript.TranscriptError as error:
            return {
                "name": case["name"],
                "error": {"kind": getattr(error, "kind", None), "line": error.line},
            }
        except Exception as error:  # a crash is a failure of this case, not of the run
            return {
                "name": case["name"],
                "error": {"kind": f"<{type(error).__name__}: {error}>", "line": None},
            }
    torn = verified.torn
    return {
        "name": case["name"],
        "expect": {
            "messages": [canonical_json(m).decode() for m in verified.messages],
            "runs": [
                {
                    "run": run.number,
                    "digest": run.digest,
                    "time": _timestamp(run.time),
                    "messages": run.messages,
                    "head_text": run.context.head_text,
                    "tail_text": run.context.tail_text,
                    "sections": [
                        {"position": s.position, "name": s.name, "digest": s.digest}
                        for s in run.context.sections
                    ],
                    "facts": _pairs(run.context.facts),
                    "tokens": None if run.tokens is None else dict(run.tokens),
                    "sent": [canonical_json(m).decode() for m in sent],
                }
                for run, sent in zip(verified.runs, verified.sent, strict=True)
            ],
            "edits": [_edit_json(edit, added) for edit, added in verified.edits],
            "chain": verified.chain,
            "torn": None
            if torn is None
            else {"line": torn.line, "offset": torn.offset, "length": torn.length},
            "unchained": bool(verified.unchained),
        },
    }


def _edit_json(edit: Any, added: list[Any]) -> dict[str, Any]:
    """A compaction or elision in the vectors' shape (docs/vectors/README.md)."""
    texts = [canonical_json(m).decode() for m in added]
    if hasattr(edit, "indices"):
        return {
            "kind": "elision",
            "after_run": edit.after_run,
            "time": edit.timestamp,
            "items": [[index, text] for index, text in zip(edit.indices, texts, strict=True)],
        }
    tokens = None
    if edit.tokens_before is not None:
        tokens = {
            "after": edit.tokens_after,
            "before": edit.tokens_before,
            "quality": edit.quality,
        }
    return {
        "kind": "compaction",
        "after_run": edit.after_run,
        "time": edit.timestamp,
        "start": edit.start,
        "end": edit.end,
        "messages": texts,
        "mode": edit.mode,
        "tokens": tokens,
    }


def _as_json(value: object) -> str:
    """JSON text that tells ints from floats (``1`` and ``1.0`` are equal in Python)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _transcript_differences(case: dict[str, Any], observed: dict[str, Any]) -> str | None:
    if "error" in case:
        want = case["error"]
        got = observed.get("error")
        if (
            isinstance(got, dict)
            and got.get("kind") == want["kind"]
            and got.get("line") == (want["line"])
        ):
            return None
        shown = "the file read" if got is None else f"{got.get('kind')!r} at line {got.get('line')}"
        return f"expected {want['kind']!r} at line {want['line']}, got {shown}"
    got = observed.get("expect")
    if not isinstance(got, dict):
        error = observed.get("error") or {}
        return f"expected the file read, got {error.get('kind')!r} at line {error.get('line')}"
    wrong = []
    for key in _TRANSCRIPT_EXPECT:
        want_json, got_json = _as_json(case["expect"].get(key)), _as_json(got.get(key))
        if want_json != got_json:
            wrong.append(f"{key}: expected {_shorten(want_json)}, got {_shorten(got_json)}")
    return "; ".join(wrong) or None


def _check_transcript_cases(path: Path, cases: list[Any], *, vectors: bool) -> None:
    """Refuse a malformed entry naming the file and its index, rather than crash on it."""
    for at, name, case in _named_cases(path, cases):
        where = f"{at} ({name!r})"
        present = [key for key in ("expect", "error") if key in case]
        if len(present) != 1:
            raise ValueError(f"{where}: expected exactly one of 'expect' and 'error'")
        outcome = case[present[0]]
        if not isinstance(outcome, dict):
            raise ValueError(f"{where}: '{present[0]}' must be an object")
        if present[0] == "error" and not (
            isinstance(outcome.get("kind"), str)
            and (type(outcome.get("line")) is int or (not vectors and outcome.get("line") is None))
        ):
            raise ValueError(f"{where}: 'error' must have a string 'kind' and an integer 'line'")
        if not vectors:
            continue
        files = [key for key in ("text", "hex") if isinstance(case.get(key), str)]
        if len(files) != 1:
            raise ValueError(f"{where}: expected exactly one of a string 'text' and 'hex'")
        if "hex" in case:
            try:
                bytes.fromhex(case["hex"])
            except ValueError:
                raise ValueError(f"{where}: 'hex' is not hexadecimal") from None
        if "max_line_bytes" in case and type(case["max_line_bytes"]) is not int:
            raise ValueError(f"{where}: 'max_line_bytes' must be an integer")


def _verify_transcripts(path: Path, cases: list[Any], results: Path | None) -> Report:
    _check_transcript_cases(path, cases, vectors=True)
    observed: dict[str, dict[str, Any]]
    if results is None:
        observed = {case["name"]: observe_transcript(case) for case in cases}
    else:
        reported = _load(results)["cases"]
        _check_transcript_cases(results, reported, vectors=False)
        observed = {r["name"]: r for r in reported}
    failures = []
    for case in cases:
        found = observed.get(case["name"])
        problem = (
            "no result for this case" if found is None else _transcript_differences(case, found)
        )
        if problem is not None:
            failures.append((case["name"], problem))
    return Report(path=str(path), kind="transcript", total=len(cases), failures=failures)
