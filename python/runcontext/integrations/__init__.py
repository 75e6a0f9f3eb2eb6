"""Integrations with agent frameworks: one module per framework, each an optional extra.

This package imports no framework; import the module for yours:

- :mod:`runcontext.integrations.langchain` (``pip install 'runcontext[langchain]'``):
  ``RunContextMiddleware`` for ``langchain.agents.create_agent``.
- :mod:`runcontext.integrations.pydantic_ai` (``pip install 'runcontext[pydantic-ai]'``):
  ``RunContextCapability`` for ``pydantic_ai.Agent(capabilities=[...])``.
- :mod:`runcontext.integrations.openai_agents` (``pip install 'runcontext[openai-agents]'``):
  ``RunContextFilter`` (a ``RunConfig.call_model_input_filter``) and ``RunContextSession``.

:func:`prompt_cache_key` derives a stable OpenAI ``prompt_cache_key`` from a conversation's
seed, for any of them.

The contract they share (head where the framework keeps stable instructions, the tail after
the conversation and never in its history, one context per agent turn, Anthropic breakpoints
on the conversation and never on the tail) is in docs/INTEGRATIONS.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runcontext.transcript.session import Session

__all__ = ["prompt_cache_key"]


def prompt_cache_key(seed: Session | str) -> str:
    """A stable OpenAI ``prompt_cache_key`` for one conversation, from its transcript's seed.

    ``seed`` is a :class:`runcontext.Session` (its ``seed``, the digest of the conversation's
    first message) or such a digest (``runcontext.digest(first_message)``). Every request of
    the conversation then carries the same key, which OpenAI uses to route them to the same
    cache. The key is ``"rc-"`` and the digest's first 32 hex digits (35 characters).
    """
    text = seed if isinstance(seed, str) else getattr(seed, "seed", None)
    if not isinstance(text, str) or not text.startswith("blake3:") or len(text) != 71:
        raise ValueError(
            "seed: expected a runcontext.Session or a 'blake3:…' digest such as "
            f"runcontext.digest(first_message), got {seed!r}"
        )
    return "rc-" + text[7:39]
