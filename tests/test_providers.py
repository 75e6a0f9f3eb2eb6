"""The clock, cwd, platform and instructions providers (git has its own file)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from runcontext.providers import (
    ClockProvider,
    Contribution,
    CwdProvider,
    InstructionsProvider,
    PlatformProvider,
    Provider,
    default_providers,
)
from runcontext.providers.builder import ContextBuilder


def later() -> float:
    """A deadline a minute from now, computed when the test runs (not at import)."""
    return time.monotonic() + 60


def fixed(moment: datetime) -> ClockProvider:
    return ClockProvider(now=lambda: moment)


# -- clock ------------------------------------------------------------------------------


def test_clock_date_with_english_weekday() -> None:
    contribution = fixed(datetime(2025, 3, 7, 14, 5, tzinfo=UTC)).collect(later())
    assert contribution == Contribution(facts=[("date", "2025-03-07 (Friday)")])


def test_clock_time_and_zone() -> None:
    zone = timezone(timedelta(hours=-3, minutes=-30), "NDT")
    moment = datetime(2024, 2, 29, 9, 7, tzinfo=zone)
    provider = ClockProvider(time=True, zone=True, now=lambda: moment)
    assert provider.collect(later()).facts == [
        ("date", "2024-02-29 (Thursday)"),
        ("time", "09:07"),
        ("timezone", "NDT (UTC-03:30)"),
    ]


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2024, 1, 1, tzinfo=UTC), "UTC+00:00"),
        (datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=45))), "UTC+05:45"),
        (datetime(2024, 1, 1), "unknown"),  # naive: no zone to tell
    ],
)
def test_clock_zone_forms(moment: datetime, expected: str) -> None:
    facts = dict(ClockProvider(zone=True, now=lambda: moment).collect(later()).facts)
    assert facts["timezone"] == expected


def test_clock_default_reads_the_local_clock() -> None:
    before = datetime.now().astimezone().date()
    [(name, value)] = ClockProvider().collect(later()).facts
    after = datetime.now().astimezone().date()
    assert name == "date"
    assert value is not None and value[:10] in (before.isoformat(), after.isoformat())


def test_clock_revision_names_its_options() -> None:
    revisions = {
        ClockProvider().revision,
        ClockProvider(time=True).revision,
        ClockProvider(zone=True).revision,
        ClockProvider(time=True, zone=True).revision,
    }
    assert len(revisions) == 4


# -- cwd and platform -------------------------------------------------------------------


def test_cwd_makes_the_path_absolute_without_resolving_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    assert CwdProvider("link").collect(later()).facts == [("cwd", str(tmp_path / "link"))]


def test_cwd_default_is_read_at_each_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = CwdProvider()
    monkeypatch.chdir(tmp_path)
    assert provider.collect(later()).facts == [("cwd", os.getcwd())]
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert provider.collect(later()).facts == [("cwd", os.getcwd())]


def test_platform_names_the_system_and_machine() -> None:
    [(name, value)] = PlatformProvider().collect(later()).facts
    assert name == "platform"
    assert (
        value == f"{sys.platform if sys.platform != 'win32' else 'windows'} ({platform.machine()})"
    )
    assert re.fullmatch(r"[a-z]+ \([A-Za-z0-9_]+\)", value)


def test_every_builtin_satisfies_the_protocol_with_a_revision(tmp_path: Path) -> None:
    for provider in default_providers(tmp_path):
        assert isinstance(provider, Provider)
        assert provider.revision.startswith(f"{provider.name}/")


# -- instructions -----------------------------------------------------------------------


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / ".git").mkdir()
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return path


def sections(path: Path, **options: object) -> list[tuple[str, str | None]]:
    contribution = InstructionsProvider(path, **options).collect(later())  # type: ignore[arg-type]
    assert contribution.facts == () and contribution.tail == ()
    return list(contribution.head)


def test_instructions_from_root_down_to_cwd_in_order(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Root rules.\n")
    (repo / "pkg" / "AGENTS.md").write_text("Package rules.\n")
    (cwd / "AGENTS.md").write_text("Sub rules.\n")
    (tmp_path / "AGENTS.md").write_text("Outside the repository: never read.\n")
    (repo / "other").mkdir()
    (repo / "other" / "AGENTS.md").write_text("A sibling: never read.\n")
    assert sections(cwd) == [
        (
            "instructions:AGENTS.md",
            "Instructions from AGENTS.md (they apply to the whole repository):\n\nRoot rules.\n",
        ),
        (
            "instructions:pkg/AGENTS.md",
            "Instructions from pkg/AGENTS.md (they apply to pkg/ and below):\n\nPackage rules.\n",
        ),
        (
            "instructions:pkg/sub/AGENTS.md",
            "Instructions from pkg/sub/AGENTS.md (they apply to pkg/sub/ and below):\n\n"
            "Sub rules.\n",
        ),
    ]


def test_instructions_outside_a_repository_read_only_the_directory(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("parent\n")
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("here\n")
    assert sections(cwd) == [
        (
            "instructions:AGENTS.md",
            "Instructions from AGENTS.md (they apply to the working directory):\n\nhere\n",
        )
    ]


def test_instructions_configurable_names_and_links_read_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("agents\n")
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")  # a common setup: one file, two names
    (repo / "sub").mkdir()
    (repo / "sub" / "CLAUDE.md").write_text("claude\n")
    names = [name for name, _ in sections(repo / "sub", names=("AGENTS.md", "CLAUDE.md"))]
    assert names == ["instructions:AGENTS.md", "instructions:sub/CLAUDE.md"]
    assert [name for name, _ in sections(repo / "sub", names=("CLAUDE.md",))] == [
        "instructions:CLAUDE.md",
        "instructions:sub/CLAUDE.md",
    ]


def test_instructions_in_a_linked_worktree_use_the_worktree_root(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs the git binary")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "T"}
    env |= {"GIT_COMMITTER_EMAIL": "t@e"}
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").write_text("committed rules\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    subprocess.run(
        ["git", "worktree", "add", "-q", str(tmp_path / "wt")], cwd=repo, env=env, check=True
    )
    [(name, text)] = sections(tmp_path / "wt")
    assert name == "instructions:AGENTS.md" and text is not None
    assert text.endswith("committed rules\n")


def test_instructions_strip_a_bom(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"\xef\xbb\xbfBOM first\n")
    [(_, text)] = sections(tmp_path)
    assert text is not None and text.endswith(":\n\nBOM first\n")


def test_instructions_budget_cuts_at_a_character_boundary(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    body = "é€😀" * 5000  # 2-, 3- and 4-byte characters: any cut point is tested
    (repo / "AGENTS.md").write_text(body)
    (repo / "sub" / "AGENTS.md").write_text("kept whole\n")
    for budget in (1000, 1001, 1002, 1003, 4096):
        contribution = InstructionsProvider(repo / "sub", max_bytes=budget).collect(later())
        [(name, text), (sub_name, sub_text)] = contribution.head
        assert name == "instructions:AGENTS.md" and text is not None
        assert sub_name == "instructions:sub/AGENTS.md" and sub_text is not None
        assert sub_text.endswith(":\n\nkept whole\n")  # the most specific file is whole
        assert len(text.encode()) + len(sub_text.encode()) <= budget
        content, marker = text.split("\n\n", 1)[1].rsplit("\n", 1)
        assert body.startswith(content) and len(content) > 0
        shown = len(content.encode())
        assert marker == (
            f"[runcontext: AGENTS.md cut here; {shown} of "
            f"{len(body.encode())} bytes shown, the instructions budget is {budget} bytes]"
        )
        assert contribution.diagnostics == [
            (
                "truncated",
                f"AGENTS.md: {shown} of {len(body.encode())} bytes kept, cut to fit the "
                f"{budget}-byte budget (files nearer the working directory come first)",
            ),
        ]


def test_instructions_within_budget_are_whole(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("a" * 1000)
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("b" * 1000)
    contribution = InstructionsProvider(repo / "sub", max_bytes=4096).collect(later())
    assert contribution.diagnostics == []
    [(_, root), (_, sub)] = contribution.head
    assert root is not None and root.endswith(":\n\n" + "a" * 1000)
    assert sub is not None and sub.endswith(":\n\n" + "b" * 1000)


def test_instructions_file_too_big_for_even_its_header_is_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("a" * 900)
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("b" * 900)
    contribution = InstructionsProvider(repo / "sub", max_bytes=1000).collect(later())
    assert [name for name, _ in contribution.head] == ["instructions:sub/AGENTS.md"]
    total = sum(len(text.encode()) for _, text in contribution.head if text)
    assert total <= 1000
    assert contribution.diagnostics == [
        (
            "truncated",
            "left out: AGENTS.md; the 1000-byte budget went to the files nearer the working "
            "directory",
        )
    ]


def test_instructions_huge_file_is_read_only_up_to_the_budget(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"x" * (10 * 1024 * 1024))
    [(_, text)] = sections(tmp_path)
    assert text is not None and len(text.encode()) <= 32 * 1024
    assert f"of {10 * 1024 * 1024} bytes shown" in text


def test_instructions_unreadable_files_are_diagnostics(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").mkdir()  # a directory by that name
    (repo / "a").mkdir()
    os.mkfifo(repo / "a" / "AGENTS.md")  # a FIFO must not block the read
    (repo / "a" / "b").mkdir()
    (repo / "a" / "b" / "AGENTS.md").write_bytes(b"\xff\xfe not UTF-8")
    (repo / "a" / "b" / "c").mkdir()
    (repo / "a" / "b" / "c" / "AGENTS.md").write_text("still read\n")
    contribution = InstructionsProvider(repo / "a" / "b" / "c").collect(later())
    assert [name for name, _ in contribution.head] == ["instructions:a/b/c/AGENTS.md"]
    kinds = [(kind, message.split(":")[0]) for kind, message in contribution.diagnostics]
    assert kinds == [
        ("unreadable", "AGENTS.md"),
        ("unreadable", "a/AGENTS.md"),
        ("unreadable", "a/b/AGENTS.md"),
    ]
    assert "not UTF-8" in contribution.diagnostics[2][1]


def test_instructions_permission_denied_is_a_diagnostic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chmod 0 does not stop root (CI runs as root), so the open itself is made to refuse.
    (tmp_path / "AGENTS.md").write_text("secret\n")
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any) -> int:
        if str(path).endswith("AGENTS.md"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse)
    contribution = InstructionsProvider(tmp_path).collect(later())
    assert contribution.head == []
    [(kind, message)] = contribution.diagnostics
    assert kind == "unreadable"
    assert message == "AGENTS.md: Permission denied"


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"names": "AGENTS.md"}, TypeError, "got the string"),
        ({"names": ("sub/AGENTS.md",)}, ValueError, "not a plain file name"),
        ({"names": ("",)}, ValueError, "not a plain file name"),
        ({"max_bytes": 10}, ValueError, "too small"),
    ],
)
def test_instructions_options_are_checked(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        InstructionsProvider(**options)  # type: ignore[arg-type]


def test_instructions_revision_names_its_options() -> None:
    assert InstructionsProvider().revision != InstructionsProvider(names=("CLAUDE.md",)).revision
    assert InstructionsProvider().revision != InstructionsProvider(max_bytes=1024).revision


def test_instructions_link_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    credentials = tmp_path / "credentials"
    credentials.write_text("aws_secret_access_key = " + "wJalrXUtnFEMI\n")
    (repo / "AGENTS.md").symlink_to(credentials)
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("inside rules\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "AGENTS.md").symlink_to(repo / "docs" / "rules.md")  # inside: fine
    contribution = InstructionsProvider(repo / "pkg").collect(later())
    assert [name for name, _ in contribution.head] == ["instructions:pkg/AGENTS.md"]
    assert "wJalrXUtnFEMI" not in repr(contribution)
    assert contribution.diagnostics == [
        ("unreadable", "AGENTS.md: a link to a file outside the repository; not read")
    ]


def test_instructions_link_through_a_linked_directory_outside_is_not_read(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "AGENTS.md").write_text("not this project's\n")
    (repo / "AGENTS.md").symlink_to(Path("..") / "elsewhere" / "AGENTS.md")
    [(kind, message)] = InstructionsProvider(repo).collect(later()).diagnostics
    assert kind == "unreadable" and "outside the repository" in message


def test_instructions_outside_a_repository_refuse_links_out_of_the_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "secret.txt").write_text("parent's file\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    contribution = InstructionsProvider(work).collect(later())
    assert contribution.head == []
    assert contribution.diagnostics == [
        ("unreadable", "AGENTS.md: a link to a file outside the directory; not read")
    ]


def test_instructions_in_a_repository_reached_through_a_link_are_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "real" / "repo")
    (repo / "AGENTS.md").write_text("rules\n")
    (tmp_path / "link").symlink_to(repo)  # the repository itself behind a link: inside
    [(name, text)] = sections(tmp_path / "link")
    assert name == "instructions:AGENTS.md" and text is not None and text.endswith("rules\n")


def test_instructions_declare_an_output_bound_that_covers_their_budget() -> None:
    assert InstructionsProvider(max_bytes=100_000).max_output_bytes == 200_000


def test_a_budget_above_the_builder_bound_is_not_refused(tmp_path: Path) -> None:
    body = "Keep every public function documented and tested.\n" * 1800  # about 90 KB
    (tmp_path / "AGENTS.md").write_text(body)
    providers = default_providers(tmp_path, instructions_max_bytes=128 * 1024)
    context, diagnostics = ContextBuilder(providers, deadline=10).build()
    assert len(body.encode()) > 64 * 1024  # over the builder's default bound
    assert diagnostics == ()
    [(name, text)] = context.head_sections
    assert name == "instructions:AGENTS.md" and text.endswith(body.rstrip())


def test_default_providers_clock_time_adds_time_and_zone(tmp_path: Path) -> None:
    clock = default_providers(tmp_path, clock_time=True)[0]
    assert clock.revision == ClockProvider(time=True, zone=True).revision
    names = [name for name, _ in clock.collect(later()).facts]  # type: ignore[union-attr]
    assert names == ["date", "time", "timezone"]
