"""Token counters for :class:`runcontext.Loop`: plain ``Callable[[str], int]``.

Any callable works; this module provides one for OpenAI-style tokenizers behind the optional
``tiktoken`` extra (``pip install 'runcontext[tiktoken]'``).

tiktoken downloads an encoding's BPE file the first time a process asks for it by name, and
caches it in ``TIKTOKEN_CACHE_DIR`` (by default ``data-gym-cache`` in the temporary directory).
Offline, with no cached file, asking for a name fails: ``tiktoken_counter`` then raises one
``OSError`` saying so, without tiktoken's and requests' traceback. To count offline, fill the
cache where the network is reachable and point ``TIKTOKEN_CACHE_DIR`` at it, or pass an
encoding already loaded (``tiktoken_counter(tiktoken.get_encoding("o200k_base"))`` at start-up,
or a ``tiktoken.Encoding`` you built from your own ranks): an ``Encoding`` is used as given and
nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["tiktoken_counter"]


def tiktoken_counter(encoding: str | Encoding = "o200k_base") -> Callable[[str], int]:
    """A counter that returns ``len(encoding.encode_ordinary(text))``.

    ``encoding`` is a tiktoken encoding name (loaded with ``tiktoken.get_encoding``, which may
    download its BPE file once; ``OSError`` when that fails, see the module's docstring) or a
    ``tiktoken.Encoding`` already loaded or built, used as given. Text that looks like a special
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
        try:
            loaded = tiktoken.get_encoding(encoding)
        except OSError as error:  # requests' errors are OSErrors; so is an unwritable cache
            raise OSError(_load_failure(encoding, error)) from None
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


def _load_failure(name: str, error: OSError) -> str:
    import tempfile

    detail = str(error).splitlines()[0] if str(error) else ""
    if len(detail) > 160:  # requests' messages repeat the URL and every retry's cause
        detail = detail[:157] + "..."
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "data-gym-cache"
    )
    return (
        f"tiktoken_counter: cannot load the tiktoken encoding {name!r}: tiktoken needs its BPE "
        f"file, downloaded on first use and cached in TIKTOKEN_CACHE_DIR ({cache}), and "
        f"loading it failed ({type(error).__name__}{': ' + detail if detail else ''}); "
        "fill the cache where the network is reachable and set TIKTOKEN_CACHE_DIR, or pass an "
        f"already-loaded encoding: tiktoken_counter(tiktoken.get_encoding({name!r}))"
    )
