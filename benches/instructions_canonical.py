"""Instructions per call of canonical_json and orjson on every payload of bench_canonical.

This machine is shared and its timings swing by half; instruction counts do not. Run by hand
(needs valgrind): `python benches/instructions_canonical.py [letters]`, e.g. `... b c` for
payloads (b) and (c) only. Each figure is the difference between a run with CALLS calls and
one with none, divided by the number of calls, so building the payload and importing cancel out.
Both runs use one hash seed (PYTHONHASHSEED=0): with a random one, the dict lookups of the
import differ between the two runs by tens of thousands of instructions a call.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS = 20
# Payload (a) takes a few thousand instructions: more calls, so the difference is not noise.
CALLS_SMALL = 5000
PROGRAM = """
import sys
sys.path.insert(0, {benches!r})
from bench_canonical import PAYLOADS
import orjson, runcontext
which, payload, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
make = next(m for title, m in PAYLOADS.items() if title.startswith(f"({{payload}})"))
value = make()
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
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    assert match, f"no totals in {out}"
    return int(match.group(1))


def main() -> None:
    benches = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, benches)
    from bench_canonical import PAYLOADS

    wanted = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(PROGRAM.format(benches=benches))
        for title in PAYLOADS:
            payload = title[1]
            if wanted and payload not in wanted:
                continue
            calls = CALLS_SMALL if payload == "a" else CALLS
            counts = {}
            for which in ("runcontext", "orjson"):
                base = instructions(script, which, payload, 0, Path(tmp) / "zero.out")
                full = instructions(script, which, payload, calls, Path(tmp) / "full.out")
                counts[which] = (full - base) // calls
            ratio = counts["runcontext"] / counts["orjson"]
            print(
                f"{title:<42} runcontext {counts['runcontext']:>12,}  "
                f"orjson {counts['orjson']:>12,}  {ratio:5.2f}×",
                flush=True,
            )


if __name__ == "__main__":
    main()
