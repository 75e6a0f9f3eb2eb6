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

import sys as _sys

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
from runcontext.errors import CanonicalJSONError, RunContextError

# Not `typing.TYPE_CHECKING`: importing typing (and the re, functools and collections it pulls
# in) would be most of `import runcontext`'s time. Type checkers treat any name TYPE_CHECKING
# as true.
TYPE_CHECKING = False

# The rest loads on first use (PEP 562): the builder pulls in asyncio, concurrent.futures and
# subprocess, which tripled the import time of a program that only builds a RunContext. The
# imports under TYPE_CHECKING give type checkers and IDEs the real names; __getattr__ is hidden
# from them so that a misspelt name is still an error.
if TYPE_CHECKING:
    from runcontext import adapters
    from runcontext.fingerprint import request_fingerprint
    from runcontext.loop import Loop
    from runcontext.providers import default_providers
    from runcontext.providers.builder import ContextBuilder
    from runcontext.transcript import Session, TranscriptError

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

# Names the top level exported before 0.2 -> where they live now; asking for one says so.
_MOVED = {
    "Section": "runcontext.section",
    **dict.fromkeys(
        (
            "DuplicateKeyError",
            "InvalidNumberError",
            "InvalidStringError",
            "JSONSyntaxError",
            "NestingTooDeepError",
            "RunContextTypeError",
            "RunContextValueError",
            "UnsupportedTypeError",
        ),
        "runcontext.errors",
    ),
    "RunOutcome": "runcontext.loop",
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
        ),
        "runcontext.providers",
    ),
    **dict.fromkeys(
        (
            "TRANSCRIPT_VERSION",
            "ConversationMismatchError",
            "Run",
            "SeedMismatchError",
            "TornTail",
            "TornTranscriptError",
            "TornTranscriptWarning",
            "TranscriptDigestError",
            "TranscriptFormatError",
            "TranscriptVersionError",
        ),
        "runcontext.transcript",
    ),
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module_name = _LAZY.get(name)
        if module_name is None:
            moved = _MOVED.get(name)
            hint = f"; it moved to {moved}: from {moved} import {name}" if moved else ""
            raise AttributeError(f"module 'runcontext' has no attribute {name!r}{hint}")
        __import__(module_name)  # the builtin: importlib would add the warnings module
        module = _sys.modules[module_name]
        value = module if name == "adapters" else getattr(module, name)
        globals()[name] = value  # later lookups skip __getattr__
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
