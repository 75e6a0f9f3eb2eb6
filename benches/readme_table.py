"""Print the README's Performance rows from a pytest-benchmark JSON file.

    pytest benches --benchmark-only --benchmark-json=benches/out/run.json
    python benches/readme_table.py benches/out/run.json [--group PREFIX ...] [--anchor TEXT ...]

One row per group and anchor: runcontext's median, the anchor's median and their ratio
(runcontext / anchor; below 0.5 as "N× faster"). The runcontext row and the anchors
of a group are those `_timing.benchmark_call` labelled in ``extra_info``; a group without an
anchor prints runcontext's median alone. Medians of pytest-benchmark's rounds, which are
calibrated per benchmark and not interleaved: on a noisy machine compare ratios from
`python benches/bench_X.py` (interleaved) or instruction counts (benches/instructions_*.py)
as well. Rows that come from other scripts (instruction counts, fresh processes, RSS) are
not in the JSON and are kept by hand, each naming its command.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def fmt(seconds: float) -> str:
    """Up to three significant digits in s, ms or µs: ``0.25 µs``, ``84.1 µs``, ``1.04 ms``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            value = seconds / scale
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f} {unit}"
    raise AssertionError("unreachable")


def ratio(value: float) -> str:
    """``1.66×``; below 0.5, how many times faster: ``0.01×`` would hide 97× from 130×."""
    if value < 0.5:
        return f"{1 / value:.0f}× faster"
    return f"{value:.2f}×" if value < 10 else f"{value:.0f}×"


def rows(
    benchmarks: list[dict[str, Any]], prefixes: list[str], anchors_wanted: Sequence[str] = ()
) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for bench in benchmarks:
        group = bench.get("group") or bench["name"]
        if not prefixes or group.startswith(tuple(prefixes)):
            groups.setdefault(group, []).append(bench)
    lines = ["| benchmark | runcontext | anchor | ratio |", "|---|---|---|---|"]
    for group, members in groups.items():

        def label(bench: dict[str, Any]) -> str:
            return str(bench["extra_info"].get("implementation", bench["name"]))

        ours = [b for b in members if b["extra_info"].get("role") != "anchor"]
        anchors = [
            b
            for b in members
            if b["extra_info"].get("role") == "anchor"
            and (not anchors_wanted or any(w in label(b) for w in anchors_wanted))
        ]
        for mine in ours:
            median = mine["stats"]["median"]
            name = f"{group}" if len(ours) == 1 else f"{group}, {label(mine)}"
            if not anchors:
                lines.append(f"| {name} | {fmt(median)} | | |")
            for anchor in anchors:
                theirs = anchor["stats"]["median"]
                lines.append(
                    f"| {name} | {fmt(median)} | {label(anchor)} {fmt(theirs)} "
                    f"| {ratio(median / theirs)} |"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="a file written by --benchmark-json")
    parser.add_argument(
        "--group", action="append", default=[], metavar="PREFIX", help="only these groups"
    )
    parser.add_argument(
        "--anchor",
        action="append",
        default=[],
        metavar="TEXT",
        help="only the anchors whose name holds TEXT (e.g. orjson)",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.json.read_text(encoding="utf-8"))
    print(f"<!-- {provenance(data, args.json.name)} -->")
    print("\n".join(rows(data["benchmarks"], args.group, args.anchor)))
    return 0


def provenance(data: dict[str, Any], name: str) -> str:
    """Where a pytest-benchmark JSON file's figures come from: commit, date, Python, CPUs."""
    commit = data.get("commit_info", {})
    machine = data.get("machine_info", {})
    return (
        f"from {name}: commit {str(commit.get('id', '?'))[:12]}"
        f"{' (dirty)' if commit.get('dirty') else ''}, {data.get('datetime', '?')}, "
        f"{machine.get('python_implementation', '')} {machine.get('python_version', '')}, "
        f"{machine.get('cpu', {}).get('count', '?')} CPUs"
    )


def test_rows_pair_runcontext_with_each_anchor() -> None:
    def bench(group: str, implementation: str, role: str, median: float) -> dict[str, Any]:
        info = {"implementation": implementation, "role": role}
        return {
            "group": group,
            "name": implementation,
            "extra_info": info,
            "stats": {"median": median},
        }

    table = rows(
        [
            bench("canonical JSON: (a)", "runcontext", "runcontext", 2.5e-7),
            bench("canonical JSON: (a)", "orjson", "anchor", 2e-7),
            bench("canonical JSON: (a)", "rfc8785", "anchor", 6.7e-6),
            bench("open", "Session.open", "runcontext", 0.0304),
        ],
        [],
    )
    assert table[2:] == [
        "| canonical JSON: (a) | 0.25 µs | orjson 0.20 µs | 1.25× |",
        "| canonical JSON: (a) | 0.25 µs | rfc8785 6.70 µs | 27× faster |",
        "| open | 30.4 ms | | |",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
