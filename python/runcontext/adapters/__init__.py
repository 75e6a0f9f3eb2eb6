"""Request bodies for the official SDKs: where the head and the tail go for each provider.

Every adapter keeps the caller's conversation as it is: the messages in the result are the
caller's objects, in the caller's order, and the caller's lists and dicts are never mutated. The
only message that is ever rebuilt is the one a cache marker goes on (Anthropic's
``cache_control``, OpenAI's ``prompt_cache_breakpoint``), and that is a new dict. The reasons
behind each placement are in ``docs/PLACEMENT.md``.
"""

from runcontext.adapters.anthropic import ANTHROPIC_MAX_BREAKPOINTS, anthropic_messages
from runcontext.adapters.caching import cache_minimum, uncached_reason
from runcontext.adapters.gemini import gemini_contents
from runcontext.adapters.openai import (
    openai_chat,
    openai_chat_request,
    openai_prompt_caching,
    openai_responses,
)

__all__ = [
    "ANTHROPIC_MAX_BREAKPOINTS",
    "anthropic_messages",
    "cache_minimum",
    "gemini_contents",
    "openai_chat",
    "openai_chat_request",
    "openai_prompt_caching",
    "openai_responses",
    "uncached_reason",
]
