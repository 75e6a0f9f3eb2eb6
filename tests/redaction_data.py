"""Our own redaction corpus (tests/data/redaction/): secrets to catch, text to leave alone.

``positives.txt`` holds one case a line, ``kind | text``, where «…» marks what must become
``[redacted]``; ``near_misses.txt`` holds text that must come back unchanged. In both,
``\\n`` is a newline and ``{{class:N}}`` expands to N characters drawn from a class with a
seed fixed by the line, so the files hold no key-shaped string for a secret scanner to
flag and every run sees the same text.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path
from typing import NamedTuple

DATA = Path(__file__).parent / "data" / "redaction"

CLASSES = {
    "alnum": string.ascii_letters + string.digits,
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "lower": string.ascii_lowercase + string.digits,
    "upper": string.ascii_uppercase + string.digits,
    "letters": string.ascii_letters,
    "digits": string.digits,
    "b64": string.ascii_letters + string.digits + "+/",
    "url": string.ascii_letters + string.digits + "_-",
    "age": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}
_FIELD = re.compile(r"\{\{(\w+):(\d+)\}\}")


class Positive(NamedTuple):
    line: int
    kind: str
    text: str  # what redaction reads
    expected: str  # what it must return
    secrets: tuple[str, ...]  # the secrets of `kind` in it, none of which may survive


def _expand(template: str, seed: str) -> str:
    rng = random.Random(seed)

    def draw(match: re.Match[str]) -> str:
        alphabet = CLASSES[match.group(1)]
        return "".join(rng.choice(alphabet) for _ in range(int(match.group(2))))

    return _FIELD.sub(draw, template.replace("\\n", "\n"))


def _lines(name: str) -> list[tuple[int, str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [(n, line) for n, line in enumerate(lines, 1) if line and not line.startswith("#")]


def positives() -> list[Positive]:
    cases = []
    for number, line in _lines("positives.txt"):
        kind, _, template = line.partition(" | ")
        text = _expand(template, f"positives:{number}")
        expected = re.sub("«[^»]*»", "[redacted]", text, flags=re.DOTALL)
        secrets = tuple(re.findall("«([^»]*)»", text, flags=re.DOTALL))
        plain = text.replace("«", "").replace("»", "")
        cases.append(Positive(number, kind, plain, expected, secrets))
    return cases


def near_misses() -> list[tuple[int, str]]:
    return [(n, _expand(line, f"near:{n}")) for n, line in _lines("near_misses.txt")]
