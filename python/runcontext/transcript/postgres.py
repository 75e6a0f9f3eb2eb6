"""A :class:`~runcontext.transcript.store.TranscriptStore` in PostgreSQL (psycopg 3).

Many sessions of many tenants share one database: each record is a row holding its canonical
line bytes (``bytea``, never ``jsonb``, which would reorder them) beside a few queryable
columns, section bodies are stored once per (tenant, digest) however many sessions repeat them,
and ``writing()`` is a transaction that locks the session's row, so writers on any number of
machines are excluded and a run's records commit together or not at all. The schema, the
guarantees and the commands are in docs/TRANSCRIPT.md ("PostgreSQL store").

    init_schema("postgresql://db.example/agents")
    store = PostgresStore("postgresql://db.example/agents?session=ticket-4711&tenant=acme")
"""

from __future__ import annotations

import errno
import json
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from runcontext._core import canonical_json, digest
from runcontext.transcript.errors import (
    TranscriptDigestError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptVersionError,
)
from runcontext.transcript.store import DEFAULT_MAX_LINE_BYTES, is_postgres_dsn

try:
    import psycopg
    import psycopg.conninfo
    import psycopg.errors
    import psycopg_pool
    from psycopg.adapt import Dumper
    from psycopg.pq import Format, TransactionStatus
except ImportError as _error:  # pragma: no cover - the extra's tests always have it
    raise ImportError(
        "runcontext.transcript.postgres needs psycopg 3: pip install 'runcontext[postgres]'"
    ) from _error

__all__ = [
    "DEFAULT_TENANT",
    "SCHEMA_VERSION",
    "PostgresStore",
    "dsn_keys",
    "init_schema",
    "is_postgres_dsn",
    "parse_dsn",
]

# The version of the tables below. init_schema records it; a store refuses a database whose
# schema is newer (a newer runcontext may store rows this one would misread). A store reads and
# writes a version 1 database as well (its rows are the same); the fleet queries and prune need
# version 2, which `runcontext transcript init` installs over version 1 (_MIGRATIONS).
SCHEMA_VERSION = 2
# The newest transcript format version (the header's `version`) this store knows. A session
# created by a newer writer is refused on open, before any of its lines are read.
_KNOWN_FORMAT_VERSION = 2
DEFAULT_TENANT = "default"
_IDLE = TransactionStatus.IDLE
# The last record of a session as a writer knows it: its seq, its chain, its line's first 82
# bytes (which hold the chain).
_Last = tuple[int, str | None, bytes]
# Session ids and tenants are text keys; PostgreSQL text cannot hold NUL.
_MAX_KEY_CHARS = 200
# `read` returns at most this many records, or about this many bytes (always at least one
# record), so a reader's memory is bounded by the batch, not by the session.
_BATCH_ROWS = 1000
_BATCH_BYTES = 8 * 1024 * 1024
# Serialises concurrent init_schema calls (CREATE TABLE IF NOT EXISTS is not safe against a
# concurrent one); any constant, chosen once.
_INIT_LOCK = 0x72756E63  # "runc"
# The advisory lock that makes collecting section bodies safe while writers append (two-int
# form: this constant and hashtext(tenant)). Inserting a section body takes it shared (the
# trigger below), so until its transaction ends no body of its tenant is collected; prune
# takes it exclusively around deleting the tenant's unnamed bodies (docs/TRANSCRIPT.md,
# *Retention*).
SWEEP_LOCK = 0x72637377  # "rcsw"

_SCHEMA = (
    """
    CREATE TABLE runcontext_sessions (
        tenant          text        NOT NULL,
        session_id      text        NOT NULL,
        format_version  integer     NOT NULL,
        records         bigint      NOT NULL,
        chain           text,
        created         timestamptz,
        updated         timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, session_id)
    )
    """,
    """
    CREATE TABLE runcontext_sections (
        tenant  text  NOT NULL,
        digest  text  NOT NULL,
        name    text  NOT NULL,
        text    bytea NOT NULL,
        PRIMARY KEY (tenant, digest)
    )
    """,
    """
    CREATE TABLE runcontext_records (
        tenant          text        NOT NULL,
        session_id      text        NOT NULL,
        seq             bigint      NOT NULL CHECK (seq >= 1),
        type            text        NOT NULL,
        run             integer,
        time            timestamptz,
        context_digest  text,
        section_digest  text,
        size            bigint      NOT NULL,
        line            bytea       NOT NULL,
        PRIMARY KEY (tenant, session_id, seq),
        FOREIGN KEY (tenant, session_id) REFERENCES runcontext_sessions ON DELETE CASCADE,
        FOREIGN KEY (tenant, section_digest) REFERENCES runcontext_sections (tenant, digest)
    )
    """,
    """
    CREATE INDEX runcontext_records_context ON runcontext_records (tenant, context_digest)
        WHERE context_digest IS NOT NULL
    """,
)

