"""Token counters for :class:`runcontext.Loop`: plain ``Callable[[str], int]``.

Any callable works; this module provides one for OpenAI-style tokenizers behind the optional
``tiktoken`` extra (``pip install 'runcontext[tiktoken]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["tiktoken_counter"]


def tiktoken_counter(encoding: str | Encoding = "o200k_base") -> Callable[[str], int]:
    """A counter that returns ``len(encoding.encode_ordinary(text))``.

    ``encoding`` is a tiktoken encoding name (loaded with ``tiktoken.get_encoding``, which may
    download its BPE file once) or an ``Encoding`` you built. Text that looks like a special
    token (``<|endoftext|>``) is counted as ordinary text, as a context would be sent.
    """
    try:
        import tiktoken
    except ImportError as error:
        raise ImportError(
            "tiktoken_counter needs the optional tiktoken package: "
            "pip install 'runcontext[tiktoken]'"
        ) from error
    if isinstance(encoding, str):
        loaded = tiktoken.get_encoding(encoding)
    elif isinstance(encoding, tiktoken.Encoding):
        loaded = encoding
    else:
        raise TypeError(
            f"encoding: expected an encoding name or a tiktoken.Encoding, "
            f"got {type(encoding).__name__}"
        )

    def count(text: str) -> int:
        return len(loaded.encode_ordinary(text))

    count.__qualname__ = count.__name__ = f"tiktoken_counter[{loaded.name}]"
    return count
