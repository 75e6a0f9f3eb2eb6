"""Canonical JSON and digests against the anchors, in one process.

Run by hand: `python benches/bench_canonical.py` (needs the `bench` extra: rfc8785,
canonicaljson, orjson, blake3). Prints medians per call and ratios; never a pass/fail gate.
`pytest benches/bench_canonical.py --benchmark-only` times the same payloads and encoders
with pytest-benchmark, one group per payload (`test_canonical`, `test_digest` below).

orjson (with `OPT_SORT_KEYS`; not canonical) is the speed anchor. Its samples and
runcontext's alternate (`interleaved_medians`), so a neighbour's load on this shared machine
falls on both alike. The last table times the *first* call in fresh processes: a large output
must not cost more there than on a warm heap (no allocator cliff).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import blake3
import canonicaljson
import orjson
import pytest
import rfc8785

import runcontext

from _timing import benchmark_call, fmt_time, interleaved_medians, median_seconds, print_table


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


def floats_exponents() -> list[float]:
    """Every decade from 1e-20 to 1e20, both signs: all three ECMAScript layouts."""
    rng = random.Random(12)
    return [
        rng.choice((-1, 1)) * rng.uniform(1, 10) * 10.0 ** rng.randint(-20, 20)
        for _ in range(10_000)
    ]


def small_ints() -> list[int]:
    rng = random.Random(13)
    return [rng.randint(-1000, 100_000) for _ in range(10_000)]


def escaped_string() -> str:
    """1 MB of text in which 16 % of the characters need an escape."""
    rng = random.Random(14)
    plain = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789.,"
    special = '"\\\n\t\x01'
    return "".join(
        rng.choice(special) if rng.random() < 0.16 else rng.choice(plain) for _ in range(1 << 20)
    )


def many_keys() -> dict[str, int]:
    rng = random.Random(15)
    keys = [f"key_{i:05d}" for i in range(10_000)]
    rng.shuffle(keys)
    return {k: i for i, k in enumerate(keys)}


def many_keys_few_emoji() -> dict[str, int]:
    """(g) with one key in a thousand ending in an emoji (a character above U+FFFF)."""
    rng = random.Random(15)
    keys = [f"key_{i:05d}" + ("\U0001f600" if i % 1000 == 999 else "") for i in range(10_000)]
    rng.shuffle(keys)
    return {k: i for i, k in enumerate(keys)}


def cjk_emoji() -> list[str]:
    """Messages of CJK and emoji text (no escapes): the UTF-8 path of non-ASCII strings."""
    rng = random.Random(16)
    pieces = ["日本語の文章", "中文文本", "한국어", "😀🎉🚀", "emoji ✨", "naïve café", " "]
    return ["".join(rng.choices(pieces, k=60)) for _ in range(200)]


PAYLOADS: dict[str, Callable[[], Any]] = {
    "(a) 4-key dict of short strings": small_dict,
    "(b) ~50 KB chat transcript": transcript,
    "(c) 10,000 floats in (-1e6, 1e6)": floats,
    "(d) 10,000 floats, exponents 1e-20..1e20": floats_exponents,
    "(e) 10,000 small ints": small_ints,
    "(f) 1 MB string, 16 % escaped": escaped_string,
    "(g) dict of 10,000 keys": many_keys,
    "(h) CJK/emoji text": cjk_emoji,
    "(i) dict of 10,000 keys, a few emoji": many_keys_few_emoji,
}


def orjson_sorted(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def json_sorted(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# What each payload is encoded with: runcontext first, then the anchors (orjson, the speed
# anchor, is not canonical; canonicaljson is not RFC 8785 for floats; rfc8785 is).
ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "runcontext.canonical_json": runcontext.canonical_json,
    "orjson.dumps(OPT_SORT_KEYS)": orjson_sorted,
    "json.dumps(sort_keys, compact)": json_sorted,
    "canonicaljson.encode_canonical_json": canonicaljson.encode_canonical_json,
    "rfc8785.dumps": rfc8785.dumps,
}
DIGESTS: dict[str, Callable[[bytes], str]] = {
    "runcontext.digest_bytes": runcontext.digest_bytes,
    "blake3.blake3().hexdigest()": lambda data: blake3.blake3(data).hexdigest(),
    "hashlib.sha256().hexdigest()": lambda data: hashlib.sha256(data).hexdigest(),
}
DIGEST_SIZES = {"8 KB": 8 * 1024, "1 MB": 1 << 20}


FRESH = """
import sys, time
sys.path.insert(0, {benches!r})
import orjson, runcontext
from bench_canonical import escaped_string
value = escaped_string() if sys.argv[2] == "escaped" else "abcdefghij" * ((1 << 20) // 10)
call = {{
    "runcontext": runcontext.canonical_json,
    "orjson": lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS),
    "str.encode": lambda v: v.encode(),
}}[sys.argv[1]]
start = time.perf_counter()
call(value)
first = time.perf_counter() - start
def median_of_50(keep):
    times, out = [], None
    for _ in range(50):
        start = time.perf_counter()
        if keep:
            out = call(value)  # the previous output is alive while the next is written
        else:
            call(value)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]
