"""Instructions per call of canonical_json and orjson on payloads (b) and (c), by callgrind.

This machine is shared and its timings swing by half; instruction counts do not. Run by hand
(needs valgrind): `python benches/instructions_canonical.py`. Each figure is the difference
between a run with 50 calls and one with none, divided by 50.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS = 50
PROGRAM = """
import sys
sys.path.insert(0, {benches!r})
from bench_canonical import floats, transcript
import orjson, runcontext
which, payload, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
value = transcript() if payload == "b" else floats()
if which == "runcontext":
    call = lambda: runcontext.canonical_json(value)
else:
    call = lambda: orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
call()
for _ in range(calls):
    call()
"""


def instructions(script: Path, which: str, payload: str, calls: int, out: Path) -> int:
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(script),
            which,
            payload,
            str(calls),
        ],
        check=True,
        capture_output=True,
    )
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    assert match, f"no totals in {out}"
    return int(match.group(1))


def main() -> None:
    benches = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(PROGRAM.format(benches=benches))
        for payload, title in (("b", "(b) ~50 KB chat transcript"), ("c", "(c) 10,000 floats")):
            counts = {}
            for which in ("runcontext", "orjson"):
                base = instructions(script, which, payload, 0, Path(tmp) / "zero.out")
                full = instructions(script, which, payload, CALLS, Path(tmp) / "full.out")
                counts[which] = (full - base) // CALLS
            ratio = counts["runcontext"] / counts["orjson"]
            print(
                f"{title}: runcontext {counts['runcontext']:,} instructions per call, "
                f"orjson {counts['orjson']:,}: {ratio:.2f}×"
            )


if __name__ == "__main__":
    main()
