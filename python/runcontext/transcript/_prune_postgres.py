"""Retention over PostgreSQL: choose sessions, delete them under their row locks, then collect
the section bodies no record names under each tenant's sweep lock (``prune`` for a
``postgresql://`` URI; docs/TRANSCRIPT.md, *Retention*).

Why the bodies are safe: a writer offers a body (``INSERT … ON CONFLICT DO NOTHING``) before it
inserts the record that names it, in one transaction, and the offer takes the tenant's sweep
lock shared (a trigger) until that transaction ends. The sweep takes the lock exclusively and
only then (a statement later, so with a snapshot that sees every such writer's commit) deletes
the bodies no record names. So no writer is ever between "the body exists" and "my record
names it" while a sweep decides, and a writer that comes later waits, then inserts the body
anew. The foreign key from records to bodies stands behind this: a body a committed record
names is never deleted, whatever happens.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

from runcontext.transcript._fleet_postgres import connected, target_keys
from runcontext.transcript.postgres import SWEEP_LOCK

__all__ = ["prune"]

# Sessions deleted per transaction: each holds its sessions' row locks until it commits.
_BATCH = 100

# The sessions chosen, with their size as files and record counts, oldest activity first.
_CHOOSE = """
    SELECT s.tenant, s.session_id, coalesce(size.bytes, 0), s.records
    FROM runcontext_sessions AS s
    LEFT JOIN LATERAL (
        SELECT sum(r.size) + count(*) AS bytes FROM runcontext_records AS r
        WHERE r.tenant = s.tenant AND r.session_id = s.session_id
    ) AS size ON true
    WHERE (%(tenant)s::text IS NULL OR s.tenant = %(tenant)s)
      AND (%(ids)s::text[] IS NULL OR s.session_id = ANY(%(ids)s::text[]))
      AND (%(age)s::interval IS NULL OR s.updated < now() - %(age)s::interval)
    ORDER BY s.updated, s.tenant, s.session_id
"""

# The bodies of the chosen sessions' tenants that no record of another session names: what a
# sweep after deleting them would collect (and bodies nothing named already).
_UNNAMED_AFTER = """
    WITH doomed AS (
        SELECT * FROM unnest(%(tenants)s::text[], %(ids)s::text[]) AS d(tenant, session_id)
    )
    SELECT count(*), coalesce(sum(octet_length(b.text)), 0)
    FROM runcontext_sections AS b
    WHERE b.tenant IN (SELECT DISTINCT tenant FROM doomed)
      AND NOT EXISTS (
        SELECT 1 FROM runcontext_records AS r
        WHERE r.tenant = b.tenant AND r.section_digest = b.digest
          AND NOT EXISTS (
            SELECT 1 FROM doomed AS d
            WHERE d.tenant = r.tenant AND d.session_id = r.session_id
          )
      )
"""

# Delete the sessions of a batch that still match: each row is locked first (a writer's append
# in progress commits before), and the condition is checked again on the row as it is then,
# so a session written to since it was chosen is kept.
_DELETE = """
    DELETE FROM runcontext_sessions AS s
    USING unnest(%(tenants)s::text[], %(ids)s::text[]) AS d(tenant, session_id)
    WHERE s.tenant = d.tenant AND s.session_id = d.session_id
      AND (%(age)s::interval IS NULL OR s.updated < now() - %(age)s::interval)
    RETURNING s.tenant, s.session_id
"""

_SWEEP = """
    DELETE FROM runcontext_sections AS b
    WHERE b.tenant = %s
      AND NOT EXISTS (
        SELECT 1 FROM runcontext_records AS r
        WHERE r.tenant = b.tenant AND r.section_digest = b.digest
      )
    RETURNING octet_length(b.text)
"""


def prune(
    target: str,
    *,
    older_than: timedelta | None,
    tenant: str | None,
    session_ids: list[str],
    delete: bool,
    connect_timeout: float,
) -> tuple[list[tuple[Any, ...]], int, int, list[tuple[Any, ...]]]:
    """(sessions deleted or to delete, bodies collected or to collect, their bytes, sessions
    chosen but kept because a writer wrote to them since)."""
    conninfo, session_id, tenant = target_keys(target, None, tenant)
    ids = [*session_ids, *([session_id] if session_id is not None else [])]
    if older_than is None and tenant is None and not ids:
        raise ValueError(
            "nothing chooses what to prune: give older_than, a tenant or session ids (the "
            "whole database is never pruned by default)"
        )
    params = {"tenant": tenant, "ids": ids or None, "age": older_than}
    with connected(conninfo, connect_timeout) as conn:
        chosen = [
            (t, s, int(size), int(records))
            for t, s, size, records in conn.execute(_CHOOSE, params).fetchall()
        ]
        if not delete:
            count, size = _unnamed_after(conn, chosen)
            return chosen, count, size, []
        gone: set[tuple[str, str]] = set()
        for start in range(0, len(chosen), _BATCH):
            batch = chosen[start : start + _BATCH]
            with conn.transaction():
                rows = conn.execute(
                    _DELETE,
                    {
                        "tenants": [row[0] for row in batch],
                        "ids": [row[1] for row in batch],
                        "age": older_than,
                    },
                ).fetchall()
            gone.update((t, s) for t, s in rows)
        count = size = 0
        for swept_tenant in sorted({row[0] for row in chosen}):
            swept = _sweep(conn, swept_tenant)
            count += len(swept)
            size += sum(swept)
    deleted = [row for row in chosen if (row[0], row[1]) in gone]
    kept = [row for row in chosen if (row[0], row[1]) not in gone]
    return deleted, count, size, kept


def _unnamed_after(conn: psycopg.Connection[Any], chosen: list[tuple[Any, ...]]) -> tuple[int, int]:
    if not chosen:
        return 0, 0
    row = conn.execute(
        _UNNAMED_AFTER,
        {"tenants": [r[0] for r in chosen], "ids": [r[1] for r in chosen]},
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _sweep(conn: psycopg.Connection[Any], tenant: str) -> list[int]:
    """Delete the tenant's bodies no record names, under its sweep lock; their sizes."""
    with conn.transaction():
        # A statement of its own: the DELETE's snapshot is taken once the lock is held, so it
        # sees every record of the writers that held the lock shared before.
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (SWEEP_LOCK, tenant))
        return [int(size) for (size,) in conn.execute(_SWEEP, (tenant,)).fetchall()]
