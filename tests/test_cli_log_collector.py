"""`runcontext log` pauses the garbage collector while it reads and lists (the collector walked
every run's tuples again at each older-generation collection) and leaves it as it found it,
whether the command succeeds or fails: a program calling ``main`` keeps its collector."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from runcontext import RunContext
from runcontext.cli import main
from runcontext.transcript import Session


def _transcript(path: Path) -> Path:
    with Session.create(path, [{"role": "user", "content": "hi"}]) as session:
        session.record_run([{"role": "user", "content": "hi"}], RunContext(facts=[("a", "b")]))
    return path


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], enabled: bool
) -> None:
    path = _transcript(tmp_path / "t.jsonl")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert main(["log", str(path)]) == 0
        assert gc.isenabled() is enabled
        assert main(["log", "--run", "9", str(path)]) == 1  # an error: no run 9
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    out, err = capsys.readouterr()
    assert out.startswith("run 1  ") and "no run 9" in err


def test_the_collector_runs_while_a_listing_is_not_being_made(tmp_path: Path) -> None:
    path = _transcript(tmp_path / "t.jsonl")
    seen: list[bool] = []
    original = Session.open

    def spy(*args: object, **kwargs: object) -> Session:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Session, "open", staticmethod(spy))
        assert main(["log", str(path)]) == 0
    assert seen == [False]  # paused while the transcript was read
    assert gc.isenabled()
