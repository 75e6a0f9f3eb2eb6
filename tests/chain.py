"""The record chain of docs/TRANSCRIPT.md, computed independently (the ``blake3`` package), so
tests can write lines as a writer would — or rewrite a whole file as a deliberate forger would,
to reach the checks behind the chain."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import blake3

from runcontext import canonical_json


def chained(records: Sequence[dict[str, Any]]) -> list[bytes]:
    """Each record as its line, chain included, newline included."""
    lines, previous = [], b""
    for record in records:
        body = canonical_json({k: v for k, v in record.items() if k != "chain"})
        chain = "blake3:" + blake3.blake3(previous + body).hexdigest()
        lines.append(canonical_json({**record, "chain": chain}) + b"\n")
        previous = chain.encode()
    return lines


def rechain(path: Path) -> None:
    """Recompute every line's chain in place; lines that are not JSON objects stay as they are
    (the reader refuses them before the chain matters)."""
    out, previous = [], b""
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        if (
            not isinstance(record, dict)
            or not raw.endswith(b"\n")
            or _canonical(record) != raw[:-1]
        ):
            out.append(raw)  # left for the reader to refuse, before the chain matters
            continue
        record.pop("chain", None)
        body = canonical_json(record)
        chain = "blake3:" + blake3.blake3(previous + body).hexdigest()
        out.append(canonical_json({**record, "chain": chain}) + b"\n")
        previous = chain.encode()
    path.write_bytes(b"".join(out))


def _canonical(record: dict[str, Any]) -> bytes | None:
    try:
        return canonical_json(record)
    except ValueError:
        return None


def relinked(lines: Sequence[bytes]) -> list[bytes]:
    """Unchained record lines as a writer chains them."""
    return chained([json.loads(raw) for raw in lines])


def appended(path: Path, record: dict[str, Any]) -> bytes:
    """The line a writer would append to ``path`` for ``record``, chained to its last line."""
    previous = json.loads(path.read_bytes().splitlines()[-1])["chain"].encode()
    body = canonical_json(record)
    chain = "blake3:" + blake3.blake3(previous + body).hexdigest()
    return canonical_json({**record, "chain": chain}) + b"\n"
