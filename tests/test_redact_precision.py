"""Precision: on by default, redaction must not damage real instructions.

Each case is a shape seen in real AGENTS.md / CLAUDE.md / GEMINI.md /
copilot-instructions.md files where an earlier revision replaced something that was no
secret (a placeholder, a type, an environment lookup, a documented local default) or broke
the markdown around it. More are in tests/data/redaction/near_misses.txt.
"""

from __future__ import annotations

import pytest

from runcontext.providers.redact import REDACTED, redact

UNCHANGED = [
    "Build with `BETTER_AUTH_SECRET=dummy pnpm build`.",
    "Any key works locally: `ANTHROPIC_API_KEY=anything OPENAI_API_KEY=any-key-works`",
    "ANTHROPIC_API_KEY=test OPENAI_API_KEY=sk-test GEMINI_API_KEY=fake",
    "class Settings(BaseSettings):\n    api_key: str\n    password: str | None = None",
    "def connect(host: str, password=None):",
    'api_key = os.environ["X"]',
    'api_key = os.getenv("API_KEY")',
    "const apiKey = process.env.API_KEY;",
    "password: required",
    "password: string;",
    "password VARCHAR(255), password_hash varchar(255)",
    "xoxo-hugs-and-kisses-from-the-team",
    "OPENAI_API_KEY=sk-...\nSERPER_API_KEY=...",
    "DB_PASSWORD=your_password\nJWT_SECRET=your_secret_key",
    "MINIO_ACCESS_KEY=minioadmin",
    "Run it as `NEO4J_PASSWORD=testpass make test`.",
    "`?api_key=` is an opt-in compatibility fallback only.",
    "Default DB: `postgres://postgres:postgres@127.0.0.1:5432/app` (matches docker-compose)",
    "GITLAB_TOKEN=glpat-your-actual-token-here",
    "- **Password:** see the team vault",
    "Password: must be at least 12 characters.",
    "secrets: inherit\nsecretary: Alice\nmysecret=value\napi_key_env: OPENAI_API_KEY",
    "password: ${{ secrets.DB_PASSWORD }}\nsecret: {{ vault_secret }}\napi_key=%API_KEY%",
    'secret=True\npassword: null\n"password": false\nif password == other:',
]


@pytest.mark.parametrize("text", UNCHANGED)
def test_real_instruction_shapes_are_left_alone(text: str) -> None:
    redacted, found = redact(text)
    assert redacted is text and not found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the closing backtick and emphasis survive: the markdown stays well formed
        ("Set `PASSWORD=" + "Xk9#mQ2$vL` then", f"Set `PASSWORD={REDACTED}` then"),
        ("**Password:** `" + "Xk9#mQ2$vL`", f"**Password:** `{REDACTED}`"),
        ("| **Password**: " + "Adm1n!Pass |", f"| **Password**: {REDACTED} |"),
        ('"password": "' + 'Xk9#mQ2$vL"}', f'"password": "{REDACTED}"}}'),
    ],
)
def test_a_replacement_never_swallows_markdown_or_quotes(text: str, expected: str) -> None:
    assert redact(text) == (expected, {"password-assignment": 1})


@pytest.mark.parametrize(
    "value",
    ["hunter2", "Admin123!", "Tr0ub4dor", "Pa55;rest", "abc123"],
)
def test_short_real_passwords_are_credentials(value: str) -> None:
    assert redact("password=" + value) == (f"password={REDACTED}", {"password-assignment": 1})


@pytest.mark.parametrize(
    "value",
    [
        "abc12",  # shorter than 6
        "aaaa11",  # fewer than 5 distinct characters
        "postgres",  # a plain word
        "proxy-pass",  # words
        "ci-build-at-least-32-chars",  # words and short numbers
        "12345678",  # a number
        "v1.2.3",  # a version
        "sk-xxxxxxxx",  # a run of placeholder characters after a separator
        "OPENAI_API_KEY",  # a constant's name
        "settings.SECRET_KEY",  # a dotted name
        "z.string().min(8)",  # code
        "<your-key>",  # a placeholder
        "~/.ssh/id_rsa",  # a path
        "!vault",  # a YAML tag
    ],
)
def test_values_that_are_not_credentials(value: str) -> None:
    text = "password=" + value
    redacted, found = redact(text)
    assert redacted is text and not found
