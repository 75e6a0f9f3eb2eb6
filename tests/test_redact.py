"""Secret redaction: each pattern, and ordinary text left alone.

Secret-shaped samples are assembled at run time from parts, so this file itself holds no
string a secret scanner would (rightly) flag.
"""

from __future__ import annotations

import uuid
from hashlib import sha1, sha256

import pytest

from runcontext.providers.redact import PATTERNS, REDACTED, redact

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"  # 32 mixed characters to build tokens from

SECRETS: list[tuple[str, str, str]] = [
    # (kind, text, expected text after redaction)
    ("aws-access-key", "AKIA" + "IOSFODNN7EXAMPLE", REDACTED),
    ("aws-access-key", "id=ASIA" + "Y34FZKBOKMUTVV7A,", "id=[redacted],"),
    ("github-token", "ghp_" + ALNUM + "abcd", REDACTED),
    ("github-token", "token gho_" + ALNUM + "WXYZ done", f"token {REDACTED} done"),
    ("github-token", "github_pat_" + "11ABCDEFG0" + ALNUM[:22] + "_" + ALNUM, REDACTED),
    ("gitlab-token", "glpat-" + ALNUM[:20], REDACTED),
    ("gitlab-token", "CI uses glrt-" + ALNUM, f"CI uses {REDACTED}"),
    ("openai-key", "sk-" + ALNUM + ALNUM[:16], REDACTED),
    ("openai-key", "OPENAI=sk-proj-" + ALNUM + "-" + ALNUM, f"OPENAI={REDACTED}"),
    ("anthropic-key", "sk-ant-api03-" + ALNUM * 3 + "-AA", REDACTED),
    ("anthropic-key", "use sk-ant-admin01-" + ALNUM + " here", f"use {REDACTED} here"),
    ("slack-token", "xoxb-" + "1234567890-1234567890123-" + ALNUM[:24], REDACTED),
    ("slack-token", "xapp-1-" + "A0123456789-" + ALNUM, REDACTED),
    (
        "slack-webhook",
        "hook: https://hooks.slack.com/services/" + "T0000/B0000/" + ALNUM[:24],
        f"hook: {REDACTED}",
    ),
    (
        "private-key",
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAKCA==\n-----END RSA PRIVATE KEY-----\n"
        "after",
        f"before\n{REDACTED}\nafter",
    ),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
        REDACTED,
    ),
    # Cut by a byte budget before its END line: the rest of the text goes too.
    ("private-key", "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\nmore", f"key:\n{REDACTED}"),
    (
        "url-credentials",
        "postgres://app:" + "s3cret@db:5432/x",
        f"postgres://app:{REDACTED}@db:5432/x",
    ),
    ("password-assignment", "password=" + "hunter2", f"password={REDACTED}"),
    ("password-assignment", "DB_PASSWORD = " + "'two words'", f"DB_PASSWORD = {REDACTED}"),
    ("password-assignment", 'secret: "' + 'abc def"', f"secret: {REDACTED}"),
    ("password-assignment", "client_secret=" + "xyz&next=1", f"client_secret={REDACTED}&next=1"),
    ("password-assignment", '"api_key": "' + 'v4lue"', f'"api_key": {REDACTED}'),
    (
        "password-assignment",
        "AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG",
        f"AWS_SECRET_ACCESS_KEY={REDACTED}",
    ),
]


@pytest.mark.parametrize(("kind", "text", "expected"), SECRETS)
def test_each_pattern_redacts(kind: str, text: str, expected: str) -> None:
    redacted, found = redact(text)
    assert redacted == expected
    assert found == {kind: 1}


def test_every_pattern_has_a_sample() -> None:
    assert {kind for kind, _ in PATTERNS} == {kind for kind, _, _ in SECRETS}


def test_counts_per_kind_and_secrets_never_in_the_result() -> None:
    aws = "AKIA" + "IOSFODNN7EXAMPLE"
    gh = "ghp_" + ALNUM + "abcd"
    text = f"one {aws} two {gh} three {aws}\npassword=" + "hunter2"
    redacted, found = redact(text)
    assert found == {"aws-access-key": 2, "github-token": 1, "password-assignment": 1}
    for secret in (aws, gh, "hunter2"):
        assert secret not in redacted
    assert redacted.count(REDACTED) == 4


ORDINARY = [
    sha1(b"x").hexdigest(),
    sha256(b"x").hexdigest(),
    "blake3:" + sha256(b"y").hexdigest(),
    str(uuid.UUID(int=0x123456789ABCDEF0123456789ABCDEF0)),
    str(uuid.UUID(int=0x123456789ABCDEF0123456789ABCDEF0)).upper(),
    "commit 1a2b3c4d5e6f and branch feature/sk-learn-upgrade",
    "task-abcdefghijklmnopqrstuvwxyz0123456789 risk-assessment-procedure-document",
    "Run `pip install scikit-learn` and set the token in your keychain.",
    "The password policy is documented in SECURITY.md.",
    "AKIA is the prefix of AWS access key ids.",
    "git@github.com:org/repo.git and https://github.com/org/repo",
    "ssh://git@example.com/repo.git",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found


def test_already_redacted_text_is_stable() -> None:
    once, _ = redact("password=" + "hunter2 and " + "ghp_" + ALNUM + "abcd")
    twice, found = redact(once)
    assert twice == once and not found


def test_large_text_without_secrets_is_unchanged() -> None:
    text = ("An ordinary line of AGENTS.md with `code` and a 0123456789abcdef hash.\n") * 500
    redacted, found = redact(text)
    assert redacted is text and not found


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ('api_key: "sk-' + ALNUM + '"', 'api_key: "[redacted]"', "openai-key"),
        (
            "https://u:ghp_" + ALNUM + "abcd@github.com",
            "https://u:[redacted]@github.com",
            "github-token",
        ),
        ("PASSWORD=AKIA" + "IOSFODNN7EXAMPLE", "PASSWORD=[redacted]", "aws-access-key"),
    ],
)
def test_a_secret_matched_by_two_patterns_is_counted_once(
    text: str, expected: str, kind: str
) -> None:
    assert redact(text) == (expected, {kind: 1})


def test_a_token_inside_a_longer_word_is_left_alone() -> None:
    for text in ("xAKIA" + "IOSFODNN7EXAMPLE", "my_ghp_" + ALNUM + "abcd", "a-sk-" + ALNUM):
        redacted, found = redact(text)
        assert redacted is text and not found
