"""Transcript lines of format version 2 built straight from docs/TRANSCRIPT.md (the chain, the
record members), for testing stores without a Session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runcontext import canonical_json, digest, digest_bytes

TIME = "2026-12-01T19:00:00Z"


def chain_lines(records: Sequence[dict[str, Any]], previous: bytes = b"") -> list[bytes]:
    """Each record as its canonical line with ``chain`` (continuing after the line
    ``previous``, or from the start)."""
    chain = json.loads(previous)["chain"] if previous else ""
    lines = []
    for record in records:
        body = canonical_json({k: v for k, v in record.items() if k != "chain"})
        chain = digest_bytes(chain.encode() + body)
        lines.append(canonical_json({**record, "chain": chain}))
    return lines


def header(seed_message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "header",
        "format": "runcontext-transcript",
        "version": 2,
        "context_format": 1,
        "seed": digest(seed_message),
        "time": TIME,
    }


def message(index: int, content: str, role: str = "user") -> dict[str, Any]:
    return {"type": "message", "index": index, "message": {"role": role, "content": content}}


def section(name: str, text: str) -> dict[str, Any]:
    return {
        "type": "section",
        "name": name,
        "text": text,
        "digest": digest({"name": name, "text": text}),
    }


def run_context(run: int, sections: Sequence[dict[str, Any]], messages: int) -> dict[str, Any]:
    return {
        "type": "run-context",
        "run": run,
        "digest": digest({"run": run}),  # a store does not check it; a Session does
        "time": TIME,
        "messages": messages,
        "sections": [
            {"position": "head", "name": s["name"], "digest": s["digest"]} for s in sections
        ],
        "facts": [["date", "2026-12-01"]],
    }


def new_session(text: str = "Keep the build green.\n") -> list[bytes]:
    """A header, the seed message, one section, one run and a reply."""
    seed = {"role": "system", "content": "You are careful."}
    agents = section("AGENTS.md", text)
    return chain_lines(
        [
            header(seed),
            {"type": "message", "index": 0, "message": seed},
            agents,
            run_context(1, [agents], 1),
            message(1, "Done.", role="assistant"),
        ]
    )


def verify_chain(lines: Sequence[bytes]) -> None:
    """Assert every line's ``chain`` follows from the line before and its own body."""
    chain = ""
    for number, line in enumerate(lines, 1):
        record = json.loads(line)
        body = canonical_json({k: v for k, v in record.items() if k != "chain"})
        chain = digest_bytes(chain.encode() + body)
        assert record["chain"] == chain, f"line {number}: chain does not verify"
        assert canonical_json(record) == line, f"line {number}: not canonical"
