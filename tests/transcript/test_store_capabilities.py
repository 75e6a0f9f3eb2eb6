"""A store is used by what it can do, never by its class: one that implements only the
required protocol (no file, no torn tails, no chunks) creates, appends, records and reads like
the file store, and the session asks the file store for its capabilities through the same
protocols."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from runcontext import RunContext
from runcontext.transcript import Session
from runcontext.transcript.files import FileStore
from runcontext.transcript.memory import BytesStore
from runcontext.transcript.store import (
    AppendCheckedStore,
    ChunkedStore,
    OpenedStore,
    PathStore,
    TornTailStore,
    TranscriptStore,
)

SEED = {"role": "user", "content": "Fix the test."}


class ListStore:
    """The least a store can be: lines in a list, cursors are indices."""

    def __init__(self) -> None:
        self.lines: list[bytes] | None = None
        self.appends = 0

    @property
    def name(self) -> str:
        return "list://session"

    def create(self, lines: Sequence[bytes]) -> None:
        if self.lines is not None:
            raise FileExistsError(self.name)
        self.lines = [line.rstrip(b"\n") for line in lines]

    def read(self, cursor: object | None) -> tuple[list[bytes], object | None]:
        assert self.lines is not None
        start = 0 if cursor is None else int(cursor)  # type: ignore[call-overload]
        return self.lines[start:], len(self.lines)

    @contextmanager
    def writing(self) -> Iterator[None]:
        yield

    def append(self, lines: Sequence[bytes]) -> object | None:
        assert self.lines is not None
        self.appends += 1
        self.lines.extend(line.rstrip(b"\n") for line in lines)
        return len(self.lines)

    def close(self) -> None:
        pass


def test_a_store_with_only_the_required_methods_does_everything() -> None:
    store = ListStore()
    assert isinstance(store, TranscriptStore)
    assert not isinstance(store, (OpenedStore, TornTailStore, ChunkedStore, PathStore))
    context = RunContext(head_sections=[("rules", "Use tabs.")], facts=[("date", "d1")])
    with Session.create(store, [SEED]) as session:
        run = session.record_run([SEED], context, {"role": "assistant", "content": "ok"})
        assert session.torn is None and session.path == Path("list://session")
    assert store.appends == 1 and store.lines is not None and len(store.lines) == 5
    with Session.open(store) as reopened:
        assert reopened.runs() == [run]
        assert reopened.messages() == [SEED, {"role": "assistant", "content": "ok"}]


def test_the_file_store_offers_its_capabilities_through_the_protocols(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "t.jsonl")
    for capability in (OpenedStore, TornTailStore, ChunkedStore, PathStore, AppendCheckedStore):
        assert isinstance(store, capability), capability.__name__
    in_memory = BytesStore(b"", name="<bytes>", max_line_bytes=100)
    assert isinstance(in_memory, TornTailStore) and not isinstance(in_memory, PathStore)
