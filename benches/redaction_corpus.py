"""Measure redaction on a directory of real instruction files, or on our own corpus.

    python benches/redaction_corpus.py DIR [--show] [--compare OLD_REDACT_PY]
    python benches/redaction_corpus.py --own [--compare OLD_REDACT_PY]

DIR: every file in it is redacted whole, as the instructions provider would; each file
with a replacement is listed with its count per kind (``--show`` prints every replacement
with 60 characters of context on each side, so a person can judge it), then the totals:
files, bytes, files changed, replacements and replacements per file. Whether a replacement
is a real secret or a false positive takes a reader: the script cannot know.

``--own``: recall on tests/data/redaction/positives.txt (a case counts when none of its
secrets survives; "exact" when the whole output is the expected one) and the
false-positive rate on near_misses.txt (a near miss counts when anything in it changed).

``--compare`` runs another revision of the module on the same input, e.g.
``--compare <(git show ce177dc:python/runcontext/providers/redact.py)``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from _redact_impl import Redact, load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from redaction_data import near_misses, positives


def real(directory: Path, revision: str, redact: Redact, show: bool) -> None:
    files = sorted(path for path in directory.iterdir() if path.is_file())
    total: Counter[str] = Counter()
    changed = size = 0
    print(f"== {revision} on {directory}")
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        size += len(text.encode("utf-8"))
        _, found = redact(text)
        if not found:
            continue
        changed += 1
        total += found
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
        print(f"  {path.name}: {kinds}")
        if show:
            from runcontext.providers.redact import find_secrets

            for secret in find_secrets(text):
                before = text[max(0, secret.start - 60) : secret.start]
                after = text[secret.end : secret.end + 60]
                found_text = text[secret.start : secret.end]
                print(f"      {secret.kind}: …{before!r} [{found_text!r}] {after!r}…")
    replacements = sum(total.values())
    print(
        f"  {len(files)} files, {size / 1e6:.2f} MB: {changed} changed, {replacements} "
        f"replacements ({replacements / max(len(files), 1):.3f} per file)"
    )
    for kind, count in total.most_common():
        print(f"    {count:4} {kind}")


def own(revision: str, redact: Redact) -> None:
    cases = positives()
    caught = exact = 0
    missed: list[str] = []
    for case in cases:
        redacted, found = redact(case.text)
        if all(secret not in redacted for secret in case.secrets):
            caught += 1
        else:
            missed.append(f"{case.line}:{case.kind}")
        exact += redacted == case.expected and found == {case.kind: len(case.secrets)}
    misses = near_misses()
    damaged = [line for line, text in misses if redact(text)[1]]
    kinds = len({case.kind for case in cases})
    print(f"== {revision} on tests/data/redaction ({len(cases)} positives of {kinds} kinds)")
    print(f"  recall: {caught}/{len(cases)} = {caught / len(cases):.1%} ({exact} exact)")
    print(
        f"  false positives: {len(damaged)}/{len(misses)} near misses = "
        f"{len(damaged) / len(misses):.1%}"
    )
    if missed:
        print(f"  missed (line:kind): {' '.join(missed)}")
    if damaged:
        print(f"  near misses changed (line): {' '.join(map(str, damaged))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--own", action="store_true", help="our corpus in tests/data/redaction")
    parser.add_argument("--show", action="store_true", help="print every replacement in context")
    parser.add_argument("--compare", help="another redact.py to run on the same input")
    args = parser.parse_args()
    if not args.own and args.directory is None:
        parser.error("give a DIR of instruction files, or --own")
    implementations = [load(None)]
    if args.compare:
        implementations.append(load(args.compare))
    for index, (revision, redact) in enumerate(implementations):
        if args.own:
            own(revision, redact)
        if args.directory is not None:
            real(args.directory, revision, redact, args.show and index == 0)


if __name__ == "__main__":
    main()
