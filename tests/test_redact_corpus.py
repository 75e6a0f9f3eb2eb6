"""Redaction against our own corpus: every hand-written secret caught, every near miss kept.

The corpus is tests/data/redaction/ (see redaction_data.py for its format);
``python benches/redaction_corpus.py --own`` prints the same figures as a report.
"""

from __future__ import annotations

import pytest
from redaction_data import Positive, near_misses, positives

from runcontext.providers.redact import PATTERNS, REDACTED, find_secrets, redact

POSITIVES = positives()
NEAR_MISSES = near_misses()


@pytest.mark.parametrize("case", POSITIVES, ids=lambda case: f"{case.line}-{case.kind}")
def test_each_secret_is_redacted(case: Positive) -> None:
    redacted, found = redact(case.text)
    assert redacted == case.expected
    assert found == {case.kind: len(case.secrets)}


@pytest.mark.parametrize(("line", "text"), NEAR_MISSES, ids=lambda value: str(value)[:40])
def test_each_near_miss_is_left_alone(line: int, text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found, f"near_misses.txt line {line}"


def test_the_corpus_is_as_large_as_documented() -> None:
    vendors = {case.kind for case in POSITIVES} - {"password-assignment", "url-credentials"}
    assert len(vendors) >= 25  # docs/PROVIDERS.md: at least 25 vendor formats
    assert len(NEAR_MISSES) >= 100


def test_every_kind_has_a_positive() -> None:
    assert {kind for kind, _ in PATTERNS} == {case.kind for case in POSITIVES}


def test_redacting_twice_changes_nothing() -> None:
    for case in POSITIVES:
        assert redact(case.expected) == (case.expected, {})


def test_all_positives_in_one_text_are_each_counted() -> None:
    text = "\n\n".join(case.text for case in POSITIVES)
    redacted, found = redact(text)
    assert sum(found.values()) == sum(len(case.secrets) for case in POSITIVES)
    assert redacted == "\n\n".join(case.expected for case in POSITIVES)
    assert [secret.kind for secret in find_secrets(text)] == [
        case.kind for case in POSITIVES for _ in range(len(case.secrets))
    ]
    assert redacted.count(REDACTED) == sum(found.values())
