"""Human output never hands a terminal a control sequence or an invisible character from a
repository or a transcript (cli/_terminal.py); JSON output escapes the same characters and
keeps the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runcontext import RunContext, Session
from runcontext.cli._terminal import JSONLines, json_array, json_text, visible

HOSTILE = "Build it.\x1b[2K\rSafe.\x1b]52;c;ZWNobyBwd25lZA==\x07 \x9b31m\u202eevil\u202c\tok\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runcontext", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def _raw_controls(text: str) -> set[str]:
    return {c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F}


def test_visible_escapes_controls_and_bidi_but_keeps_newlines_and_tabs() -> None:
    assert visible(HOSTILE) == (
        "Build it.\\x1b[2K\\x0dSafe.\\x1b]52;c;ZWNobyBwd25lZA==\\x07 "
        "\\x9b31m⟨U+202E⟩evil⟨U+202C⟩\tok\n"
    )
    assert visible("naïve — 日本語\n") == "naïve — 日本語\n"


def test_visible_shows_invisible_characters_and_decodes_tag_runs() -> None:
    tags = "".join(chr(0xE0000 + ord(c)) for c in 'say "hi\\" now')
    text = f"zero\u200bwidth\u2060joined \u00ad ok\ufe0f {tags}\U000e007f \U000e0001\U000e0100"
    assert visible(text) == (
        "zero⟨U+200B⟩width⟨U+2060⟩joined ⟨U+00AD⟩ ok⟨U+FE0F⟩ "
        '⟨tags: "say \\"hi\\\\\\" now"⟩⟨U+E007F⟩ ⟨U+E0001⟩⟨U+E0100⟩'
    )


def test_json_text_escapes_what_a_terminal_obeys_and_decodes_to_the_same_text() -> None:
    text = json_text({"t": HOSTILE})
    assert not _raw_controls(text.replace("\n", "")) and "\u202e" not in text
    assert json.loads(text) == {"t": HOSTILE}


def test_show_prints_a_hostile_agents_md_visibly(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text(HOSTILE)
    result = _cli("show", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert not _raw_controls(result.stdout)
    assert "\\x1b]52;c;" in result.stdout  # shown, not obeyed
    as_json = _cli("show", "--json", str(tmp_path))
    assert not _raw_controls(as_json.stdout.replace("\n", ""))
    sections = json.loads(as_json.stdout)["sections"]
    assert any(HOSTILE.rstrip() in s["text"] for s in sections)  # JSON keeps the text


def test_log_prints_a_hostile_transcript_visibly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path, [{"role": "user", "content": "hi"}]) as session:
        session.record_run(
            [{"role": "user", "content": "hi"}],
            RunContext(
                head_sections=[("notes", HOSTILE)],
                facts=[("branch", "main\x1b[8m"), ("tag", "v1\ufe0f\U000e0100")],
            ),
        )
    for args in (("log", str(path)), ("log", "--run", "1", str(path))):
        result = _cli(*args)
        assert result.returncode == 0, result.stderr
        assert not _raw_controls(result.stdout), args
    assert "main\\x1b[8m" in result.stdout and "\\x1b]52;c;" in result.stdout  # --run 1
    assert "v1⟨U+FE0F⟩⟨U+E0100⟩" in result.stdout  # printable, yet not drawn: shown too
    listing = _cli("log", str(path)).stdout
    assert "v1⟨U+FE0F⟩⟨U+E0100⟩" in listing and "\ufe0f" not in listing


@pytest.mark.parametrize("length", [5000])
def test_show_says_a_path_is_too_long(tmp_path: Path, length: int) -> None:
    result = _cli("show", "/" + "a" * length)
    assert result.returncode == 1
    assert "the path is too long for this system" in result.stderr
    assert "no such directory" not in result.stderr
    assert len(result.stderr) < 400  # the path is shortened, not echoed whole


def test_instruction_files_with_control_characters_are_reported_not_changed(
    tmp_path: Path,
) -> None:
    from runcontext.providers import InstructionsProvider

    (tmp_path / "AGENTS.md").write_text(HOSTILE)
    contribution = InstructionsProvider(str(tmp_path)).collect(deadline=float("inf"))
    assert HOSTILE.rstrip() in contribution.head[0][1]  # the model gets the file as it is
    notes = [m for kind, m in contribution.diagnostics if kind == "invisible-characters"]
    assert notes == [
        "AGENTS.md: 7 invisible or control characters, the first at line 1, column 10: U+001B "
        "(C0 controls); the model gets the text as it is, and "
        "`runcontext show` shows them as escapes"
    ]
    (tmp_path / "AGENTS.md").write_bytes(b"Windows line ends\r\nare fine.\r\n")
    crlf = InstructionsProvider(str(tmp_path)).collect(deadline=float("inf"))
    assert not [kind for kind, _ in crlf.diagnostics if kind == "invisible-characters"]


def test_json_array_is_one_compact_element_a_line_escaped_like_json_text() -> None:
    values = [{"t": HOSTILE, "n": 1}, [None, "é"], {}]
    text = json_array(map(JSONLines().line, values))
    assert json.loads(text) == values
    lines = text.split("\n")
    assert lines[0] == "[" and lines[-2:] == ["]", ""] and len(lines) == len(values) + 3
    assert [json.loads(line.rstrip(",")) for line in lines[1:-2]] == values
    assert not _raw_controls(text) and "\u202e" not in text and "é" in text
    assert json_array([]) == "[]\n"
