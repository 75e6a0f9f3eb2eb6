"""runcontext: the refreshable half of an LLM prompt.

A :class:`RunContext` is built fresh per run from strings you pass. It renders stable prose
into a head message (index 0, cache-friendly) and volatile facts into a tail block after the
conversation; every context has a canonical digest (RFC 8785 JSON hashed with BLAKE3).
"""

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
from runcontext.errors import (
    CanonicalJSONError,
    DuplicateKeyError,
    InvalidNumberError,
    InvalidStringError,
    JSONSyntaxError,
    NestingTooDeepError,
    RunContextError,
    RunContextTypeError,
    RunContextValueError,
    UnsupportedTypeError,
)
from runcontext.section import Section

__all__ = [
    "FORMAT_VERSION",
    "MAX_DEPTH",
    "CanonicalJSONError",
    "DuplicateKeyError",
    "InvalidNumberError",
    "InvalidStringError",
    "JSONSyntaxError",
    "NestingTooDeepError",
    "RunContext",
    "RunContextError",
    "RunContextTypeError",
    "RunContextValueError",
    "Section",
    "UnsupportedTypeError",
    "__version__",
    "canonical_json",
    "canonicalize_text",
    "digest",
    "digest_bytes",
]
