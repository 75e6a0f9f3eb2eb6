"""runcontext: the refreshable half of an LLM prompt.

A :class:`RunContext` is built fresh per run from strings you pass. It renders stable prose
into a head message (index 0, cache-friendly) and volatile facts into a tail block after the
conversation; every context has a canonical digest (RFC 8785 JSON hashed with BLAKE3).
"""

from runcontext import adapters
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
from runcontext.builder import ContextBuilder
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
from runcontext.fingerprint import request_fingerprint
from runcontext.loop import Loop, RunOutcome
from runcontext.providers import (
    ClockProvider,
    Contribution,
    CwdProvider,
    Diagnostic,
    GitProvider,
    InstructionsProvider,
    PlatformProvider,
    Provider,
    default_providers,
)
from runcontext.section import Section
from runcontext.session import (
    TRANSCRIPT_VERSION,
    ConversationMismatchError,
    Run,
    SeedMismatchError,
    Session,
    TornTail,
    TornTranscriptError,
    TornTranscriptWarning,
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
)

__all__ = [
    "FORMAT_VERSION",
    "MAX_DEPTH",
    "TRANSCRIPT_VERSION",
    "CanonicalJSONError",
    "ClockProvider",
    "ContextBuilder",
    "Contribution",
    "ConversationMismatchError",
    "CwdProvider",
    "Diagnostic",
    "DuplicateKeyError",
    "GitProvider",
    "InstructionsProvider",
    "InvalidNumberError",
    "InvalidStringError",
    "JSONSyntaxError",
    "Loop",
    "NestingTooDeepError",
    "PlatformProvider",
    "Provider",
    "Run",
    "RunContext",
    "RunContextError",
    "RunContextTypeError",
    "RunContextValueError",
    "RunOutcome",
    "Section",
    "SeedMismatchError",
    "Session",
    "TornTail",
    "TornTranscriptError",
    "TornTranscriptWarning",
    "TranscriptDigestError",
    "TranscriptError",
    "TranscriptFormatError",
    "TranscriptVersionError",
    "UnsupportedTypeError",
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
