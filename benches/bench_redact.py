"""Time ``redact()`` on 32 KiB texts (the instructions budget): real files and worst shapes.

    python benches/bench_redact.py [DIR] [--compare OLD_REDACT_PY]

DIR is a directory of real instruction files (AGENTS.md, CLAUDE.md, ...; see
benches/redaction_corpus.py): they are joined in name order and cut into 32 KiB windows,
and the median time per window is reported separately for windows holding a non-ASCII
character (most real text: one "é" or "→" is enough) and windows that are pure ASCII.
Without DIR only the synthetic texts are timed. ``--compare`` times another revision of
the module in the same process, e.g.
``--compare <(git show ce177dc:python/runcontext/providers/redact.py)``, and prints ratios.
Medians on a shared machine; never a pass/fail gate. `pytest benches/bench_redact.py
--benchmark-only` times the synthetic texts with pytest-benchmark, one group each.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import pytest
from _redact_impl import Redact, load

from _timing import benchmark_call, fmt_time, median_seconds

BUDGET = 32 * 1024


def windows(directory: Path) -> list[str]:
    text = "\n\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(directory.iterdir())
        if path.is_file()
    )
    data = text.encode("utf-8")
    cut: list[str] = []
    for start in range(0, len(data) - BUDGET + 1, BUDGET):
        cut.append(data[start : start + BUDGET].decode("utf-8", errors="ignore"))
    return cut


def synthetic() -> dict[str, str]:
    line = "Run `make test` before each commit; hashes like 0123456789abcdef0123 are fine.\n"
    ordinary = (line * 500)[:BUDGET]
    worded = (
        "Read the api_key from $OPENAI_API_KEY; never commit a password or secret. "
        "The token: see docs. password: must be 12 characters. secret_key = <set me>\n" * 300
    )[:BUDGET]
    return {
        "ordinary ASCII text": ordinary,
        "ordinary text with one 'é'": "é" + ordinary[1:],
        "dense with key words": worded,
        "dense with key words, one 'é'": "é" + worded[1:],
        "'password=' repeated": ("password=" * (BUDGET // 9))[:BUDGET],
        "'ghp_' + 16 letters repeated": ("ghp_abcdefghijklmnop " * 2000)[:BUDGET],
    }


def time_median(redact: Redact, texts: list[str]) -> float:
    def once(text: str) -> float:
        return median_seconds(lambda: redact(text), repeat=7)

    return statistics.median(once(text) for text in texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--compare", help="another redact.py to time in the same process")
    args = parser.parse_args()

    implementations = [load(None)]
    if args.compare:
        implementations.append(load(args.compare))
    rows: dict[str, list[str]] = {name: [text] for name, text in synthetic().items()}
    if args.directory:
        real = windows(args.directory)
        rows["real files, non-ASCII windows"] = [w for w in real if not w.isascii()]
        rows["real files, ASCII-only windows"] = [w for w in real if w.isascii()]
        print(
            f"{args.directory}: {len(real)} windows of 32 KiB, "
            f"{len(rows['real files, non-ASCII windows'])} with a non-ASCII character"
        )
    header = "".join(f"{revision:>14}" for revision, _ in implementations)
    print(f"\nmedian per call of redact() on 32 KiB{'':<12}{header}")
    for name, texts in rows.items():
        if not texts:
            continue
        times = [time_median(redact, texts) for _, redact in implementations]
        ratio = f"   {times[1] / times[0]:6.1f}× faster" if len(times) > 1 else ""
        print(f"  {name:<46}" + "".join(f"{fmt_time(t):>14}" for t in times) + ratio)


@pytest.mark.parametrize("shape", list(synthetic()))
def test_redact(benchmark: Any, shape: str) -> None:
    benchmark.group = f"redact() of 32 KiB: {shape}"
    text, redact = synthetic()[shape], load(None)[1]
    benchmark_call(benchmark, lambda: redact(text), implementation="redact()", anchor=False)


if __name__ == "__main__":
    main()
