"""PostgreSQL for the store tests: a server from ``$RUNCONTEXT_TEST_POSTGRES_DSN`` and a fresh
database for each test.

Start one with ``eval "$(.ci/postgres.sh start)"`` (``.ci/run`` does). Without it the
PostgreSQL tests skip, saying so in one line of the summary (``SKIPPED [N] ...``, however many
tests that is), unless ``CI`` is set: in CI a missing server or a missing psycopg is a failure,
never a silent skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

DSN_VARIABLE = "RUNCONTEXT_TEST_POSTGRES_DSN"
SKIP_PREFIX = "PostgreSQL tests need a server: "
NO_PSYCOPG = "psycopg is not installed (pip install -e '.[postgres]')"


def _message(reason: str) -> str:
    return (
        f"{SKIP_PREFIX}{reason}. Start one with "
        f'`eval "$(.ci/postgres.sh start)"`, which sets {DSN_VARIABLE}'
    )


def _unavailable(reason: str) -> None:
    message = _message(reason)
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this fails rather than skips)", pytrace=False)
    pytest.skip(message)


# pytest reports a skip raised in a fixture at each test's own line, so the summary would
# list every PostgreSQL test once. These skips share one reason: report them all at
# `_unavailable`, and pytest's summary folds them into one line with their count.
_SKIP_LOCATION = (__file__, _unavailable.__code__.co_firstlineno)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and SKIP_PREFIX in longrepr[2]:
        report.longrepr = (*_SKIP_LOCATION, longrepr[2])
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A PostgreSQL test module skipped for want of psycopg joins the same summary line."""
    report = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and "'psycopg'" in longrepr[2]:
        report.longrepr = (*_SKIP_LOCATION, f"Skipped: {_message(NO_PSYCOPG)}")
    return report


def with_dbname(dsn: str, dbname: str) -> str:
    """``dsn`` naming the database ``dbname`` instead (a URI stays a URI)."""
    if dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(dsn)
        return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, ""))
    import psycopg.conninfo

    return psycopg.conninfo.make_conninfo(dsn, dbname=dbname)


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The DSN of the test server (a URI naming its maintenance database)."""
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        _unavailable(f"{DSN_VARIABLE} is not set")
        raise AssertionError("unreachable")
    try:
        import psycopg
    except ImportError:
        _unavailable(NO_PSYCOPG)
        raise AssertionError("unreachable") from None
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as error:
        _unavailable(f"cannot connect to {dsn}: {str(error).strip()}")
    return dsn


@pytest.fixture
def pg_database(postgres_server: str) -> Iterator[str]:
    """A DSN for a new, empty database, dropped after the test."""
    import psycopg

    name = f"rc_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield with_dbname(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


@pytest.fixture
def pg_dsn(pg_database: str) -> str:
    """A DSN for a new database holding the runcontext schema."""
    from runcontext.transcript.postgres import init_schema

    init_schema(pg_database)
    return pg_database
