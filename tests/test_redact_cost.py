"""Redaction stays linear in the text's length whatever the text's shape.

Two arguments, neither a timing:

- structural: every unbounded repetition in every pattern is possessive, so the regex
  engine never gives back what a repetition took and never retries it from another split;
  bounded repetitions cost at most their bound at each place they are tried;
- measured as work done: on adversarial shapes (long runs of key words, operators, quotes,
  prefixes, separators) the number of Python and C-level calls redaction makes grows in
  proportion to the text, checked by doubling the text. A rescan from many starting points
  would show as calls growing with the square of the length.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from runcontext.providers import redact as module
from runcontext.providers.redact import redact


def compiled(name: str, value: object) -> Iterator[tuple[str, re.Pattern[str]]]:
    """Every pattern in a module attribute, however nested in tuples and dicts."""
    if isinstance(value, re.Pattern):
        yield name, value
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            yield from compiled(f"{name}[{index}]", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from compiled(f"{name}[{key!r}]", item)


PATTERNS = dict(item for name, value in vars(module).items() for item in compiled(name, value))


def unbounded_greedy(parsed: Any) -> Iterator[str]:
    """Every repetition in a parsed pattern that is unbounded and can backtrack."""
    for op, argument in parsed:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, item = argument
            if high == sre_constants.MAXREPEAT:
                yield f"{op} {{{low},}}"
            yield from unbounded_greedy(item)
        elif op == sre_constants.POSSESSIVE_REPEAT:
            yield from unbounded_greedy(argument[2])
        elif op == sre_constants.SUBPATTERN:
            yield from unbounded_greedy(argument[3])
        elif op == sre_constants.BRANCH:
            for branch in argument[1]:
                yield from unbounded_greedy(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            yield from unbounded_greedy(argument[1])
        elif op == sre_constants.ATOMIC_GROUP:
            yield from unbounded_greedy(argument)


def test_the_patterns_are_found() -> None:
    assert len(PATTERNS) >= 60 and "_KEY_SCANS[0]" in PATTERNS and "_PEM" in PATTERNS
    assert "_SEPARATED_KINDS[0][1]" in PATTERNS and "_WORD_BEFORE[107]" in PATTERNS


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_no_pattern_has_an_unbounded_repetition_that_backtracks(name: str) -> None:
    pattern = PATTERNS[name]
    assert list(unbounded_greedy(sre_parse.parse(pattern.pattern, pattern.flags))) == []


def test_the_structural_check_sees_a_backtracking_repetition() -> None:
    assert list(unbounded_greedy(sre_parse.parse(r"a(?:b+)*c"))) != []
    assert list(unbounded_greedy(sre_parse.parse(r"a(?:b++)*+c|d{1,9}"))) == []


SHAPES = [
    "password",
    "password=",
    "password=$",
    'password="',
    "password='",
    "password=`",
    "password: |\n",
    "password: word ",
    "secret_key_token",
    "dbPassword",
    "api key: ",
    "?client_secret=a&",
    "-----BEGIN ",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B ",
    "\n[runcontext: ",
    "sk-ant-",
    "sk-",
    "ghp_",
    "_abcdefghijklmnopq",
    "a_bcdefghijklmnopqrs-",
    "://",
    "://a:",
    "://a:b@",
    "a@",
    "AKIA",
    "AccountKey=",
    "https://hooks.slack.com/services/",
    "`",
    "**Password:** ",
    "é",
]


def calls(text: str) -> int:
    count = 0

    def profile(frame: object, event: str, argument: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        redact(text)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
def test_work_grows_in_proportion_to_the_text(shape: str) -> None:
    small = calls(shape * (2048 // len(shape) + 1))
    large = calls(shape * (8192 // len(shape) + 1))
    assert large <= 4.4 * small + 100, (small, large)  # four times the text: four times the work


@pytest.mark.parametrize("shape", ["password=", "a@", "://a:b@"], ids=repr)
def test_a_long_run_of_one_shape_is_read_as_such(shape: str) -> None:
    text = shape * 3000
    redacted, found = redact(text)
    assert redacted is text and not found


# A wall-clock guard on top, not a timing assertion: linear redaction of these takes
# milliseconds; a quadratic one would take minutes and trip the 60 s timeout.
GUARD = """
from runcontext.providers.redact import redact
N = 64 * 1024
for shape in SHAPES:
    redact(shape * (N // len(shape)))
redact("password=" + "a" * N)
redact('password="' + "aB3" * (N // 3))
print("done")
"""


def test_64_kib_of_each_shape_finishes() -> None:
    code = f"SHAPES = {SHAPES!r}\n" + textwrap.dedent(GUARD)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "done"


def test_a_scan_skipped_for_a_text_without_its_literal_starts_with_that_literal() -> None:
    # find_secrets skips a scan when the literal it starts with is absent from the text.
    def literal_prefix(pattern: str | bytes) -> str:
        parsed = sre_parse.parse(pattern if isinstance(pattern, str) else pattern.decode())
        prefix = ""
        for op, argument in parsed:
            if op != sre_constants.LITERAL:
                break
            prefix += chr(argument)
        return prefix

    assert literal_prefix(module._PEM.pattern).startswith("-----BEGIN")
    assert literal_prefix(module._URL.pattern).startswith("://")
    for word, scan in zip(module._KEY_WORDS, module._KEY_SCANS_BYTES, strict=True):
        assert word and literal_prefix(scan.pattern).startswith(word.decode())
