"""The instructions budget: the most specific files first, and no secret split by the cut.

With a 5.5 MB root AGENTS.md, ``sub/AGENTS.md`` (the file about where the agent works) must
still be shown whole within the 32 KiB budget; and a cut must never leave part of a secret
(19 of an AWS key's 20 characters are no longer recognisable as a key) for the model to read.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from runcontext.providers import InstructionsProvider
from runcontext.providers.builder import ContextBuilder
from runcontext.providers.instructions import MAX_DIRECTORIES

# An access key id of the real shape (AWS's documented AKIAIOSFODNN7EXAMPLE is a placeholder,
# which redaction leaves alone on purpose: docs/PROVIDERS.md, Redaction).
KEY = "AKIA" + "Q3EGUK5T2ZJ6NW7R"


def make_repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return path


def collect(path: Path, **options: object) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    contribution = InstructionsProvider(path, **options).collect(time.monotonic() + 10)  # type: ignore[arg-type]
    head = [(name, text) for name, text in contribution.head if text is not None]
    return head, list(contribution.diagnostics)


def test_a_huge_root_file_is_cut_and_the_specific_one_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("Root rule, repeated.\n" * 270_000)  # about 5.5 MB
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("The rules for sub/ that matter most here.\n")
    head, diagnostics = collect(repo / "sub")
    # Rendered root first (general before specific), the specific file whole.
    assert [name for name, _ in head] == ["instructions:AGENTS.md", "instructions:sub/AGENTS.md"]
    assert head[1][1].endswith(":\n\nThe rules for sub/ that matter most here.\n")
    assert "[runcontext: AGENTS.md cut here;" in head[0][1]
    assert sum(len(text.encode()) for _, text in head) <= 32 * 1024
    [(kind, message)] = diagnostics
    assert kind == "truncated"
    assert message.startswith("AGENTS.md: ") and "of 5670000 bytes kept" in message


def test_the_budget_goes_to_the_nearest_files_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("r" * 3000)
    (repo / "pkg" / "AGENTS.md").write_text("p" * 600)
    (repo / "pkg" / "sub" / "AGENTS.md").write_text("s" * 200)
    head, diagnostics = collect(repo / "pkg" / "sub", max_bytes=1050)
    # sub and pkg fit whole; what is left of the budget is too little for the root's header
    # and marker, so the root, the least specific, is the one left out.
    assert [name for name, _ in head] == [
        "instructions:pkg/AGENTS.md",
        "instructions:pkg/sub/AGENTS.md",
    ]
    assert head[0][1].endswith("p" * 600) and head[1][1].endswith("s" * 200)
    assert diagnostics == [
        (
            "truncated",
            "left out: AGENTS.md; the 1050-byte budget went to the files nearer the working "
            "directory",
        )
    ]
    head, diagnostics = collect(repo / "pkg" / "sub", max_bytes=1500)
    assert head[0][0] == "instructions:AGENTS.md"  # now cut to fit
    assert [kind for kind, _ in diagnostics] == ["truncated"]
    assert diagnostics[0][1].startswith("AGENTS.md: ")


def test_no_cut_leaves_part_of_a_secret(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    prose = "Keep the tests green and the docs honest. " * 40
    (repo / "AGENTS.md").write_text(prose + KEY + " is the deploy key.\n" + prose)
    offset = len(prose)
    budgets = []
    header = len("Instructions from AGENTS.md (they apply to the whole repository):\n\n")
    marker = len(
        "[runcontext: AGENTS.md cut here; 1234 of 3533 bytes shown, the instructions budget "
        "is 1234 bytes]"
    )
    # Budgets whose cut lands anywhere from just before the key to just after it.
    center = header + offset + marker + 1
    budgets = list(range(center - 4, center + len(KEY) + 4))
    straddled = 0
    for budget in budgets:
        head, diagnostics = collect(repo, max_bytes=budget)
        [(_, text)] = head
        body = text.split("\n\n", 1)[1].rsplit("\n", 1)[0]
        assert KEY in body or "AKIA" not in body, budget
        if KEY not in body and "secret (aws-access-key)" in diagnostics[0][1]:
            straddled += 1
        context, built = ContextBuilder([InstructionsProvider(repo, max_bytes=budget)]).build()
        assert "AKIA" not in (context.head_text or ""), budget
        assert "AKIA" not in repr(built)
    assert straddled >= len(KEY) - 2  # the cut fell inside the key and was moved back


def test_a_directory_name_the_core_refuses_is_a_diagnostic(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("root\n")
    odd = repo / "a\nb"
    odd.mkdir()
    (odd / "AGENTS.md").write_text("odd\n")
    head, diagnostics = collect(odd)
    assert [name for name, _ in head] == ["instructions:AGENTS.md"]
    [(kind, message)] = diagnostics
    assert kind == "unreadable" and "cannot name a section" in message


def test_at_most_64_directories_are_searched_the_root_and_the_nearest(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("root\n")
    directory = repo
    for _ in range(MAX_DIRECTORIES + 10):
        directory = directory / "d"
        directory.mkdir()
        (directory / "AGENTS.md").write_text("level\n")
    head, diagnostics = collect(directory, max_bytes=1 << 20)
    assert len(head) == MAX_DIRECTORIES
    assert head[0][0] == "instructions:AGENTS.md"
    assert head[-1][0] == "instructions:" + "d/" * (MAX_DIRECTORIES + 10) + "AGENTS.md"
    [(kind, message)] = diagnostics
    assert kind == "truncated" and message.startswith("11 directories between the repository")


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=4),
    budget=st.integers(min_value=256, max_value=6000),
)
def test_the_budget_holds_and_the_nearest_file_wins(sizes: list[int], budget: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        repo = make_repo(Path(scratch) / "repo")
        directory = repo
        for level, size in enumerate(sizes):
            if level:
                directory = directory / f"l{level}"
                directory.mkdir()
            (directory / "AGENTS.md").write_text("€" * (size // 3) + "x" * (size % 3))
        head, _ = collect(directory, max_bytes=budget)
        assert sum(len(text.encode()) for _, text in head) <= budget
        nearest = (directory / "AGENTS.md").read_text()
        shown = (directory / "AGENTS.md").relative_to(repo).as_posix()
        header = 2 * len(shown) + 49  # "Instructions from X (they apply to Y/ and below):"
        if nearest and header + 80 + len(nearest.encode()) <= budget:
            assert head[-1][1].endswith(nearest)  # whole, however big the files above it
