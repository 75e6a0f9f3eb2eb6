"""Loop's cache diagnostics: a warning when its default adapter would send no breakpoint to a
model that reads its cache only at breakpoints, and each outcome's reason why nothing of the
request is cached (a prefix below the model's minimum)."""

from __future__ import annotations

import functools
import warnings

import pytest

from runcontext import Loop, RunContext
from runcontext.adapters import openai_chat
from runcontext.adapters.caching import CacheWarning, provider_of

REPLY = {"role": "assistant", "content": "ok"}
CONTEXT = RunContext(head_sections=[("identity", "You are careful.")], facts=[("date", "today")])


def backend(request: object) -> dict[str, str]:
    return REPLY


def test_the_default_adapter_on_a_breakpoint_model_warns() -> None:
    with pytest.warns(CacheWarning, match=r"runcontext\.splice sends no prompt_cache_breakpoint"):
        Loop(backend, model="gpt-5.6")


@pytest.mark.parametrize("model", ["gpt-4.1", "claude-sonnet-5-5", "my-deployment", None])
def test_other_models_and_adapters_do_not_warn(model: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Loop(backend, model=model)
        Loop(backend, model="gpt-6-luna", adapter=functools.partial(openai_chat, model="gpt-6"))


def test_an_outcome_says_why_a_short_prefix_is_not_cached() -> None:
    loop = Loop(backend, counter=lambda text: len(text.split()), model="claude-haiku-4-5")
    outcome = loop.run([{"role": "user", "content": "Is T-1 open?"}], context=CONTEXT)
    assert outcome.uncached is not None
    assert "below anthropic's minimum of 4,096 tokens for 'claude-haiku-4-5'" in outcome.uncached


def test_a_long_prefix_an_unknown_model_or_no_counter_says_nothing() -> None:
    long = [{"role": "user", "content": "word " * 5000}]
    loop = Loop(backend, counter=lambda text: len(text.split()), model="claude-haiku-4-5")
    assert loop.run(long, context=CONTEXT).uncached is None
    unknown = Loop(backend, counter=lambda text: len(text.split()), model="my-deployment")
    assert unknown.run([{"role": "user", "content": "hi"}], context=CONTEXT).uncached is None
    uncounted = Loop(backend, model="claude-haiku-4-5")
    assert uncounted.run([{"role": "user", "content": "hi"}], context=CONTEXT).uncached is None


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("gpt-6-luna", "openai"),
        ("openai/gpt-5.6-mini", "openai"),
        ("ft:gpt-4.1:acme::x", "openai"),
        ("o3", "openai"),
        ("o4-mini", "openai"),
        ("claude-sonnet-5-5", "anthropic"),
        ("anthropic/claude-haiku-4-5", "anthropic"),
        ("gemini-2.5-flash", "gemini"),
        ("my-deployment", None),
        ("ollama-gpt", None),
        ("omni", None),
    ],
)
def test_provider_of_reads_the_family(model: str, provider: str | None) -> None:
    assert provider_of(model) == provider