# What schema version N - 1 needs to become version N (index N - 2). A new database runs the
# tables above and then every migration, so each statement exists once.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1 -> 2: what a run was told, as queryable columns filled by the server (a trigger, so a
    # writer does no work for them and a writer of any version fills them alike); indexes
    # for the fleet questions; and the shared lock that section-body inserts take.
    (
        """
        ALTER TABLE runcontext_records
            ADD COLUMN section_digests jsonb,
            ADD COLUMN section_names   jsonb,
            ADD COLUMN facts           jsonb
        """,
        # A run-context line's section digests and names (JSON arrays, head then tail, in
        # order) and its facts (the record's array of [name, value] pairs), read by the server
        # with simple expressions only (no query per row: the trigger costs a parse of the
        # line). A line jsonb cannot hold (a \u0000 escape in a string) is read with U+FFFD in
        # its place; one that is not JSON at all gives NULLs, never an error: the columns are
        # for queries, and an insert must not fail over them. UPDATE OF line fires it too, so
        # the migration fills the rows already stored with the same code.
        r"""
        CREATE FUNCTION runcontext_records_told() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            record jsonb;
        BEGIN
            BEGIN
                record := convert_from(NEW.line, 'UTF8')::jsonb;
            EXCEPTION WHEN others THEN
                BEGIN
                    record := replace(convert_from(NEW.line, 'UTF8'), '\u0000', '\ufffd')::jsonb;
                EXCEPTION WHEN others THEN
                    NEW.section_digests := NULL;
                    NEW.section_names := NULL;
                    NEW.facts := NULL;
                    RETURN NEW;
                END;
            END;
            NEW.section_digests := jsonb_path_query_array(record, '$.sections[*].digest');
            NEW.section_names := jsonb_path_query_array(record, '$.sections[*].name');
            NEW.facts := CASE WHEN jsonb_typeof(record -> 'facts') = 'array'
                              THEN record -> 'facts' END;
            RETURN NEW;
        END
        $$
        """,
        """
        CREATE TRIGGER runcontext_records_told BEFORE INSERT OR UPDATE OF line
            ON runcontext_records
            FOR EACH ROW WHEN (NEW.type = 'run-context')
            EXECUTE FUNCTION runcontext_records_told()
        """,
        "UPDATE runcontext_records SET line = line WHERE type = 'run-context'",
        f"""
        CREATE FUNCTION runcontext_sections_share() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared({SWEEP_LOCK}, hashtext(NEW.tenant));
            RETURN NEW;
        END
        $$
        """,
        # BEFORE INSERT runs for a row ON CONFLICT DO NOTHING then skips, so a writer holds
        # the lock from the moment it offers a body until its transaction ends.
        """
        CREATE TRIGGER runcontext_sections_share BEFORE INSERT ON runcontext_sections
            FOR EACH ROW EXECUTE FUNCTION runcontext_sections_share()
        """,
        # No index on runcontext_sessions (updated): every append updates it, and an index on
        # it would cost each of those updates its index entries (no HOT update); a listing
        # sorts the sessions it selects instead.
        """
        CREATE INDEX runcontext_records_run_time ON runcontext_records (time)
            WHERE type = 'run-context'
        """,
        """
        CREATE INDEX runcontext_records_tenant_run_time ON runcontext_records (tenant, time)
            WHERE type = 'run-context'
        """,
        """
        CREATE INDEX runcontext_records_told_digests
            ON runcontext_records USING gin (section_digests jsonb_path_ops)
            WHERE section_digests IS NOT NULL
        """,
        """
        CREATE INDEX runcontext_records_told_names
            ON runcontext_records USING gin (section_names jsonb_path_ops)
            WHERE section_names IS NOT NULL
        """,
        """
        CREATE INDEX runcontext_records_told_facts
            ON runcontext_records USING gin (facts jsonb_path_ops)
            WHERE facts IS NOT NULL
        """,
        # Which records name a body: for collecting unnamed bodies, and for the foreign key's
        # check when a body is deleted (without it, each deleted body scans every record).
        """
        CREATE INDEX runcontext_records_section ON runcontext_records (tenant, section_digest)
            WHERE section_digest IS NOT NULL
        """,
    ),
)
assert len(_MIGRATIONS) == SCHEMA_VERSION - 1


# One batch of records after a cursor: at most _BATCH_ROWS of them and no more than _BATCH_BYTES
# in all (but always the first, however long), with each line over the cap left unfetched (NULL:
# the server does not read a value it does not return), so the client sees its size only. A
# line's size is its `size` column or, if larger, the bytes stored for it (the line and its
# section body, which it holds at least once): octet_length reads a value's length without
# fetching it, and an edited `size` column then cannot let a longer line past the cap.
_READ_BATCH = """
    WITH batch AS (
        SELECT seq, size, sum(size) OVER (ORDER BY seq) AS running
        FROM (
            SELECT r.seq,
                   greatest(r.size, octet_length(r.line) + coalesce(octet_length(s.text), 0))
                       AS size
            FROM runcontext_records AS r
            LEFT JOIN runcontext_sections AS s
                ON s.tenant = r.tenant AND s.digest = r.section_digest
            WHERE r.tenant = %(tenant)s AND r.session_id = %(session)s AND r.seq > %(after)s
            ORDER BY r.seq LIMIT %(rows)s
        ) AS next
    )
    SELECT b.seq, b.size,
           CASE WHEN b.size <= %(cap)s THEN r.line END,
           CASE WHEN b.size <= %(cap)s THEN s.text END
    FROM batch AS b
    JOIN runcontext_records AS r
        ON r.tenant = %(tenant)s AND r.session_id = %(session)s AND r.seq = b.seq
    LEFT JOIN runcontext_sections AS s
        ON s.tenant = r.tenant AND s.digest = r.section_digest
    WHERE b.running <= %(bytes)s OR b.running = b.size
    ORDER BY b.seq
"""