fresh = median_of_50(False)
kept = median_of_50(True)
for _ in range(2000):
    call(value)
print(first, fresh, kept, median_of_50(False))
"""


def fresh_process(payload: str, title: str, processes: int = 7) -> None:
    """The first call in fresh processes; the median of the next 50 in each ("fresh"); of 50
    that each keep the previous output alive ("kept": `out = canonical_json(v)` in a loop);
    and of 50 after 2,000 more calls ("warm": the heap as a long-lived process has it).

    ``str.encode`` (one allocation and one copy of the same megabyte) is the floor: on these
    virtual machines a bare copy into freshly used memory also runs slower for its first few
    hundred calls with no page fault (44 -> 38 µs, 48 -> 29 µs in two processes, 2026-12-02),
    so a fresh/warm ratio at that floor's is the machine's, not the allocator's.
    """
    benches = os.path.dirname(os.path.abspath(__file__))
    program = FRESH.format(benches=benches)
    results: dict[str, list[list[float]]] = {"runcontext": [], "orjson": [], "str.encode": []}
    for _ in range(processes):
        for which in results:
            out = subprocess.run(
                [sys.executable, "-c", program, which, payload],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            results[which].append([float(x) for x in out])
    print(f"\n{title} in fresh processes: medians of the first call, then of 50 calls")
    for which, runs in results.items():
        first, fresh, kept, warm = (statistics.median(r[i] for r in runs) for i in range(4))
        print(
            f"  {which:<12} first {fmt_time(first)}  fresh {fmt_time(fresh)}"
            f"  kept {fmt_time(kept)}  warm {fmt_time(warm)}   fresh/warm {fresh / warm:4.2f}×"
        )


def main() -> None:
    print(f"runcontext {runcontext.__version__}, orjson {orjson.__version__}")
    print("\ncanonical_json against orjson.dumps(OPT_SORT_KEYS), interleaved")
    for title, make in PAYLOADS.items():
        value = make()
        medians = interleaved_medians(
            {
                "runcontext": lambda v=value: runcontext.canonical_json(v),
                "orjson": lambda v=value: orjson_sorted(v),
            }
        )
        ratio = medians["runcontext"] / medians["orjson"]
        print(
            f"  {title:<42} runcontext {fmt_time(medians['runcontext'])}"
            f"  orjson {fmt_time(medians['orjson'])}  {ratio:5.2f}×"
        )
    fresh_process("escaped", "(f) 1 MB string, 16 % escaped")
    fresh_process("plain", "1 MB string, nothing escaped")

    if "--quick" in sys.argv:
        return
    transcript_value = transcript()
    rows = []
    for name, encode in ENCODERS.items():
        rows.append((name, median_seconds(lambda e=encode: e(transcript_value))))
    print_table("(b) against every encoder", rows, baseline="orjson.dumps(OPT_SORT_KEYS)")

    for label, size in DIGEST_SIZES.items():
        data = random.Random(3).randbytes(size)
        rows = [
            (name, median_seconds(lambda f=hash_hex, d=data: f(d)))
            for name, hash_hex in DIGESTS.items()
        ]
        print_table(f"digest of {label}", rows, baseline="blake3.blake3().hexdigest()")


# -- pytest-benchmark: one group per payload, runcontext and every anchor side by side ---


@functools.cache
def payload(title: str) -> Any:
    return PAYLOADS[title]()


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("title", PAYLOADS)
def test_canonical(benchmark: Any, title: str, encoder: str) -> None:
    benchmark.group = f"canonical JSON: {title}"
    value, encode = payload(title), ENCODERS[encoder]
    benchmark_call(
        benchmark,
        lambda: encode(value),
        implementation=encoder,
        anchor=encoder != "runcontext.canonical_json",
    )


@pytest.mark.parametrize("digest", DIGESTS)
@pytest.mark.parametrize("size", DIGEST_SIZES)
def test_digest(benchmark: Any, size: str, digest: str) -> None:
    benchmark.group = f"digest: {size} of random bytes"
    data, hash_hex = random.Random(3).randbytes(DIGEST_SIZES[size]), DIGESTS[digest]
    benchmark_call(
        benchmark,
        lambda: hash_hex(data),
        implementation=digest,
        anchor=digest != "runcontext.digest_bytes",
    )


if __name__ == "__main__":
    main()
