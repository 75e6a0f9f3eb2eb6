"""Canonical JSON and digests against the anchors, in one process (issue 2's benchmark).

Run by hand: `python benches/bench_canonical.py` (needs the `dev` extra: rfc8785,
canonicaljson, orjson, blake3). Prints medians per call and ratios; never a pass/fail gate.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

import blake3
import canonicaljson
import orjson
import rfc8785

import runcontext

from _timing import median_seconds, print_table


def small_dict() -> dict[str, Any]:
    return {"role": "user", "name": "ada", "lang": "en", "mood": "curious"}


def transcript(target_bytes: int = 50_000) -> dict[str, Any]:
    """A chat transcript with nested tool calls, unicode, ints and floats (~50 KB)."""
    rng = random.Random(7)
    words = ["context", "prompt", "cache", "naïve", "über", "日本語", "emoji 😀", "line\nbreak"]
    messages: list[dict[str, Any]] = []
    while len(json.dumps({"messages": messages}, ensure_ascii=False)) < target_bytes:
        i = len(messages)
        messages.append({"role": "user", "content": " ".join(rng.choices(words, k=20))})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i:04d}",
                        "type": "function",
                        "function": {
                            "name": "search",
                            "arguments": {
                                "query": rng.choice(words),
                                "limit": rng.randint(1, 50),
                                "threshold": rng.random(),
                                "filters": {"lang": ["en", "fr"]},
                            },
                        },
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{i:04d}",
                "content": {
                    "hits": [rng.random() * 1e6 for _ in range(5)],
                    "took_ms": rng.randint(1, 999),
                },
            }
        )
    return {"model": "gpt-x", "temperature": 0.2, "messages": messages}


def floats() -> list[float]:
    rng = random.Random(11)
    return [rng.uniform(-1e6, 1e6) for _ in range(10_000)]


def encoders() -> dict[str, Callable[[Any], bytes]]:
    return {
        "runcontext.canonical_json": runcontext.canonical_json,
        "orjson.dumps(OPT_SORT_KEYS)": lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS),
        "json.dumps(sort_keys, compact)": lambda v: json.dumps(
            v, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode(),
        "canonicaljson.encode_canonical_json": canonicaljson.encode_canonical_json,
        "rfc8785.dumps": rfc8785.dumps,
    }


def main() -> None:
    payloads = {
        "(a) 4-key dict of short strings": small_dict(),
        "(b) ~50 KB chat transcript": transcript(),
        "(c) 10,000 floats": floats(),
    }
    print(
        f"runcontext {runcontext.__version__}; size of (b): "
        f"{len(runcontext.canonical_json(payloads['(b) ~50 KB chat transcript']))} bytes"
    )
    for title, value in payloads.items():
        rows = []
        for name, encode in encoders().items():
            try:
                encode(value)
            except Exception as error:  # an anchor that cannot encode this payload
                print(f"  ({name} skipped on {title}: {type(error).__name__}: {error})")
                continue
            rows.append((name, median_seconds(lambda e=encode, v=value: e(v))))
        print_table(title, rows, baseline="orjson.dumps(OPT_SORT_KEYS)")

    for size, label in ((8 * 1024, "8 KB"), (1 << 20, "1 MB")):
        data = random.Random(3).randbytes(size)
        rows = [
            ("runcontext.digest_bytes", median_seconds(lambda d=data: runcontext.digest_bytes(d))),
            (
                "blake3.blake3().hexdigest()",
                median_seconds(lambda d=data: blake3.blake3(d).hexdigest()),
            ),
            (
                "hashlib.sha256().hexdigest()",
                median_seconds(lambda d=data: hashlib.sha256(d).hexdigest()),
            ),
        ]
        print_table(f"digest of {label}", rows, baseline="blake3.blake3().hexdigest()")


if __name__ == "__main__":
    main()