# The session row, locked; then (a statement of its own, sent with it) the last record's seq
# and the first 82 bytes of its line, which hold its chain; or both at once, in one snapshot,
# for a reader.
_LOCK_ROW = """
    SELECT records, format_version, chain FROM runcontext_sessions
    WHERE tenant = %s AND session_id = %s FOR UPDATE
"""
_LAST_RECORD = """
    SELECT seq, substring(line FROM 1 FOR 82) FROM runcontext_records
    WHERE tenant = %s AND session_id = %s ORDER BY seq DESC LIMIT 1
"""
_ROW_AND_LAST_RECORD = """
    SELECT s.records, s.format_version, s.chain, last.seq, last.head
    FROM runcontext_sessions AS s
    LEFT JOIN LATERAL (
        SELECT seq, substring(line FROM 1 FOR 82) AS head FROM runcontext_records AS r
        WHERE r.tenant = s.tenant AND r.session_id = s.session_id ORDER BY seq DESC LIMIT 1
    ) AS last ON true
    WHERE s.tenant = %s AND s.session_id = %s
"""


# One write, one statement: the session row's new count and chain, guarded by what the writer
# found stored, and only if the guard holds (the row updated, and so locked), the new section
# bodies and the records. A failed guard writes nothing, and the result (the rows updated, 0
# or 1) says so. The records go as arrays, one per column, in the lines' order.
_WRITE = """
    WITH anchored AS (
        UPDATE runcontext_sessions SET records = %(records)b, chain = %(chain)b, updated = now()
        WHERE tenant = %(tenant)b AND session_id = %(session)b AND records = %(after)b{guard}
        RETURNING 1
    ), bodies AS (
        INSERT INTO runcontext_sections (tenant, digest, name, text)
        SELECT %(tenant)b, b.digest, b.name, b.text
        FROM unnest(%(digests)b::text[], %(names)b::text[], %(texts)b::bytea[])
            AS b (digest, name, text)
        WHERE EXISTS (SELECT FROM anchored)
        ON CONFLICT DO NOTHING
    ), inserted AS (
        INSERT INTO runcontext_records (tenant, session_id, seq, type, run, time, context_digest,
                                        section_digest, size, line)
        SELECT %(tenant)b, %(session)b, %(after)b + r.n, r.type, r.run, r.time, r.context_digest,
               r.section_digest, r.size, r.line
        FROM unnest(%(types)b::text[], %(runs)b::integer[], %(times)b::timestamptz[],
                    %(contexts)b::text[], %(sections)b::text[], %(sizes)b::bigint[],
                    %(lines)b::bytea[])
            WITH ORDINALITY AS r (type, run, time, context_digest, section_digest, size, line, n)
        WHERE EXISTS (SELECT FROM anchored)
    )
    SELECT count(*) FROM anchored
"""
# Under the row lock, the row was checked against the last record (_session_row) and cannot
# change: the count alone guards the write. Without the lock (a lone writer's one round trip),
# the guard is that check itself: the row holds the count and chain the writer last saw, the
# record it counts last is stored with the first 82 bytes the writer saw, and none after it.
_WRITE_LOCKED = _WRITE.format(guard="")
_WRITE_IF_CURRENT = _WRITE.format(
    guard="""
            AND chain IS NOT DISTINCT FROM %(anchor)b
            AND EXISTS (
                SELECT FROM runcontext_records
                WHERE tenant = %(tenant)b AND session_id = %(session)b AND seq = %(after)b
                    AND substring(line FROM 1 FOR 82) = %(head)b)
            AND NOT EXISTS (
                SELECT FROM runcontext_records
                WHERE tenant = %(tenant)b AND session_id = %(session)b AND seq > %(after)b)"""
)


class _Array(list[Any]):
    """A list sent as a one-dimensional array in PostgreSQL's binary form (``_ArrayDumper``):
    a write's columns, built in one pass, where the driver's generic list dumper would inspect
    every list's elements to find their type first. A connection without the dumper sends it as
    the list it is."""

    oid: ClassVar[int]  # the array type's
    element_oid: ClassVar[int]

    @staticmethod
    def encode(value: Any) -> bytes:
        raise NotImplementedError


class _TextArray(_Array):
    oid, element_oid = 1009, 25

    @staticmethod
    def encode(value: Any) -> bytes:
        return str(value).encode("utf-8")


class _ByteaArray(_Array):
    oid, element_oid = 1001, 17

    @staticmethod
    def encode(value: Any) -> bytes:
        return bytes(value)


class _Int8Array(_Array):
    oid, element_oid = 1016, 20

    @staticmethod
    def encode(value: Any) -> bytes:
        return _INT8.pack(value)


