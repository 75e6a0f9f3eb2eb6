"""runcontext: the refreshable half of an LLM prompt.

A :class:`RunContext` is built fresh per run from strings you pass. It renders stable prose
into a head message (index 0, cache-friendly) and volatile facts into a tail block after the
conversation; every context has a canonical digest (RFC 8785 JSON hashed with BLAKE3).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The core is imported eagerly: it is what almost every caller needs, and it is cheap.
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

# The rest loads on first use (PEP 562): the builder pulls in asyncio, concurrent.futures and
# subprocess, which tripled the import time of a program that only builds a RunContext. The
# imports under TYPE_CHECKING give type checkers and IDEs the real names; __getattr__ is hidden
# from them so that a misspelt name is still an error.
if TYPE_CHECKING:
    from runcontext import adapters
    from runcontext.builder import ContextBuilder
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

# name -> the module that defines it ("adapters" is a module itself).
_LAZY = {
    "adapters": "runcontext.adapters",
    "ContextBuilder": "runcontext.builder",
    "request_fingerprint": "runcontext.fingerprint",
    **dict.fromkeys(("Loop", "RunOutcome"), "runcontext.loop"),
    **dict.fromkeys(
        (
            "ClockProvider",
            "Contribution",
            "CwdProvider",
            "Diagnostic",
            "GitProvider",
            "InstructionsProvider",
            "PlatformProvider",
            "Provider",
            "default_providers",
        ),
        "runcontext.providers",
    ),
    **dict.fromkeys(
        (
            "TRANSCRIPT_VERSION",
            "ConversationMismatchError",
            "Run",
            "SeedMismatchError",
            "Session",
            "TornTail",
            "TornTranscriptError",
            "TornTranscriptWarning",
            "TranscriptDigestError",
            "TranscriptError",
            "TranscriptFormatError",
            "TranscriptVersionError",
        ),
        "runcontext.session",
    ),
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module 'runcontext' has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if name == "adapters" else getattr(module, name)
        globals()[name] = value  # later lookups skip __getattr__
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
