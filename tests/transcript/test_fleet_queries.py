"""list_sessions and find_runs over PostgreSQL and over a directory of transcript files: the
same questions, the same answers."""

from __future__ import annotations

import importlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from chained import chain_lines
from fleet_data import T0, context, file_session, record

from runcontext import RunContext
from runcontext.transcript.fleet import find_runs, list_sessions

psycopg = (
    importlib.import_module("psycopg") if os.environ.get("CI") else pytest.importorskip("psycopg")
)

from runcontext.transcript.postgres import PostgresStore  # noqa: E402

DAY = timedelta(days=1)


def query(dsn: str, sql: str, *params: Any) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.encode(), params)


def age_pg(dsn: str, session_id: str, when: datetime) -> None:
    query(
        dsn, "UPDATE runcontext_sessions SET updated = %s WHERE session_id = %s", when, session_id
    )


def age_file(path: Path, when: datetime) -> None:
    os.utime(path, (when.timestamp(), when.timestamp()))


@pytest.fixture(params=["postgres", "files"])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Any]:
    """Three sessions, as (target, age: set a session's last write). ``a``: two runs told
    AGENTS.md v1 on main, then v2 on release (T0, T0 + 1 min); ``b``: one run, v2 on main, a
    day later; ``c``: no run. Last written: a at T0, b at T0 + 1 day, c at T0 + 2 days."""
    runs: dict[str, list[RunContext]] = {
        "a": [context(1, "main"), context(2, "release")],
        "b": [context(2, "main")],
        "c": [],
    }
    if request.param == "postgres":
        dsn = request.getfixturevalue("pg_dsn")
        for n, (name, contexts) in enumerate(runs.items()):
            tenant = "acme" if name != "b" else "zeta"
            record(dsn, contexts, start=T0 + n * DAY, session_id=name, tenant=tenant)
            age_pg(dsn, name, T0 + n * DAY)
        return dsn, lambda name, when: age_pg(dsn, name, when)
    for n, (name, contexts) in enumerate(runs.items()):
        path = file_session(tmp_path, name, contexts, start=T0 + n * DAY)
        age_file(path, T0 + n * DAY)
    return str(tmp_path), lambda name, when: age_file(tmp_path / name, when)


def test_sessions_newest_first_with_their_runs_and_bytes(fleet: tuple[str, Any]) -> None:
    target, _ = fleet
    found = list_sessions(target)
    assert [(s.session_id, s.runs, s.updated) for s in found] == [
        ("c", 0, T0 + 2 * DAY),
        ("b", 1, T0 + DAY),
        ("a", 2, T0),
    ]
    a = found[2]
    assert a.created == T0
    assert a.last_run == T0 + timedelta(minutes=1)
    assert found[0].last_run is None
    # bytes: the session's size as a transcript file, whichever store holds it.
    if target.startswith("postgresql://"):
        assert a.bytes == sum(len(line) + 1 for line in _lines(target, a.tenant, "a"))
        assert [s.tenant for s in found] == ["acme", "zeta", "acme"]
        assert a.address == f"{target}&session=a&tenant=acme"
    else:
        assert a.bytes == (Path(target) / "a").stat().st_size
        assert a.address == str(Path(target) / "a")
        assert {s.tenant for s in found} == {None}


def _lines(dsn: str, tenant: str | None, session_id: str) -> list[bytes]:
    from runcontext.transcript.store import read_all

    with PostgresStore(dsn, session_id, tenant=tenant) as store:
        return read_all(store)


def test_sessions_filtered_by_last_write_and_limited(fleet: tuple[str, Any]) -> None:
    target, _ = fleet
    assert [s.session_id for s in list_sessions(target, since=T0 + DAY)] == ["c", "b"]
    assert [s.session_id for s in list_sessions(target, until=T0 + DAY)] == ["b", "a"]
    assert [s.session_id for s in list_sessions(target, since=T0 + DAY, until=T0 + DAY)] == ["b"]
    assert [s.session_id for s in list_sessions(target, limit=1)] == ["c"]
    assert list_sessions(target, since=T0 + 3 * DAY) == []


def test_sessions_of_one_tenant(pg_dsn: str) -> None:
    for name, tenant in (("a", "acme"), ("b", "zeta"), ("c", "acme")):
        record(pg_dsn, [context(1, "main")], session_id=name, tenant=tenant)
    assert sorted(s.session_id for s in list_sessions(pg_dsn, tenant="acme")) == ["a", "c"]
    # The URI's ?tenant= is the same filter.
    assert [s.session_id for s in list_sessions(pg_dsn + "&tenant=zeta")] == ["b"]
    with pytest.raises(ValueError, match="tenant='acme' differs from the DSN's tenant='zeta'"):
        list_sessions(pg_dsn + "&tenant=zeta", tenant="acme")