class _TimestamptzArray(_Array):
    oid, element_oid = 1185, 1184

    @staticmethod
    def encode(value: Any) -> bytes:
        # Microseconds since PostgreSQL's epoch (an aware datetime: _time returns no other).
        return _INT8.pack((value - _PG_EPOCH) // _MICROSECOND)


_INT4, _INT8 = struct.Struct("!i"), struct.Struct("!q")
_EMPTY, _HEAD = struct.Struct("!iII"), struct.Struct("!iIIii")  # without and with a dimension
_NULL = _INT4.pack(-1)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class _ArrayDumper(Dumper):
    """PostgreSQL's binary array form (array_send): dimensions, null flag, element type, then
    each element as its length and bytes (-1 for NULL)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        if not obj:
            return _EMPTY.pack(0, 0, obj.element_oid)
        encode = obj.encode
        parts = [b""]
        hasnull = 0
        for value in obj:
            if value is None:
                parts.append(_NULL)
                hasnull = 1
            else:
                data = encode(value)
                parts.append(_INT4.pack(len(data)))
                parts.append(data)
        parts[0] = _HEAD.pack(1, hasnull, obj.element_oid, len(obj), 1)
        return b"".join(parts)


for _array in (_TextArray, _ByteaArray, _Int8Array, _TimestamptzArray):
    # Registered for runcontext's own list types only: nothing else a program sends changes.
    psycopg.adapters.register_dumper(
        _array, type(f"{_array.__name__}Dumper", (_ArrayDumper,), {"oid": _array.oid})
    )


def parse_dsn(dsn: str) -> tuple[str, str | None, str | None]:
    """Split ``postgresql://host/db?session=ID&tenant=T`` into the conninfo to connect with
    (those two parameters removed, every other one kept) and the session id and tenant
    (``None`` where absent). A key=value conninfo is returned unchanged."""
    if not is_postgres_dsn(dsn):
        return dsn, None, None
    parts = urlsplit(dsn)
    found: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in ("session", "tenant"):
            if key in found:
                raise ValueError(f"{_redact(dsn)}: the {key} parameter is given twice")
            found[key] = value
        else:
            kept.append((key, value))
    query = urlencode(kept, quote_via=quote, safe="/")
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    return conninfo, found.get("session"), found.get("tenant")


def dsn_keys(
    dsn: str, session_id: str | None, tenant: str | None
) -> tuple[str, str | None, str | None]:
    """The conninfo of ``dsn`` and the session id and tenant it names: the arguments, or else
    the URI's ``?session=`` and ``?tenant=``; a key given both ways with different values is an
    error, not a precedence rule (docs/TRANSCRIPT.md, *Addressing a session*)."""
    conninfo, dsn_session, dsn_tenant = parse_dsn(dsn)
    for what, given, in_dsn in (
        ("session_id", session_id, dsn_session),
        ("tenant", tenant, dsn_tenant),
    ):
        if given is not None and in_dsn is not None and given != in_dsn:
            raise ValueError(
                f"{what}={given!r} differs from the DSN's {what.removesuffix('_id')}="
                f"{in_dsn!r}; give it once"
            )
    return (
        conninfo,
        session_id if session_id is not None else dsn_session,
        tenant if tenant is not None else dsn_tenant,
    )


def _redact(dsn: str) -> str:
    """The DSN with any password removed, for messages."""
    if not is_postgres_dsn(dsn):
        try:
            params = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError:
            return "<an unparsable conninfo>"
        return " ".join(f"{k}={v}" for k, v in params.items() if k != "password")
    parts = urlsplit(dsn)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"],
        quote_via=quote,
        safe="/",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _check_key(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} is empty")
    if len(value) > _MAX_KEY_CHARS:
        raise ValueError(f"{what} is {len(value)} characters long; the limit is {_MAX_KEY_CHARS}")
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL character, which PostgreSQL text cannot hold")
    return value


def _connect(conninfo: str, name: str, connect_timeout: float) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(
            conninfo, autocommit=True, connect_timeout=max(1, round(connect_timeout))
        )
    except psycopg.Error as error:
        # libpq's message can run over several lines (one per address tried): keep the first.
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TranscriptError(
            f"cannot connect to PostgreSQL: {reason}", path=name, line=None
        ) from None


def _schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The installed schema version, or ``None`` when there is none."""
    row = conn.execute("SELECT to_regclass('runcontext_schema_version') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return None
    version = conn.execute("SELECT max(version) FROM runcontext_schema_version").fetchone()
    return None if version is None or version[0] is None else int(version[0])


def _refuse_newer_schema(version: int, name: str) -> None:
    if version > SCHEMA_VERSION:
        raise TranscriptVersionError(
            f"the database holds runcontext schema version {version}, newer than this "
            f"runcontext's ({SCHEMA_VERSION}); upgrade runcontext",
            path=name,
            line=None,
        )


def init_schema(dsn: str, *, connect_timeout: float = 10) -> int:
    """Create the tables in the database ``dsn`` names, if they are not there yet.

    Idempotent and safe to run concurrently; returns the schema version. An older schema is
    upgraded in the same transaction (all of it or nothing). A database holding a newer
    schema version is refused (:class:`TranscriptVersionError`) and left untouched.
    """
    conninfo, _, _ = parse_dsn(dsn)
    name = _redact(conninfo)
    with _connect(conninfo, name, connect_timeout) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
        version = _schema_version(conn)
        if version is not None:
            _refuse_newer_schema(version, name)
        else:
            conn.execute(
                "CREATE TABLE runcontext_schema_version ("
                " version integer NOT NULL,"
                " installed timestamptz NOT NULL DEFAULT now())"
            )
            for statement in _SCHEMA:
                conn.execute(statement.encode())
            version = 1
        if version == SCHEMA_VERSION:
            return version
        for migration in _MIGRATIONS[version - 1 :]:
            for statement in migration:
                conn.execute(statement.encode())
        conn.execute(
            "INSERT INTO runcontext_schema_version (version) VALUES (%s)", (SCHEMA_VERSION,)
        )
    return SCHEMA_VERSION


class PostgresStore:
    """One session's records in PostgreSQL: the (``tenant``, ``session_id``) it is opened for.

    ``dsn`` is a libpq connection string; a ``postgresql://`` URI may carry the session id and
    tenant as ``?session=ID&tenant=T`` (removed before connecting), or they are passed as
    arguments (giving both, differently, is an error). The store then holds one connection, in
    autocommit mode outside ``writing()``; :meth:`close` closes it.

    ``lock_timeout`` (seconds) bounds how long ``writing()`` waits for another writer of the
    session (``TranscriptError`` when it expires); by default it waits as long as that writer
    holds the session.

    With ``pool=`` (a :class:`psycopg_pool.ConnectionPool`) instead of a DSN, the store holds no
    connection: it borrows one for each ``read`` and for each ``writing()`` block, so a fleet of
    sessions in one process shares a few connections. Either way, like a file descriptor, a
    store is not for sharing between threads without a lock (a :class:`Session` holds one).
    """

    def __init__(
        self,
        dsn: str | None = None,
        session_id: str | None = None,
        *,
        tenant: str | None = None,
        pool: psycopg_pool.ConnectionPool[Any] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        connect_timeout: float = 10,
        lock_timeout: float | None = None,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise TypeError("give a dsn or a pool= (one of them)")
        if pool is not None:
            dsn = pool.conninfo if isinstance(pool.conninfo, str) else pool.conninfo()
        if not isinstance(dsn, str):
            raise TypeError(f"dsn must be a str, not {type(dsn).__name__}")
        conninfo, session_id, tenant = dsn_keys(dsn, session_id, tenant)
        if session_id is None:
            raise ValueError(
                f"{_redact(dsn)}: no session id; pass session_id= or add ?session=ID to the DSN"
            )
        self.session_id = _check_key(session_id, "session id")
        self.tenant = _check_key(tenant if tenant is not None else DEFAULT_TENANT, "tenant")
        if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int):
            raise TypeError(f"max_line_bytes must be an int, not {type(max_line_bytes).__name__}")
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be at least 1, not {max_line_bytes}")
        self.max_line_bytes = max_line_bytes
        if lock_timeout is not None and not lock_timeout > 0:
            raise ValueError(
                f"lock_timeout must be a positive number of seconds, not {lock_timeout}"
            )
        self.lock_timeout = lock_timeout
        base = _redact(conninfo)
        separator = "&" if "?" in base else "?"
        self._name = f"{base}{separator}session={quote(self.session_id, safe='')}"
        if self.tenant != DEFAULT_TENANT:
            self._name += f"&tenant={quote(self.tenant, safe='')}"
        self._pool = pool
        self._closed = False
        self._conninfo, self._connect_timeout = conninfo, connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        if pool is None:
            self._conn = _connect(conninfo, self._name, connect_timeout)
        self._writer: psycopg.Connection[Any] | None = None  # the connection inside writing()
        self._next_seq: int | None = None  # set inside writing(): the next record's seq
        # writing()'s writes, each with the last record it writes, checked after the COMMIT.
        self._pending: list[tuple[psycopg.Cursor[Any], _Last]] = []
        # The last record as this store last found it checked against the session row, or
        # wrote it: (seq, chain, the line's first 82 bytes). append_if_current guards on it.
        self._known: _Last | None = None
        try:
            with self._errors(), self._connection() as conn:
                version = _schema_version(conn)
            if version is None:
                raise TranscriptError(
                    f"the database has no runcontext schema; run `runcontext transcript init "
                    f"{base}` once",
                    path=self._name,
                    line=None,
                )
            _refuse_newer_schema(version, self._name)
        except BaseException:
            self.close()
            raise

    @property
    def name(self) -> str:
        """``postgresql://user@host/db?session=ID`` (with ``&tenant=T`` unless the default);
        never the password."""
        return self._name

    def __repr__(self) -> str:
        return f"PostgresStore({self._name!r})"

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the TranscriptStore interface -------------------------------------------------------

    def create(self, lines: Sequence[bytes]) -> None:
        if not lines:
            raise ValueError(f"{self._name}: a session needs at least its header line")
        if self._next_seq is not None:
            raise RuntimeError(f"{self._name}: create() inside writing()")
        header = _parse(lines[0], self._name, 1)
        version = header.get("version")
        if (
            header.get("type") != "header"
            or isinstance(version, bool)
            or not isinstance(version, int)
        ):
            raise TranscriptFormatError(
                "the first line is not a header record", path=self._name, line=1, kind="header"
            )
        with self._errors(), self._connection() as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO runcontext_sessions (tenant, session_id, format_version, records,"
                " created) VALUES (%s, %s, %s, 0, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (self.tenant, self.session_id, version, _time(header)),
            ).fetchone()
            if row is None:
                raise FileExistsError(
                    errno.EEXIST,
                    "the session already exists (open it with Session.open, or pick another id)",
                    self._name,
                )
            params, _ = self._write_params(1, lines)
            self._check_written(self._write(conn, _WRITE_LOCKED, params), 1)

    def read(self, cursor: object | None) -> tuple[list[bytes], object | None]:
        if cursor is None:
            after = 0
        elif isinstance(cursor, int) and not isinstance(cursor, bool) and cursor >= 0:
            after = cursor
        else:
            raise TypeError(f"{self._name}: not a cursor of this store: {cursor!r}")
        if self._next_seq is not None and after >= self._next_seq - 1:
            if after > self._next_seq - 1:
                # The caller read records that are gone: what it appends would chain onto
                # one of them.
                raise self._anchor_error(
                    f"this session has read {after} records, but only {self._next_seq - 1} "
                    "are stored: records were deleted since it read them; reopen the session",
                    line=self._next_seq,
                )
            # Inside writing() nobody else can append: nothing after the last record.
            return [], cursor
        with self._errors(), self._connection() as conn:
            if cursor is None and self._next_seq is None:
                self._session_row(conn, lock=False)
            rows = conn.execute(_READ_BATCH, self._batch_params(after), binary=True).fetchall()
        lines: list[bytes] = []
        last = after
        for seq, size, line, text in rows:
            if seq != last + 1:
                if lines:
                    break  # return the records before the gap; the next call raises
                raise self._gap(last, seq)
            if size > self.max_line_bytes:
                if lines:
                    break  # return the records before it; the next call raises
                raise TranscriptFormatError(
                    f"record of {size} bytes exceeds the limit of {self.max_line_bytes} bytes "
                    "(it was not read into memory); if the session is genuine, open it with "
                    "a larger max_line_bytes",
                    path=self._name,
                    line=seq,
                    kind="too-long",
                )
            stored = bytes(line)
            lines.append(stored if text is None else self._rebuild(seq, stored, bytes(text)))
            last = seq
        if not lines:
            return [], cursor
        return lines, last

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A transaction holding the session's row lock, in two round trips: the lock with the
        last record's seq and chain, then every write of the block with the ``COMMIT``
        (pipelined). A write whose guard fails raises at the end of the block, nothing of it
        stored."""
        if self._next_seq is not None:
            raise RuntimeError(f"{self._name}: writing() is not reentrant")
        with self._errors(), self._connection() as conn, _autocommit(conn):
            self._pending, self._known = [], None
            with self._transaction(conn):
                last = self._session_row(conn, lock=True)
                # The next seq follows the last record stored (checked against the row, and
                # the row again by the write itself), never the row's count alone.
                self._writer, self._next_seq = conn, last + 1
                try:
                    yield
                finally:
                    self._writer = self._next_seq = None
            pending, self._pending = self._pending, []
            for cursor, _ in pending:
                self._check_written(cursor, last + 1)
            if pending:
                self._known = pending[-1][1]

    def append(self, lines: Sequence[bytes]) -> int:
        """Insert ``lines`` after the records stored (inside ``writing()``, sent with its
        ``COMMIT``; or as a transaction of its own); returns the cursor after them."""
        if self._next_seq is None:
            with self.writing():
                return self.append(lines)
        if lines:
            assert self._writer is not None
            params, written = self._write_params(self._next_seq, lines)
            with self._errors():
                self._pending.append((self._write(self._writer, _WRITE_LOCKED, params), written))
            self._next_seq += len(lines)
        return self._next_seq - 1

    def append_if_current(self, cursor: object | None, lines: Sequence[bytes]) -> int | None:
        """Insert ``lines`` in one round trip, without the row lock, if the session still
        ends where this store last found or left it and the caller has read up to there
        (``cursor``); returns the cursor after them, or ``None`` with nothing written when
        another writer appended since, the store cannot tell, or the session row disagrees
        with its records (``writing()`` then says what is wrong)."""
        known = self._known
        if self._next_seq is not None or known is None or cursor != known[0] or not lines:
            return None
        after, anchor, head = known
        params, written = self._write_params(after + 1, lines)
        params |= {"anchor": anchor, "head": head}
        self._known = None  # until the write is known to have committed
        with self._errors(), self._connection() as conn, _autocommit(conn):
            try:
                if self.lock_timeout is None:  # one statement: a transaction of its own
                    row = self._write(conn, _WRITE_IF_CURRENT, params).fetchone()
                else:  # with its lock_timeout, in one round trip still
                    with self._transaction(conn):
                        result = self._write(conn, _WRITE_IF_CURRENT, params)
                    row = result.fetchone()
            except psycopg.IntegrityError:
                return None  # records the row does not count: writing() refuses them by name
        if row is None or row[0] != 1:
            return None
        self._known = written
        return after + len(lines)

    def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # -- beyond the interface ----------------------------------------------------------------

    def head(self) -> tuple[int, str | None]:
        """The number of records and the last record's ``chain``, as the session row anchors
        them (compare with ``Session.chain`` to detect records dropped from the end)."""
        with self._errors(), self._connection() as conn:
            row = conn.execute(
                "SELECT records, chain FROM runcontext_sessions"
                " WHERE tenant = %s AND session_id = %s",
                (self.tenant, self.session_id),
            ).fetchone()
        if row is None:
            raise self._missing()
        return int(row[0]), _anchor_text(row[1])

    # -- internals ---------------------------------------------------------------------------

    def _batch_params(self, after: int) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "session": self.session_id,
            "after": after,
            "rows": _BATCH_ROWS,
            "bytes": _BATCH_BYTES,
            "cap": self.max_line_bytes,
        }

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection to use: the writing() block's, the store's own, or one borrowed
        from the pool (returned, with any transaction finished, when the block exits)."""
        if self._closed:
            raise ValueError(f"{self._name}: the store is closed")
        if self._writer is not None:
            yield self._writer
        elif self._conn is not None:
            if self._conn.broken:  # lost (a server restart, a dropped link): connect again
                self._conn.close()
                self._conn = _connect(self._conninfo, self._name, self._connect_timeout)
            yield self._conn
        else:
            assert self._pool is not None
            with self._pool.connection() as conn:
                yield conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The driver's errors as one clear TranscriptError naming the store."""
        try:
            yield
        except psycopg.errors.UndefinedTable:
            raise TranscriptError(
                "the runcontext tables are missing; run `runcontext transcript init DSN`",
                path=self._name,
                line=None,
            ) from None
        except psycopg.OperationalError as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else "lost"
            raise TranscriptError(
                f"the PostgreSQL connection failed: {reason}", path=self._name, line=None
            ) from error

    def _missing(self) -> FileNotFoundError:
        return FileNotFoundError(
            errno.ENOENT,
            f"no session {self.session_id!r} for tenant {self.tenant!r} "
            "(start one with Session.create)",
            self._name,
        )

    def _session_row(self, conn: psycopg.Connection[Any], *, lock: bool) -> int:
        """The last stored record's seq (locking the session's row if asked), checked against
        the row: refuses a missing session, a format version this runcontext does not know,
        and a row whose count or chain is not the last stored record's."""
        key = (self.tenant, self.session_id)
        if lock:
            locked = conn.execute(_LOCK_ROW, key)
            # A statement of its own (sent with the lock, in the pipeline), so its snapshot is
            # taken once the lock is held: it sees every record the previous holder committed.
            last_record = conn.execute(_LAST_RECORD, key)
            row, last = locked.fetchone(), last_record.fetchone()
            if row is not None:
                row = (*row, *(last or (None, None)))
        else:
            row = conn.execute(_ROW_AND_LAST_RECORD, key).fetchone()  # one snapshot for both
        if row is None:
            raise self._missing()
        records, version, chain, last_seq, last_head = row
        records, version = int(records), int(version)
        if version > _KNOWN_FORMAT_VERSION:
            raise TranscriptVersionError(
                f"the session was written in transcript format version {version}, newer than "
                f"this runcontext reads ({_KNOWN_FORMAT_VERSION}); upgrade runcontext",
                path=self._name,
                line=1,
                kind="version",
            )
        anchor = _anchor_text(chain)
        self._check_anchor(records, anchor, last_seq, last_head)
        if last_seq is None:
            return 0
        self._known = (int(last_seq), anchor, bytes(last_head))
        return int(last_seq)

    def _check_anchor(
        self, records: int, chain: str | None, last_seq: int | None, last_head: bytes | None
    ) -> None:
        """Refuse a session row that does not describe the records stored: the row anchors the
        session's tail (the chain alone cannot show records dropped from the end), so a
        session whose row and records disagree is neither read nor appended to."""
        if last_seq is None:
            if not records:
                return  # they agree: nothing (a row made by hand; a reader finds no header)
            raise self._anchor_error(
                f"the session row counts {records} records, but none is stored (deleted by "
                "hand or by a partial restore); restore them from a backup, or delete the "
                "session",
                line=1,
            )
        if last_seq < records:
            missing = _span(last_seq + 1, records)
            raise self._anchor_error(
                f"the session row counts {records} records, but the last one stored is record "
                f"{last_seq} ({missing} missing: deleted by hand or by a partial restore); "
                "restore them from a backup",
                line=last_seq + 1,
            )
        if last_seq > records:
            raise self._anchor_error(
                f"the session row counts {records} records, but {_span(records + 1, last_seq)} "
                "stored after them (a write whose session-row update was lost, or records "
                "inserted by hand); if they are genuine, set the row's records and chain to "
                "the last record's",
                line=records + 1,
            )
        found = _line_chain(bytes(last_head) if last_head is not None else b"")
        if found != chain:
            raise self._anchor_error(
                f"the session row anchors chain {chain or 'none'}, but record {last_seq} has "
                f"chain {found or 'none'}: records were removed or rewritten",
                line=last_seq,
            )

    def _anchor_error(self, message: str, *, line: int) -> TranscriptDigestError:
        return TranscriptDigestError(message, path=self._name, line=line, kind="anchor")

    def _gap(self, last: int, seq: int) -> TranscriptDigestError:
        after = f"follows record {last}" if last else "is the first stored"
        missing = _span(last + 1, seq - 1)
        return TranscriptDigestError(
            f"{missing} missing (record {seq} {after}): records were deleted",
            path=self._name,
            line=seq,
            kind="chain",
        )

    def _write_params(self, first: int, lines: Sequence[bytes]) -> tuple[dict[str, Any], _Last]:
        """The parameters of a write of ``lines`` as records ``first``, ``first + 1``, …: the
        queryable columns of each, the new section bodies, the session row's new count and
        chain; and the last record as the write leaves it."""
        types, runs, times = _TextArray(), _Int8Array(), _TimestamptzArray()
        contexts, section_digests = _TextArray(), _TextArray()
        sizes, rows = _Int8Array(), _ByteaArray()
        digests, names, texts = _TextArray(), _TextArray(), _ByteaArray()
        chain: str | None = None
        for offset, line in enumerate(lines):
            seq = first + offset
            if not isinstance(line, bytes | bytearray | memoryview):
                raise TypeError(f"lines[{offset}] must be bytes, not {type(line).__name__}")
            # A line may come with its newline (as a file store writes it) or without (as
            # every store reads it); the row holds it without.
            line = bytes(line).removesuffix(b"\n")
            if b"\n" in line:
                raise TranscriptFormatError(
                    "a line holds a newline before its end (one record per line)",
                    path=self._name,
                    line=seq,
                )
            record = _parse(line, self._name, seq)
            kind = record.get("type")
            if not isinstance(kind, str):
                raise TranscriptFormatError(
                    "a record without a type", path=self._name, line=seq, kind="unknown-type"
                )
            chain = record.get("chain") if isinstance(record.get("chain"), str) else None
            stored, section_digest = line, None
            if kind == "section":
                section_digest, stored, text = self._split_section(record, line, seq)
                digests.append(section_digest)
                names.append(record["name"])
                texts.append(text)
            run = record.get("run") if kind == "run-context" else None
            context_digest = record.get("digest") if kind == "run-context" else None
            types.append(kind)
            runs.append(run if isinstance(run, int) and not isinstance(run, bool) else None)
            times.append(_time(record))
            contexts.append(context_digest if isinstance(context_digest, str) else None)
            section_digests.append(section_digest)
            sizes.append(len(line))
            rows.append(stored)
        last = first + len(lines) - 1
        params = {
            "tenant": self.tenant,
            "session": self.session_id,
            # `first` follows the last record the writer found stored (create(): none); the
            # row must count exactly the records before it, or a gap would be written.
            "after": first - 1,
            "records": last,
            "chain": chain,
            "digests": digests,
            "names": names,
            "texts": texts,
            "types": types,
            "runs": runs,
            "times": times,
            "contexts": contexts,
            "sections": section_digests,
            "sizes": sizes,
            "lines": rows,
        }
        return params, (last, chain, rows[-1][:82])

    def _write(
        self, conn: psycopg.Connection[Any], query: str, params: dict[str, Any]
    ) -> psycopg.Cursor[Any]:
        """Send one write (in a pipeline, without waiting for it); its cursor gives the rows
        the guard let through (0 or 1)."""
        return conn.execute(query.encode(), params)

    def _check_written(self, cursor: psycopg.Cursor[Any], first: int) -> None:
        row = cursor.fetchone()
        if row is None or row[0] != 1:
            raise self._anchor_error(
                f"the session row does not count the {first - 1} records stored before "
                "this write; nothing was written",
                line=first,
            )

    @contextmanager
    def _transaction(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """``BEGIN`` … ``COMMIT`` in pipeline mode, on a connection in autocommit mode: what
        the block sends goes with the ``COMMIT`` (a fetch inside the block waits for what
        was sent before it), so a block that fetches nothing is one round trip. Anything
        raised, at the ``COMMIT`` too, rolls the transaction back."""
        try:
            with conn.pipeline():
                conn.execute(b"BEGIN")
                if self.lock_timeout is not None:
                    conn.execute(
                        "SELECT set_config('lock_timeout', %s, true)",
                        (f"{max(1, round(self.lock_timeout * 1000))}ms",),
                    )
                yield
                conn.execute(b"COMMIT")
        except BaseException as error:
            if not conn.broken and conn.info.transaction_status != _IDLE:
                with suppress(psycopg.Error):
                    conn.execute(b"ROLLBACK")
            if isinstance(error, psycopg.errors.LockNotAvailable):
                raise TranscriptError(
                    f"another writer has held the session for more than {self.lock_timeout} s "
                    "(lock_timeout); try again later",
                    path=self._name,
                    line=None,
                ) from None
            raise

    def _split_section(
        self, record: dict[str, Any], line: bytes, seq: int
    ) -> tuple[str, bytes, bytes]:
        """A section record's digest, its line without ``text``, and the text's UTF-8 bytes.

        Only a body whose digest is right enters the tenant's shared table (so no writer can
        plant a wrong body under a digest another session will name), and only a line that the
        rebuild reproduces byte for byte is split."""
        name, text, section_digest = record.get("name"), record.get("text"), record.get("digest")
        if not (
            isinstance(name, str) and isinstance(text, str) and isinstance(section_digest, str)
        ):
            raise TranscriptFormatError(
                "a section record needs string name, text and digest",
                path=self._name,
                line=seq,
                kind="member-value",
            )
        if digest({"name": name, "text": text}) != section_digest:
            raise TranscriptDigestError(
                f"section {name!r}: its text does not have the recorded digest {section_digest}",
                path=self._name,
                line=seq,
                kind="section-digest",
            )
        if canonical_json(record) != line:
            raise TranscriptFormatError(
                "the section record is not canonical JSON",
                path=self._name,
                line=seq,
                kind="not-canonical",
            )
        stripped = dict(record)
        del stripped["text"]
        return section_digest, canonical_json(stripped), text.encode("utf-8")

    def _rebuild(self, seq: int, stored: bytes, text: bytes) -> bytes:
        record = _parse(stored, self._name, seq)
        try:
            record["text"] = text.decode("utf-8")
        except UnicodeDecodeError as error:
            # Refused as a file's line holding the same bytes would be.
            raise TranscriptFormatError(
                f"not JSON: invalid UTF-8 (byte {error.start} of the section body stored for "
                f"{record.get('digest')})",
                path=self._name,
                line=seq,
                kind="not-json",
            ) from None
        return canonical_json(record)


@contextmanager
def _autocommit(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """The connection in autocommit mode for the block (a pooled one may not be), so that
    its transactions are the store's own BEGIN and COMMIT, pipelined."""
    if conn.autocommit:
        yield
        return
    conn.autocommit = True
    try:
        yield
    finally:
        if not conn.broken:
            conn.autocommit = False


def _parse(line: bytes, name: str, seq: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except UnicodeDecodeError as error:
        raise TranscriptFormatError(
            f"not JSON: invalid UTF-8 (byte {error.start})", path=name, line=seq, kind="not-json"
        ) from None
    except json.JSONDecodeError as error:
        raise TranscriptFormatError(
            f"not a JSON record: {error}", path=name, line=seq, kind="not-json"
        ) from None
    if not isinstance(record, dict):
        raise TranscriptFormatError(
            "a record must be a JSON object", path=name, line=seq, kind="not-an-object"
        )
    return record


def _span(first: int, last: int) -> str:
    """``record 7 is`` or ``records 7 to 9 are``."""
    return f"record {first} is" if first == last else f"records {first} to {last} are"


def _anchor_text(value: object) -> str | None:
    """The session row's ``chain`` as text. A database whose encoding is SQL_ASCII returns
    text columns as bytes, which may then be anything: shown with their bad bytes escaped."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return None if value is None else str(value)


def _line_chain(head: bytes) -> str | None:
    """The ``chain`` a line begins with (``{"chain":"blake3:…",``: it sorts before every other
    member), or ``None`` for a line that does not begin with one (version 1, or damaged)."""
    if head.startswith(b'{"chain":"') and head[81:82] == b'"':
        return head[10:81].decode("utf-8", "backslashreplace")
    return None


def _time(record: dict[str, Any]) -> datetime | None:
    """A record's ``time`` for the queryable column (``None`` if absent or unparsable: the
    column is for queries; the line itself is what the session checks)."""
    value = record.get("time")
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None
