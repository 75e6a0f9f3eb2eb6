"""The transcript a command reads, opened as every reading command opens it."""

from __future__ import annotations

import argparse

from runcontext.transcript import Session

__all__ = ["opened"]


def opened(args: argparse.Namespace) -> Session:
    """The transcript ``args`` name, opened read-only with their line cap and PostgreSQL
    address (``log`` and its ``--html`` page read it alike)."""
    try:
        return Session.open(
            args.transcript,
            writable=False,
            max_line_bytes=args.max_line_bytes,
            session_id=args.session,
            tenant=args.tenant,
        )
    except ImportError as error:  # a postgresql:// URI without the postgres extra
        raise ValueError(str(error)) from None
