"""The fleet questions and retention over PostgreSQL: the queries of ``fleet`` and ``prune``
for a ``postgresql://`` URI (imported only for one, since it needs psycopg).

Each question is one query answered from the indexes of schema version 2
(docs/TRANSCRIPT.md, *Schema*); a database of an older schema is refused with the command that
upgrades it. Rows come back as tuples in the field order of the caller's dataclasses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from urllib.parse import quote

import psycopg
import psycopg.errors
from psycopg import sql
from psycopg.types.json import Jsonb

from runcontext.transcript.errors import TranscriptError
from runcontext.transcript.postgres import (
    DEFAULT_TENANT,
    SCHEMA_VERSION,
    _check_key,
    _connect,
    _redact,
    _refuse_newer_schema,
    _schema_version,
    dsn_keys,
)

__all__ = ["address", "connected", "find_runs", "list_sessions", "target_keys"]

# The schema version these queries need: its columns, indexes and the sweep lock's trigger.
NEEDED_SCHEMA = 2


def target_keys(
    target: str, session_id: str | None, tenant: str | None
) -> tuple[str, str | None, str | None]:
    """The conninfo of ``target`` and the session id and tenant to narrow to: the URI's
    ``?session=`` and ``?tenant=`` or the arguments (both, differently, is an error)."""
    conninfo, session_id, tenant = dsn_keys(target, session_id, tenant)
    if session_id is not None:
        _check_key(session_id, "session id")
    if tenant is not None:
        _check_key(tenant, "tenant")
    return conninfo, session_id, tenant


@contextmanager
def connected(conninfo: str, connect_timeout: float) -> Iterator[psycopg.Connection[Any]]:
    """A connection (autocommit) to a database holding schema version 2 or newer-refused, with
    the driver's errors as one ``TranscriptError`` naming the database."""
    name = _redact(conninfo)
    with _connect(conninfo, name, connect_timeout) as conn:
        try:
            version = _schema_version(conn)
            if version is None:
                raise TranscriptError(
                    f"the database has no runcontext schema; run `runcontext transcript init "
                    f"{name}` once",
                    path=name,
                    line=None,
                )
            _refuse_newer_schema(version, name)
            if version < NEEDED_SCHEMA:
                raise TranscriptError(
                    f"the database holds runcontext schema version {version}; questions across "
                    f"sessions and prune need version {SCHEMA_VERSION}: run `runcontext "
                    f"transcript init {name}` to upgrade it",
                    path=name,
                    line=None,
                )
            yield conn
        except psycopg.OperationalError as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else "lost"
            raise TranscriptError(
                f"the PostgreSQL connection failed: {reason}", path=name, line=None
            ) from error


def address(name: str, tenant: str, session_id: str) -> str:
    """The URI ``runcontext log`` opens for a session of the database ``name`` (its URI
    without a password), as a store names it."""
    separator = "&" if "?" in name else "?"
    shown = f"{name}{separator}session={quote(session_id, safe='')}"
    if tenant != DEFAULT_TENANT:
        shown += f"&tenant={quote(tenant, safe='')}"
    return shown


# The page of sessions first (sorted by last write: there is no index on it, see
# docs/TRANSCRIPT.md, *Schema*), then for those only each one's last run (the run-context
# nearest its end: found walking the primary key backwards from the last record, a few rows)
# and its size as a file (its lines' sizes and a newline each).
_SESSIONS = """
    SELECT s.tenant, s.session_id, s.created, s.updated,
           coalesce(last.run, 0), last.time,
           coalesce(size.bytes, 0)
    FROM (
        SELECT s.tenant, s.session_id, s.created, s.updated FROM runcontext_sessions AS s
        WHERE {where}
        ORDER BY s.updated DESC, s.tenant, s.session_id
        LIMIT {limit}
    ) AS s
    LEFT JOIN LATERAL (
        SELECT r.run, r.time FROM runcontext_records AS r
        WHERE r.tenant = s.tenant AND r.session_id = s.session_id AND r.type = 'run-context'
        ORDER BY r.seq DESC LIMIT 1
    ) AS last ON true
    LEFT JOIN LATERAL (
        SELECT sum(r.size) + count(*) AS bytes FROM runcontext_records AS r
        WHERE r.tenant = s.tenant AND r.session_id = s.session_id
    ) AS size ON true
    ORDER BY s.updated DESC, s.tenant, s.session_id
"""


