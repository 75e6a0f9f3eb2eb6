"""runcontext: the refreshable half of an LLM prompt.

A :class:`RunContext` is built fresh per run from strings you pass. It renders stable prose
into a head message (index 0, cache-friendly) and volatile facts into a tail block after the
conversation; every context has a canonical digest (RFC 8785 JSON hashed with BLAKE3).

The top level holds what a program types; the rest lives in subpackages named for what they
do: :mod:`runcontext.adapters` (request bodies per provider API), :mod:`runcontext.providers`
(collecting context: the builder, the providers, redaction), :mod:`runcontext.transcript`
(sessions and their errors), :mod:`runcontext.loop` (the run loop), :mod:`runcontext.cli`
(the command line) and :mod:`runcontext.errors`. Every exception is listed once, in
docs/ERRORS.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from runcontext._core import (
    FORMAT_VERSION,
    MAX_DEPTH,
    RunContext,
    __version__,
    canonical_json,
    canonicalize_text,
    digest,
    digest_bytes,
)
from runcontext._splice import splice
from runcontext.errors import CanonicalJSONError, RunContextError

if TYPE_CHECKING:
    from runcontext import adapters
    from runcontext.fingerprint import request_fingerprint
    from runcontext.loop import Loop
    from runcontext.providers import default_providers
    from runcontext.providers.builder import ContextBuilder
    from runcontext.transcript import Session, TranscriptError

# The names below load on first use (PEP 562): a program that only builds a RunContext does
# not pay for the builder, its providers and workers, the transcript's stores or the adapters.
# name -> the module that defines it ("adapters" is a module itself).
_LAZY = {
    "adapters": "runcontext.adapters",
    "ContextBuilder": "runcontext.providers.builder",
    "default_providers": "runcontext.providers",
    "request_fingerprint": "runcontext.fingerprint",
    "Loop": "runcontext.loop",
    "Session": "runcontext.transcript",
    "TranscriptError": "runcontext.transcript",
}


if not TYPE_CHECKING:  # type checkers see the imports above: a misspelt name stays an error

    def __getattr__(name: str) -> object:
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module = importlib.import_module(_LAZY[name])
        value = module if name == "adapters" else getattr(module, name)
        globals()[name] = value  # later lookups skip __getattr__
        return value


def __dir__() -> list[str]:
    """The public names (``__all__``) and the module's dunders, nothing private."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})


__all__ = [
    "FORMAT_VERSION",
    "MAX_DEPTH",
    "CanonicalJSONError",
    "ContextBuilder",
    "Loop",
    "RunContext",
    "RunContextError",
    "Session",
    "TranscriptError",
    "__version__",
    "adapters",
    "canonical_json",
    "canonicalize_text",
    "default_providers",
    "digest",
    "digest_bytes",
    "request_fingerprint",
    "splice",
]