def test_find_by_section_digest_name_fact_and_time(fleet: tuple[str, Any]) -> None:
    target, _ = fleet
    v1, v2 = (context(n, "x").sections[0].digest for n in (1, 2))

    def runs(**criteria: Any) -> list[tuple[str, int]]:
        return [(r.session_id, r.run) for r in find_runs(target, **criteria)]

    assert runs(section_digest=v2) == [("b", 1), ("a", 2)]
    assert runs(section_digest=v1) == [("a", 1)]
    assert runs(section_name="AGENTS.md") == [("b", 1), ("a", 2), ("a", 1)]
    assert runs(section_name="notes") == []
    assert runs(facts={"branch": "main"}) == [("b", 1), ("a", 1)]
    assert runs(facts={"branch": "main"}, section_digest=v2) == [("b", 1)]
    assert runs(facts={"branch": "release", "other": "x"}) == []
    # A fact's name and value are not interchangeable.
    assert runs(facts={"main": "branch"}) == []
    assert runs(since=T0 + timedelta(seconds=30), until=T0 + DAY - timedelta(seconds=1)) == [
        ("a", 2)
    ]
    assert runs(limit=1) == [("b", 1)]
    found = find_runs(target, section_digest=v1)[0]
    assert found.time == T0
    assert found.digest == context(1, "main").digest


def test_find_narrowed_to_a_tenant_or_a_session(pg_dsn: str) -> None:
    record(pg_dsn, [context(1, "main")], session_id="a", tenant="acme")
    record(pg_dsn, [context(1, "main")], session_id="a", tenant="zeta")
    record(pg_dsn, [context(1, "main")], session_id="b", tenant="zeta")
    found = find_runs(pg_dsn, facts={"branch": "main"}, tenant="zeta")
    assert sorted((r.tenant, r.session_id) for r in found) == [("zeta", "a"), ("zeta", "b")]
    found = find_runs(pg_dsn + "&session=a", facts={"branch": "main"})
    assert sorted((r.tenant, r.session_id) for r in found) == [("acme", "a"), ("zeta", "a")]


def test_find_in_one_transcript_file(tmp_path: Path) -> None:
    path = file_session(tmp_path, "t.jsonl", [context(1, "main"), context(1, "release")])
    assert [r.run for r in find_runs(path, facts={"branch": "release"})] == [2]


def test_records_of_types_a_query_does_not_know_are_passed_over(
    pg_dsn: str, tmp_path: Path
) -> None:
    # Another record type (a later format's compaction, say) among the runs breaks nothing.
    from runcontext.transcript.store import read_all

    record(pg_dsn, [context(1, "main")], session_id="s")
    with PostgresStore(pg_dsn, "s") as store:
        lines = read_all(store)
        extra = chain_lines([{"type": "compaction", "time": "2026-12-01T09:05:00Z"}], lines[-1])
        store.append(extra)
    assert [r.run for r in find_runs(pg_dsn, facts={"branch": "main"})] == [1]
    assert [s.runs for s in list_sessions(pg_dsn)] == [1]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in [*lines, *extra]))
    assert [r.run for r in find_runs(path, facts={"branch": "main"})] == [1]
    assert [s.runs for s in list_sessions(tmp_path)] == [1]


def test_a_directory_lists_only_transcripts(tmp_path: Path) -> None:
    file_session(tmp_path, "t.jsonl", [context(1, "main")])
    (tmp_path / "notes.txt").write_text("not a transcript\n")
    (tmp_path / "data.jsonl").write_text('{"type": "header"}\n')  # not a transcript header
    (tmp_path / "sub").mkdir()
    file_session(tmp_path / "sub", "deeper.jsonl", [context(1, "main")])
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "t.jsonl")
    (tmp_path / ".t.jsonl.0123.tmp").write_bytes((tmp_path / "t.jsonl").read_bytes())
    assert [s.session_id for s in list_sessions(tmp_path)] == ["t.jsonl"]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"limit must be from 1 to 100000, not 0"):
        list_sessions(tmp_path, limit=0)
    with pytest.raises(ValueError, match="since must be an aware datetime"):
        list_sessions(tmp_path, since=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match=r"since \(2026-01-02T00:00:00\+00:00\) is after until"):
        find_runs(tmp_path, since=datetime(2026, 1, 2, tzinfo=UTC), until=T0 - 365 * DAY)
    with pytest.raises(ValueError, match="tenant is for a PostgreSQL URI"):
        list_sessions(tmp_path, tenant="acme")
    with pytest.raises(FileNotFoundError, match=r"no such directory: .*nowhere"):
        list_sessions(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="facts must map str names to str values"):
        find_runs(tmp_path, facts={"n": 1})  # type: ignore[dict-item]