def _session_filters(
    prefix: str,
    tenant: str | None,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    time_column: str,
) -> tuple[list[sql.Composable], list[object]]:
    where: list[sql.Composable] = [sql.SQL("true")]
    params: list[object] = []
    for column, value, operator in (
        ("tenant", tenant, "="),
        ("session_id", session_id, "="),
        (time_column, since, ">="),
        (time_column, until, "<="),
    ):
        if value is not None:
            where.append(
                sql.SQL("{} {} %s").format(sql.Identifier(prefix, column), sql.SQL(operator))
            )
            params.append(value)
    return where, params


def _as_stored(text: str) -> str:
    """``text`` as the run columns hold it: NUL, which ``jsonb`` cannot hold, as U+FFFD (the
    trigger reads a line holding one so)."""
    return text.replace("\x00", "\ufffd")


def list_sessions(
    target: str,
    *,
    tenant: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    connect_timeout: float,
) -> list[tuple[Any, ...]]:
    conninfo, session_id, tenant = target_keys(target, None, tenant)
    name = _redact(conninfo)
    where, params = _session_filters("s", tenant, session_id, since, until, "updated")
    query = sql.SQL(_SESSIONS).format(where=sql.SQL(" AND ").join(where), limit=limit)
    with connected(conninfo, connect_timeout) as conn:
        rows = conn.execute(query, params).fetchall()
    return [
        (t, s, created, updated, int(runs), last, int(size), address(name, t, s))
        for t, s, created, updated, runs, last, size in rows
    ]


def find_runs(
    target: str,
    *,
    section_digest: str | None,
    section_name: str | None,
    facts: Mapping[str, str],
    tenant: str | None,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    connect_timeout: float,
) -> list[tuple[Any, ...]]:
    conninfo, session_id, tenant = target_keys(target, session_id, tenant)
    name = _redact(conninfo)
    where, params = _session_filters("r", tenant, session_id, since, until, "time")
    where.append(sql.SQL("r.type = 'run-context'"))
    if section_digest is not None:
        where.append(sql.SQL("r.section_digests @> %s"))
        params.append(Jsonb([_as_stored(section_digest)]))
    if section_name is not None:
        where.append(sql.SQL("r.section_names @> %s"))
        params.append(Jsonb([_as_stored(section_name)]))
    for fact, value in facts.items():
        # The index finds the runs holding both strings in one pair; the path checks which
        # is the name (containment does not see the order within a pair).
        pair = [_as_stored(fact), _as_stored(value)]
        where.append(
            sql.SQL(
                "r.facts @> %s AND jsonb_path_exists(r.facts,"
                " 'strict $[*] ? (@[0] == $name && @[1] == $value)', %s)"
            )
        )
        params.extend([Jsonb([pair]), Jsonb({"name": pair[0], "value": pair[1]})])
    query = sql.SQL(
        "SELECT r.tenant, r.session_id, r.run, r.time, r.context_digest"
        " FROM runcontext_records AS r WHERE {where}"
        " ORDER BY r.time DESC NULLS LAST, r.tenant, r.session_id, r.seq DESC LIMIT {limit}"
    ).format(where=sql.SQL(" AND ").join(where), limit=limit)
    with connected(conninfo, connect_timeout) as conn:
        rows = conn.execute(query, params).fetchall()
    return [
        (t, s, int(run) if run is not None else 0, time, context, address(name, t, s))
        for t, s, run, time, context in rows
    ]
