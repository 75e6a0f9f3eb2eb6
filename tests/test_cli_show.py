"""``runcontext show``: in a repository, outside one, detached, in a worktree; --json, --request."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext, digest
from runcontext.cli import show as cli_show

from gitutil import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "AGENTS.md").write_text("Run `make test` before committing.\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="runcontext")
    cli_show.register(parser.add_subparsers())
    return parser.parse_args(["show", *argv])


def show(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    # A generous deadline: on a loaded machine the default 0.25 s could drop the git facts.
    args = parse(*argv, "--deadline", "5")
    assert args.handler(args) == 0
    return capsys.readouterr().out


def show_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(show(capsys, *argv, "--json"))
    return document


def test_human_output_in_a_repository(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = show(capsys, str(repo))
    head = git(repo, "rev-parse", "HEAD")
    document = show_json(capsys, str(repo))
    assert f"--- head message (system, {len(document['head'].encode())} bytes) ---\n" in out
    assert document["head"] in out and document["tail"] in out
    assert "Run `make test` before committing." in document["head"]
    assert f"- cwd: {repo}\n" in document["tail"]
    assert f"- git branch: main\n- git commit: {head[:12]}\n" in document["tail"]
    assert f"digest    {document['digest']}\n" in out
    # The revision says what it is: a number alone on a line would explain nothing.
    assert (
        f"revision  {document['revision']}  (of the builder: its providers, their versions and "
        "options)\n"
    ) in out
    section = document["sections"][0]
    assert section["name"] == "instructions:AGENTS.md"
    assert f"  head  instructions:AGENTS.md  {section['bytes']:>6} B  {section['digest']}" in out
    assert out.endswith("diagnostics: none\n")


def test_json_is_consistent_with_the_context_it_describes(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = show_json(capsys, str(repo))
    assert set(document) == {
        "directory", "digest", "revision", "head", "tail", "facts", "sections", "diagnostics"
    }  # fmt: skip
    rebuilt = RunContext(
        head_sections=[
            (s["name"], s["text"]) for s in document["sections"] if s["position"] == "head"
        ],
        facts=[tuple(fact) for fact in document["facts"]],
        tail_sections=[
            (s["name"], s["text"]) for s in document["sections"] if s["position"] == "tail"
        ],
    )
    assert rebuilt.digest == document["digest"]
    assert rebuilt.head_text == document["head"] and rebuilt.tail_text == document["tail"]
    for section in document["sections"]:
        assert section["digest"] == digest({"name": section["name"], "text": section["text"]})
        assert section["bytes"] == len(section["text"].encode())
    assert [name for name, _ in document["facts"]] == [
        "date", "cwd", "platform", "git branch", "git commit"
    ]  # fmt: skip
    assert document["directory"] == str(repo) and document["diagnostics"] == []


def test_outside_a_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = show_json(capsys, str(tmp_path))
    assert [name for name, _ in document["facts"]] == ["date", "cwd", "platform"]
    assert document["head"] is None and document["sections"] == []
    assert document["diagnostics"] == []
    assert "--- head message: none ---" in show(capsys, str(tmp_path))


def test_no_commits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    facts = dict(show_json(capsys, str(tmp_path))["facts"])
    assert facts["git branch"] == "trunk" and "git commit" not in facts


def test_detached(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(repo, "checkout", "-q", "--detach")
    facts = dict(show_json(capsys, str(repo))["facts"])
    assert facts["git branch"] == "detached"
    assert facts["git commit"] == git(repo, "rev-parse", "--short=12", "HEAD")


def test_linked_worktree_subdirectory(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    (worktree / "pkg").mkdir()
    document = show_json(capsys, str(worktree / "pkg"))
    facts = dict(document["facts"])
    assert facts["git branch"] == "side" and facts["cwd"] == str(worktree / "pkg")
    assert [s["name"] for s in document["sections"]] == ["instructions:AGENTS.md"]


def test_default_directory_is_the_cwd(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    assert show_json(capsys)["directory"] == str(repo)


def test_options_reach_the_providers(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "CLAUDE.md").write_text("x" * 2000)
    document = show_json(
        capsys,
        str(repo),
        "--instructions", "CLAUDE.md",
        "--instructions-max-bytes", "500",
        "--time",
        "--git-dirty",
    )  # fmt: skip
    assert [s["name"] for s in document["sections"]] == ["instructions:CLAUDE.md"]
    facts = dict(document["facts"])
    assert {"time", "timezone"} <= set(facts)
    assert facts["git changes"] == "1 path"
    assert [(d["provider"], d["kind"]) for d in document["diagnostics"]] == [
        ("instructions", "truncated")
    ]


def test_secrets_are_redacted_and_reported(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "AGENTS.md").write_text("Deploy with DEPLOY_PASSWORD=" + "hunter2\n")
    out = show(capsys, str(repo))
    assert "hunter2" not in out
    assert "DEPLOY_PASSWORD=[redacted]" in out
    assert "  instructions: redacted: head section 'instructions:AGENTS.md'" in out


def test_request_openai(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = json.loads(show(capsys, str(repo), "--request", "openai"))
    document = show_json(capsys, str(repo))
    assert body == {
        "model": "<model>",
        "messages": [
            {"role": "system", "content": document["head"]},
            {"role": "user", "content": cli_show.EXAMPLE_MESSAGE},
            {"role": "system", "content": document["tail"]},
        ],
    }


def test_request_anthropic(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = json.loads(show(capsys, str(repo), "--request", "anthropic", "--model", "claude-x"))
    document = show_json(capsys, str(repo))
    assert body["model"] == "claude-x" and body["max_tokens"] > 0
    assert [block["text"] for block in body["system"]] == [document["head"]]
    first, tail = body["messages"]
    assert first["role"] == "user" and first["content"][0]["text"] == cli_show.EXAMPLE_MESSAGE
    assert tail == {"role": "user", "content": [{"type": "text", "text": document["tail"]}]}


def test_request_diagnostics_go_to_stderr(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "AGENTS.md").write_text("password=" + "hunter2\n")
    args = parse(str(repo), "--request", "openai", "--deadline", "5")
    assert args.handler(args) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout stays one JSON document
    assert "runcontext show: instructions: redacted:" in captured.err


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    args = parse(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing: no such directory"):
        args.handler(args)


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    args = parse(str(tmp_path / "afile"))
    with pytest.raises(NotADirectoryError, match="afile: is not a directory"):
        args.handler(args)


def test_instructions_budget_above_the_builder_bound(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "Document every public function and keep it tested.\n" * 1800  # about 90 KB
    (repo / "AGENTS.md").write_text(body)
    document = show_json(capsys, str(repo), "--instructions-max-bytes", str(128 * 1024))
    assert document["diagnostics"] == []
    [section] = document["sections"]
    assert section["text"].endswith(body.rstrip())


def test_json_and_request_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="runcontext")
    cli_show.register(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["show", "--json", "--request", "openai"])
    assert "not allowed with argument" in capsys.readouterr().err
