"""Why nothing is cached: minimum cacheable prefixes by provider and model."""

from __future__ import annotations

import pytest

from runcontext.adapters import cache_minimum, uncached_reason


@pytest.mark.parametrize(
    ("provider", "model", "minimum"),
    [
        ("openai", "gpt-6-luna", 1024),
        ("anthropic", "claude-opus-4-5-20251101", 4096),
        ("anthropic", "claude-haiku-4-5", 4096),
        ("anthropic", "claude-sonnet-4-5", 1024),
        ("anthropic", "claude-3-5-haiku-latest", 2048),
        ("anthropic", "claude-test", None),
        ("gemini", "gemini-2.5-flash", 2048),
        ("gemini", "gemini-3.1-pro-preview", 4096),
        ("gemini", "gemini-2.0-flash", None),
    ],
)
def test_cache_minimum(provider: str, model: str, minimum: int | None) -> None:
    assert cache_minimum(provider, model) == minimum


def test_uncached_reason_says_why_with_the_numbers() -> None:
    assert uncached_reason("anthropic", "claude-haiku-4-5", 3000) == (
        "nothing is cached: the stable prefix (tools, head and conversation) is 3,000 tokens, "
        "below anthropic's minimum of 4,096 tokens for 'claude-haiku-4-5', so the provider "
        "bills the whole input on every request without saying so; the cache starts working "
        "once the head and conversation reach 4,096 tokens"
    )
    assert uncached_reason("anthropic", "claude-haiku-4-5", 4096) is None
    assert uncached_reason("openai", "gpt-6-luna", 10) is not None
    assert uncached_reason("gemini", "gemini-test", 10) is None  # no number, and no floor
    assert "minimum of 512 tokens" in str(
        uncached_reason("anthropic", "claude-test", 10, minimum=512)
    )
    with pytest.raises(
        ValueError, match="provider: expected 'openai' or 'anthropic' or 'gemini', got 'x'"
    ):
        uncached_reason("x", "m", 1)
    with pytest.raises(TypeError, match="prefix_tokens: expected an int, got float"):
        uncached_reason("openai", "gpt-6", 1.5)  # type: ignore[arg-type]


def test_an_unknown_claude_model_is_checked_against_the_floor() -> None:
    """Below 512 tokens no Claude model caches: a new model's short session is explained too."""
    assert cache_minimum("anthropic", "claude-sonnet-5-5") is None
    assert uncached_reason("anthropic", "claude-sonnet-5-5", 300) == (
        "nothing is cached: the stable prefix (tools, head and conversation) is 300 tokens, "
        "below 512, the least anthropic caches for any model, so the provider bills the whole "
        "input on every request without saying so; runcontext does not know the minimum for "
        "'claude-sonnet-5-5', which may be higher (pass minimum= to check against it)"
    )
    assert uncached_reason("anthropic", "claude-sonnet-5-5", 512) is None
    assert "minimum of 2,048 tokens" in str(
        uncached_reason("anthropic", "claude-sonnet-5-5", 1000, minimum=2048)
    )
