"""Instructions per call of ``redact()`` on 32 KiB texts, by callgrind: a noise-free figure.

    python benches/instructions_redact.py [DIR] [--compare OLD_REDACT_PY]

This machine is shared and its timings swing by half; instruction counts do not. Each
figure is the difference between a run that redacts every text once and one that only
loads them, divided by the number of texts. DIR and ``--compare`` are as in
bench_redact.py, except that ``--compare`` must name a file (each run reads it again), e.g.
``git show ce177dc:python/runcontext/providers/redact.py > /tmp/redact2.py``. Needs
valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = """
import sys
sys.path.insert(0, {benches!r})
from pathlib import Path
from _redact_impl import load
from bench_redact import synthetic, windows
compare, directory, which, run = sys.argv[1] or None, sys.argv[2], sys.argv[3], sys.argv[4] == "1"
_, redact = load(compare)
if which == "real":
    texts = [w for w in windows(Path(directory)) if not w.isascii()]
else:
    texts = [synthetic()[which]]
redact(texts[0])  # warm: compile the patterns before counting
if run:
    for text in texts:
        redact(text)
print(len(texts))
"""


def instructions(script: Path, arguments: list[str], out: Path) -> tuple[int, int]:
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    result = subprocess.run(
        [*valgrind, sys.executable, str(script), *arguments],
        check=True,
        capture_output=True,
        text=True,
    )
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    assert match, f"no totals in {out}"
    return int(match.group(1)), int(result.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--compare", help="another redact.py to count in the same way")
    args = parser.parse_args()
    benches = os.path.dirname(os.path.abspath(__file__))
    cases = ["ordinary ASCII text", "ordinary text with one 'é'", "dense with key words"]
    if args.directory:
        cases.append("real")
    implementations = [("this revision", "")]
    if args.compare:
        implementations.append(("--compare", os.path.abspath(args.compare)))
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(PROGRAM.format(benches=benches))
        for case in cases:
            counts = []
            for _, compare in implementations:
                arguments = [compare, str(args.directory or ""), case]
                base, _ = instructions(script, [*arguments, "0"], Path(tmp) / "zero.out")
                full, texts = instructions(script, [*arguments, "1"], Path(tmp) / "full.out")
                counts.append((full - base) // texts)
            label = "real files, non-ASCII 32 KiB windows" if case == "real" else case
            names = [name for name, _ in implementations]
            figures = "   ".join(
                f"{name} {count:,}" for name, count in zip(names, counts, strict=True)
            )
            ratio = f"   ({counts[1] / counts[0]:.1f}× fewer)" if len(counts) > 1 else ""
            print(f"{label}: instructions per call: {figures}{ratio}")


if __name__ == "__main__":
    main()
