"""Transcripts: what each run was told, recorded beside the conversation, and the run loop.

:class:`Session` is an append-only transcript (a JSONL file; docs/TRANSCRIPT.md is the format);
:class:`Loop` splices each run's context into the request, calls your backend and records the
run. The errors are listed, with the rest of the package's, in docs/ERRORS.md.
"""

from __future__ import annotations

import sys

from runcontext.transcript.changes import changed_since
from runcontext.transcript.errors import (
    ConversationMismatchError,
    RunNotRecordedError,
    SeedMismatchError,
    TornTranscriptError,
    TornTranscriptWarning,
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptReplacedError,
    TranscriptVersionError,
    UnchainedTranscriptWarning,
)
from runcontext.transcript.session import TRANSCRIPT_VERSION, Run, Session, TornTail

TYPE_CHECKING = False  # type checkers treat any name TYPE_CHECKING as true

# The run loop, the async session, the in-memory check and the Run and TornTail dataclasses
# load on first use (PEP 562): the loop imports the budget package, and dataclasses imports
# inspect, together most of the half of `runcontext log`'s imports it no longer makes (issue
# 13), and listing a transcript's runs needs none of them; nor the TranscriptStore protocol,
# which imports typing. Type checkers see the imports.
if TYPE_CHECKING:
    from runcontext.transcript.async_session import AsyncSession
    from runcontext.transcript.loop import Loop, RunOutcome
    from runcontext.transcript.memory import Verified, verify_bytes
    from runcontext.transcript.store import TranscriptStore
else:
    # name -> the module that exports it
    _LAZY = {
        "AsyncSession": "runcontext.transcript.async_session",
        "Loop": "runcontext.transcript.loop",
        "RunOutcome": "runcontext.transcript.loop",
        "TranscriptStore": "runcontext.transcript.store",
        "Verified": "runcontext.transcript.memory",
        "verify_bytes": "runcontext.transcript.memory",
    }

    def __getattr__(name: str) -> object:
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        __import__(module_name)  # the builtin: importlib would add the warnings module
        value = getattr(sys.modules[module_name], name)
        globals()[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "TRANSCRIPT_VERSION",
    "AsyncSession",
    "ConversationMismatchError",
    "Loop",
    "Run",
    "RunNotRecordedError",
    "RunOutcome",
    "SeedMismatchError",
    "Session",
    "TornTail",
    "TornTranscriptError",
    "TornTranscriptWarning",
    "TranscriptDigestError",
    "TranscriptError",
    "TranscriptFormatError",
    "TranscriptReplacedError",
    "TranscriptStore",
    "TranscriptVersionError",
    "UnchainedTranscriptWarning",
    "Verified",
    "changed_since",
    "verify_bytes",
]
