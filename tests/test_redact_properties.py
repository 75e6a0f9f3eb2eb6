"""Properties of redaction on text assembled from the pieces secrets and near misses are
made of: it never raises, never leaves a found secret in the result, and is idempotent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runcontext.providers.redact import REDACTED, find_secrets, redact

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"
PIECES = [
    "password", "Password", "PASSWORD", "api_key", "API key", "secret", "access_token",
    "auth-token", "private_key", "secret_key_base", "=", ":", ": ", ":=", "=>", "==", '"', "'",
    "`", "**", "|", "\n", "  ", " ", "?", "&", ";", ",", "@", "://", "https://", "redis://:",
    "u:", "/", ".", "-", "_", "$", "{{", "<", "...", "é", "→", "ghp_", "sk-", "sk_live_",
    "AKIA", "AIza", "hf_", "glpat-", "xoxb-1234567-", "SG.", "AccountKey=", "SK",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "\\n", "hunter2", "Xk9#mQ2$vL",
    ALNUM, ALNUM[:16], "0123456789abcdef", "your", "str", "os.getenv(", ")", "[", "]",
]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@given(texts)
def test_redaction_is_total_idempotent_and_removes_what_it_finds(text: str) -> None:
    redacted, found = redact(text)
    assert redact(redacted) == (redacted, {})
    assert redacted.count(REDACTED) - text.count(REDACTED) == sum(found.values())
    for secret in find_secrets(text):
        assert 0 <= secret.start < secret.end <= len(text)


@given(texts, texts)
def test_a_secret_next_to_any_text_is_still_removed(before: str, after: str) -> None:
    token = "ghp_" + ALNUM + "abcd"
    redacted, _ = redact(f"{before} {token} {after}")
    assert token not in redacted
