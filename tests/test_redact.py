"""Secret redaction: each pattern, and ordinary text left alone.

Secret-shaped samples are assembled at run time from parts, so this file itself holds no
string a secret scanner would (rightly) flag.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from hashlib import sha1, sha256

import pytest

from runcontext.providers.redact import PATTERNS, REDACTED, redact

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"  # 32 mixed characters to build tokens from
# The line the instructions provider ends a cut file with.
MARKER = (
    "[runcontext: AGENTS.md cut here; 40 of 900 bytes shown, the instructions budget is 300 bytes]"
)

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
    (
        "private-key",
        "k:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n" + MARKER,
        f"k:\n{REDACTED}\n{MARKER}",
    ),
    ("password-assignment", "password=" + "hunter2", f"password={REDACTED}"),
    ("password-assignment", 'password := "' + 'hunter2"', f"password := {REDACTED}"),
    ("password-assignment", "'password' => '" + "hunter2'", f"'password' => {REDACTED}"),
    ("password-assignment", "$password = '" + "hunter2';", f"$password = {REDACTED};"),
    ("password-assignment", "passwd: " + "hunter2", f"passwd: {REDACTED}"),
    ("password-assignment", "dbPassword: " + "Tr0ub4dor", f"dbPassword: {REDACTED}"),
    ("password-assignment", "SECRET_KEY=" + "django-insecure-x1", f"SECRET_KEY={REDACTED}"),
    ("password-assignment", "x-api-key: " + "abc123", f"x-api-key: {REDACTED}"),
    (
        "password-assignment",
        "password: " + "hunter2 # the old one",
        f"password: {REDACTED} # the old one",
    ),
    (
        "password-assignment",
        "PASSWORD=" + "hunter2 ./deploy.sh",
        f"PASSWORD={REDACTED} ./deploy.sh",
    ),
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


# -- what is not a secret ---------------------------------------------------------------

NOT_SECRETS = [
    "Password: must be at least 12 characters.",  # prose after a colon
    "The secret: nobody reads the docs.",
    "secretary: Alice",  # the key word must be a whole word ...
    "mysecret=value",
    "secrets: inherit",
    "api_key_env: OPENAI_API_KEY",  # ... followed only by _key/_token
    "private_key_path: ~/.ssh/id_ed25519",
    "passphrase=<your passphrase here>",  # placeholders and references
    "Set password=$DB_PASSWORD in .env",
    "password: ${{ secrets.DB_PASSWORD }}",
    "secret: {{ vault_secret }}",
    "api_key=%API_KEY%",
    "secret=True",  # YAML and JSON scalars
    "password: null",
    '"password": false',
    "if password == other:",  # a comparison, not an assignment
    "Use the `sk-learn-compatible-estimators-api` package",  # no digit: not an OpenAI key
    "| secret | yes |",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_things_that_look_like_assignments_but_are_not(text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found


def test_an_openai_key_needs_a_digit() -> None:
    assert redact("sk-" + "abcdefghijklmnopqrstuvwx") == ("sk-abcdefghijklmnopqrstuvwx", {})
    assert redact("sk-" + "abcdefghijklmnopqrstuvw1")[1] == {"openai-key": 1}


def test_a_long_value_is_redacted_whole() -> None:
    value = "x1" * 600  # longer than the first scan of a value (256 characters)
    for text, expected in (
        ("password=" + value + " next", f"password={REDACTED} next"),
        ('password="' + value + '" next', f"password={REDACTED} next"),
        ('password="' + value + "\nnext", f"password={REDACTED}\nnext"),  # unterminated quote
    ):
        redacted, found = redact(text)
        assert redacted == expected and found == {"password-assignment": 1}


def test_a_cut_private_key_keeps_the_marker_line() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n" + MARKER
    redacted, found = redact(text)
    assert redacted == f"{REDACTED}\n{MARKER}" and found == {"private-key": 1}


# -- cost -------------------------------------------------------------------------------

# 64 KiB inputs built to make a backtracking pattern rescan the text from every key word or
# prefix (the 8 000-fold "password" took 8 s before the patterns were bounded).
PATHOLOGICAL = """
N = 64 * 1024
cases = [
    "password" * (N // 8),
    "password=$" * (N // 10),
    'password="' * (N // 10),
    "password: word " * (N // 15),
    "secret_key_token" * (N // 16),
    "dbPassword" * (N // 10),
    "-----BEGIN " * (N // 11),
    "-----BEGIN PRIVATE KEY-----" + "A" * N,
    "-----BEGIN PRIVATE KEY-----" + "\\n[runcontext: " * (N // 14),
    "sk-ant-" + "a" * N,
    "sk-" * (N // 3),
    "://" + "a:" * (N // 2),
    "ghp_" + "a" * N,
    'password="' + "a" * N,
    "password" + " " * N + "=x",
]
for text in cases:
    redact(text)
print("done", len(cases))
"""


def test_pathological_inputs_do_not_blow_up() -> None:
    # A wall-clock guard, not a timing assertion: linear redaction of these takes
    # milliseconds; a quadratic one takes minutes and trips the 20 s timeout.
    code = "from runcontext.providers.redact import redact\n" + textwrap.dedent(PATHOLOGICAL)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=20, check=True
    )
    assert result.stdout.strip() == "done 15"
