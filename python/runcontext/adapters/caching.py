"""Why nothing is cached: each provider's minimum cacheable prefix, by model."""

from __future__ import annotations

import re

__all__ = [
    "ANTHROPIC_CACHE_FLOOR",
    "CACHE_PROVIDERS",
    "CacheWarning",
    "cache_minimum",
    "provider_of",
    "uncached_reason",
]

CACHE_PROVIDERS = ("openai", "anthropic", "gemini")

# OpenAI caches prompts of 1,024 tokens and more, on every model that caches.
OPENAI_CACHE_MINIMUM = 1024
# Anthropic's minimum cacheable prompt length by model family (Anthropic's prompt-caching
# documentation); below it a cache_control marker is silently ignored. First match wins.
_ANTHROPIC_MINIMUMS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"claude-opus-4-[5-9]"), 4096),
    (re.compile(r"claude-haiku-4-5"), 4096),
    (re.compile(r"claude-(?:sonnet-4|opus-4|3-7-sonnet)(?![0-9])"), 1024),
    (re.compile(r"claude-3-(?:5-)?haiku"), 2048),
)
# The smallest minimum among Anthropic's models (512 to 4,096 tokens by model): no Claude model
# caches a shorter prefix, so it is what uncached_reason checks a model the table lacks against.
ANTHROPIC_CACHE_FLOOR = 512
# Gemini's implicit-caching minimum input (Google's context-caching documentation):
# 2,048 tokens on Gemini 2.5, 4,096 on Gemini 3 and later.
_GEMINI_NAME = re.compile(r"gemini-(\d+)(?:\.(\d+))?(?!\d)")


# A model name's provider, by the families' own prefixes (after a gateway's "provider/" and a
# fine-tune's "ft:"): OpenAI's gpt-, chatgpt- and o-series, Anthropic's claude-, Google's gemini-.
_PROVIDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:gpt-|chatgpt-|o[1-9](?:-|$))"), "openai"),
    (re.compile(r"claude-"), "anthropic"),
    (re.compile(r"gemini-"), "gemini"),
)


class CacheWarning(UserWarning):
    """Requests the provider will not cache as they could be: a default adapter that sends no
    cache breakpoint to a model whose cache reads only at breakpoints (docs/PLACEMENT.md)."""


def provider_of(model: str) -> str | None:
    """The provider whose cache rules apply to ``model`` (``"openai"``, ``"anthropic"`` or
    ``"gemini"``), by its family's name; ``None`` for a name of no known family (a
    deployment alias, another provider's model)."""
    if not isinstance(model, str):
        raise TypeError(f"model: expected a string, got {type(model).__name__}")
    name = model.rsplit("/", 1)[-1].lower()
    name = name.removeprefix("ft:")
    for pattern, provider in _PROVIDERS:
        if pattern.match(name):
            return provider
    return None


def cache_minimum(provider: str, model: str) -> int | None:
    """The fewest tokens a prefix needs before ``provider`` caches it for ``model``.

    ``None`` when the model is not one runcontext knows the number for (pass ``minimum=`` to
    :func:`uncached_reason` then). ``provider`` is ``"openai"``, ``"anthropic"`` or
    ``"gemini"``.
    """
    if not isinstance(provider, str):
        raise TypeError(f"provider: expected a string, got {type(provider).__name__}")
    if provider not in CACHE_PROVIDERS:
        expected = " or ".join(repr(name) for name in CACHE_PROVIDERS)
        raise ValueError(f"provider: expected {expected}, got {provider!r}")
    if not isinstance(model, str):
        raise TypeError(f"model: expected a string, got {type(model).__name__}")
    name = model.rsplit("/", 1)[-1].lower()
    if provider == "openai":
        return OPENAI_CACHE_MINIMUM
    if provider == "anthropic":
        for pattern, tokens in _ANTHROPIC_MINIMUMS:
            if pattern.match(name):
                return tokens
        return None
    found = _GEMINI_NAME.match(name)
    if found is None:
        return None
    version = (int(found.group(1)), int(found.group(2) or 0))
    if version < (2, 5):
        return None  # implicit caching starts with Gemini 2.5
    return 2048 if version < (3, 0) else 4096


def uncached_reason(
    provider: str, model: str, prefix_tokens: int, *, minimum: int | None = None
) -> str | None:
    """Why ``provider`` will cache nothing of a request whose stable prefix (tools, head and
    conversation: everything before the tail) is ``prefix_tokens`` long, or ``None`` when the
    prefix is long enough or the minimum for ``model`` is unknown and ``minimum`` not given.
    An Anthropic model whose minimum is unknown is checked against
    :data:`ANTHROPIC_CACHE_FLOOR`, below which no Claude model caches.

    Providers skip caching below their minimum without an error and bill the whole input; this
    says so in words, with the numbers.
    """
    if type(prefix_tokens) is not int:
        raise TypeError(f"prefix_tokens: expected an int, got {type(prefix_tokens).__name__}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens: expected a count >= 0, got {prefix_tokens}")
    if minimum is not None and (type(minimum) is not int or minimum < 1):
        raise ValueError(f"minimum: expected an int >= 1 or None, got {minimum!r}")
    floor = cache_minimum(provider, model) if minimum is None else minimum
    if minimum is not None:
        cache_minimum(provider, model)  # still checks provider and model
    if floor is None and provider == "anthropic":
        # A model the table does not know (a new family): below the floor no Claude model
        # caches, so that much is certain; above it the model's own minimum decides.
        if prefix_tokens >= ANTHROPIC_CACHE_FLOOR:
            return None
        return (
            f"nothing is cached: the stable prefix (tools, head and conversation) is "
            f"{prefix_tokens:,} tokens, below {ANTHROPIC_CACHE_FLOOR:,}, the least anthropic "
            f"caches for any model, so the provider bills the whole input on every request "
            f"without saying so; runcontext does not know the minimum for {model!r}, which may "
            f"be higher (pass minimum= to check against it)"
        )
    if floor is None or prefix_tokens >= floor:
        return None
    return (
        f"nothing is cached: the stable prefix (tools, head and conversation) is "
        f"{prefix_tokens:,} tokens, below {provider}'s minimum of {floor:,} tokens for "
        f"{model!r}, so the provider bills the whole input on every request without saying "
        f"so; the cache starts working once the head and conversation reach {floor:,} tokens"
    )
