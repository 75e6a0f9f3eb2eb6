"""What a provider billed for a request, read from its response: :class:`Usage`.

``Usage.input`` is the whole prompt as the provider counted it, cached or not, so that it is
comparable with a request count whatever the provider: OpenAI's ``prompt_tokens`` and
``input_tokens`` already include cached tokens; Anthropic's ``input_tokens`` does not, and
the reader adds ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Usage"]


@dataclass(frozen=True)
class Usage:
    """Billed tokens of one request.

    ``input`` is every prompt token (cached reads and cache writes included); ``output`` the
    reply's tokens, or ``None`` when the response did not say; ``cache_read`` and
    ``cache_write`` the parts of ``input`` read from or written to the provider's prompt
    cache (0 when the provider reports none).
    """

    input: int
    output: int | None = None
    cache_read: int = 0
    cache_write: int = 0

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "output":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"Usage.{name}: expected a token count (int >= 0), got {value!r}")
        if self.cache_read + self.cache_write > self.input:
            raise ValueError(
                f"Usage: cache_read ({self.cache_read}) + cache_write ({self.cache_write}) "
                f"exceed input ({self.input}); input counts every prompt token, cached or not"
            )
