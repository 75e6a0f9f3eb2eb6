"""Secret redaction: the result's shape, and how assignment and URL values are read.

Secret-shaped samples are assembled at run time from parts, so this file itself holds no
string a secret scanner would (rightly) flag. Vendor formats are in test_redact_vendors.py,
precision on real instruction text in test_redact_precision.py, cost in test_redact_cost.py
and the corpus in test_redact_corpus.py.
"""

from __future__ import annotations

import uuid
from hashlib import sha1, sha256

import pytest

from runcontext.providers.redact import REDACTED, Secret, find_secrets, redact

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"  # 32 mixed characters to build tokens from
GH = "ghp_" + ALNUM + "abcd"
AWS = "AKIA" + ALNUM[:16].upper()


def test_counts_per_kind_and_secrets_never_in_the_result() -> None:
    text = f"one {AWS} two {GH} three {AWS}\npassword=" + "hunter2"
    redacted, found = redact(text)
    assert found == {"aws-access-key": 2, "github-token": 1, "password-assignment": 1}
    for secret in (AWS, GH, "hunter2"):
        assert secret not in redacted
    assert redacted.count(REDACTED) == 4


def test_find_secrets_gives_kinds_and_spans_in_order() -> None:
    text = f"x {GH} password=" + "hunter2 y"
    secrets = find_secrets(text)
    assert secrets == [
        Secret("github-token", 2, 2 + len(GH)),
        Secret("password-assignment", text.index("hunter2"), text.index("hunter2") + 7),
    ]


ORDINARY = [
    sha1(b"x").hexdigest(),
    sha256(b"x").hexdigest(),
    str(uuid.UUID(int=0x123456789ABCDEF0123456789ABCDEF0)),
    "Run `pip install scikit-learn` and set the token in your keychain.",
    "The password policy is documented in SECURITY.md.",
    "",
    "Ünïcödé text with a password policy and an API key rotation schedule: 90 days.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_returned_as_the_same_object(text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found


def test_large_text_without_secrets_is_unchanged() -> None:
    text = "An ordinary line of AGENTS.md with `code`, é and a 0123456789abcdef hash.\n" * 500
    redacted, found = redact(text)
    assert redacted is text and not found


# -- assignment values ------------------------------------------------------------------

VALUES = [
    # (text, expected): the whole value goes, whatever it holds, and nothing after it
    ("PASSWORD=" + "Pa55;rest", f"PASSWORD={REDACTED}"),
    ("PASSWORD=" + "Pa55&rest,more", f"PASSWORD={REDACTED}"),
    ('"password": "' + 'pa\\"ss9word", "next": 1', f'"password": "{REDACTED}", "next": 1'),
    ("password := '" + "Tr0ub4dor&3'", f"password := '{REDACTED}'"),
    ("- **Password:** " + "hunter2xyz", f"- **Password:** {REDACTED}"),
    ("**password=" + "hunter2xyz**", f"**password={REDACTED}**"),
    ("Set `DB_PASSWORD=" + "hunter2xyz` first.", f"Set `DB_PASSWORD={REDACTED}` first."),
    ("`password`: `" + "hunter2xyz`", f"`password`: `{REDACTED}`"),
    ("password=" + "hunter2xyz.", f"password={REDACTED}."),
    ("API key: " + "abc123XYZ789", f"API key: {REDACTED}"),
    ("access token = " + "q9W8e7R6t5Y4", f"access token = {REDACTED}"),
    ("?client_secret=" + "abc123XYZ&next=1", f"?client_secret={REDACTED}&next=1"),
    ("client_secret=" + "abc123XYZ&grant_type=x", f"client_secret={REDACTED}&grant_type=x"),
    ("password: |\n  " + "Xq9-Lm2-Zp7\n  more\nuser: a", f"password: |\n  {REDACTED}\nuser: a"),
    ("password: >-\n    " + "Xq9-Lm2-Zp7\n", f"password: >-\n    {REDACTED}\n"),
]


@pytest.mark.parametrize(("text", "expected"), VALUES)
def test_assignment_values(text: str, expected: str) -> None:
    assert redact(text) == (expected, {"password-assignment": 1})


def test_a_long_value_is_redacted_whole() -> None:
    value = ALNUM * 40  # longer than the first scan of a value (256 characters)
    for text, expected in (
        ("password=" + value + " next", f"password={REDACTED} next"),
        ('password="' + value + '" next', f'password="{REDACTED}" next'),
        ('password="' + value + "\nnext", f'password="{REDACTED}\nnext'),  # unterminated
    ):
        assert redact(text) == (expected, {"password-assignment": 1})


def test_a_yaml_block_that_is_not_indented_is_no_value() -> None:
    text = "password: |\nuser: Xq9-Lm2-Zp7\n"
    assert redact(text) == (text, {})


# -- URL passwords ------------------------------------------------------------------------

URLS = [
    ("postgres://app:" + "s3cret-Pw@db:5432/x", f"postgres://app:{REDACTED}@db:5432/x"),
    ("redis://:" + "s3cr3t-Pw@host:6379", f"redis://:{REDACTED}@host:6379"),  # empty user
    ("postgres://u:" + "P@ssw0rd@host/db", f"postgres://u:{REDACTED}@host/db"),
    ("amqp://u:" + "ab/Cd9+ef@mq/vhost", f"amqp://u:{REDACTED}@mq/vhost"),
]


@pytest.mark.parametrize(("text", "expected"), URLS)
def test_url_passwords(text: str, expected: str) -> None:
    assert redact(text) == (expected, {"url-credentials": 1})


@pytest.mark.parametrize(
    "text",
    [
        "postgres://postgres:postgres@127.0.0.1:5432/app",  # a documented local default
        "https://host:8080/path@v2/x",  # a port and a path
        "https://x-access-token:...@github.com/o/r",
        "redis://:${REDIS_PASSWORD}@localhost:6379",
        "git@github.com:org/repo.git and ssh://git@example.com/repo.git",
    ],
)
def test_urls_without_a_password(text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found


# -- non-ASCII text -----------------------------------------------------------------------


def test_key_words_after_non_ascii_text_are_found_at_the_right_place() -> None:
    text = "日本語の説明 → password=" + "hunter2xyz; ünd api_key: " + "Abc123xyz9 ✓ end"
    redacted, found = redact(text)
    assert redacted == f"日本語の説明 → password={REDACTED}; ünd api_key: {REDACTED} ✓ end"
    assert found == {"password-assignment": 2}


def test_a_key_word_needs_ascii_letters() -> None:
    # U+212A (Kelvin sign) lowers to an ASCII "k" with str.lower; it is no key word here.
    text = "api_\u212aey: " + "Abc123xyz9"
    assert redact(text) == (text, {})
    emoji = "🔑 secret=" + "Abc123xyz9 😀 secret=" + "Zyx987cba1"
    assert redact(emoji) == (
        f"🔑 secret={REDACTED} 😀 secret={REDACTED}",
        {"password-assignment": 2},
    )


def test_a_lone_surrogate_does_not_break_redaction() -> None:
    text = "\ud83d password=" + "hunter2xyz"
    assert redact(text) == (f"\ud83d password={REDACTED}", {"password-assignment": 1})
