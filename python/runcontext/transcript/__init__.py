"""Transcripts: what each run was told, recorded beside the conversation, and the run loop.

:class:`Session` is an append-only transcript (a JSONL file; docs/TRANSCRIPT.md is the format);
:class:`Loop` splices each run's context into the request, calls your backend and records the
run. The errors are listed, with the rest of the package's, in docs/ERRORS.md.
"""

from __future__ import annotations

from runcontext.transcript.async_session import AsyncSession
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
    TranscriptVersionError,
    UnchainedTranscriptWarning,
)
from runcontext.transcript.loop import Loop, RunOutcome
from runcontext.transcript.memory import Verified, verify_bytes
from runcontext.transcript.session import TRANSCRIPT_VERSION, Run, Session, TornTail
from runcontext.transcript.store import TranscriptStore

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
    "TranscriptStore",
    "TranscriptVersionError",
    "UnchainedTranscriptWarning",
    "Verified",
    "changed_since",
    "verify_bytes",
]
