"""Transcripts: what each run was told, recorded beside the conversation.

:class:`Session` is an append-only transcript (a JSONL file, or a PostgreSQL store;
docs/TRANSCRIPT.md is the format); :class:`AsyncSession` is the same for asyncio code;
:func:`verify_bytes` checks a transcript held in memory. The run loop that records each run,
:class:`runcontext.Loop`, lives in :mod:`runcontext.loop`. The errors are listed, with the rest
of the package's, in docs/ERRORS.md.
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
    TranscriptReplacedError,
    TranscriptVersionError,
    UnchainedTranscriptWarning,
)
from runcontext.transcript.memory import Verified, verify_bytes
from runcontext.transcript.session import (
    TRANSCRIPT_VERSION,
    Compaction,
    Elision,
    Run,
    Session,
    TornTail,
)
from runcontext.transcript.store import TranscriptStore

__all__ = [
    "TRANSCRIPT_VERSION",
    "AsyncSession",
    "Compaction",
    "ConversationMismatchError",
    "Elision",
    "Run",
    "RunNotRecordedError",
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
