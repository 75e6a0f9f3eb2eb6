"""A store from a string: a path means the JSONL file store, a ``postgresql://`` (or
``postgres://``) URI the PostgreSQL store. What ``Session.create``/``Session.open`` and the
command line accept wherever they take a transcript."""

from __future__ import annotations

import os
import re

from runcontext._core import DEFAULT_MAX_LINE_BYTES
from runcontext.transcript.errors import shown_name
from runcontext.transcript.files import FileStore

TYPE_CHECKING = False  # not typing's: `runcontext log` lists a transcript without typing
if TYPE_CHECKING:
    from runcontext.transcript.store import TranscriptStore

__all__ = ["is_postgres_dsn", "open_store"]


def is_postgres_dsn(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL store (a ``postgresql://``/``postgres://`` URI)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_store(
    target: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    session_id: str | None = None,
    tenant: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    durable: bool = False,
) -> TranscriptStore:
    """The store ``target`` names.

    A path gives a :class:`~runcontext.transcript.files.FileStore` (which opens nothing until
    ``Session.open`` or its own ``open``); ``session_id`` and ``tenant`` are refused for it, as
    a file holds one session. A ``postgresql://host/db?session=ID&tenant=T`` URI gives a
    connected :class:`~runcontext.transcript.postgres.PostgresStore` (``session_id=`` and
    ``tenant=`` may stand in for the query parameters; the session id is required, the tenant
    defaults to ``"default"``); it needs the ``postgres`` extra. ``durable`` is the file
    store's (PostgreSQL commits are as durable as the server is configured to make them).
    """
    if not isinstance(target, str):  # bytes or a path object: the file store's str form
        target = os.fsdecode(target)
    if is_postgres_dsn(target):
        from runcontext.transcript.postgres import PostgresStore

        return PostgresStore(target, session_id, tenant=tenant, max_line_bytes=max_line_bytes)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", target)
    if scheme is not None:
        raise ValueError(
            f"{shown_name(target)}: unknown store scheme {scheme.group(1)!r}; give a path or a "
            "postgresql:// URI"
        )
    if session_id is not None or tenant is not None:
        raise ValueError(
            f"{shown_name(target)}: session_id and tenant are for a PostgreSQL store; a "
            "transcript file holds one session"
        )
    return FileStore(target, durable=durable, max_line_bytes=max_line_bytes)
