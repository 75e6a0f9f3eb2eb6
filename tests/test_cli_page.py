"""``runcontext log TRANSCRIPT --html FILE``: the page's data, its escaping, its policy, the
option. tests/test_cli_page_browser.py loads the page in a browser."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from page_transcripts import (
    BIDI,
    IMG,
    JS_URL,
    LINE_SEPARATOR,
    SCRIPT_END,
    SECRET,
    hostile_transcript,
    long_transcript,
)

from runcontext import RunContext, Session, cli
from runcontext.cli import page


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return hostile_transcript(tmp_path / "hostile.jsonl")


def write(transcript: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = transcript.with_suffix(".html")
    assert cli.main(["log", str(transcript), "--html", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: ")
    return out.read_text(encoding="utf-8")


def embedded(text: str) -> dict[str, Any]:
    found = re.search(r'<script id=data type="application/json">(.*?)</script>', text, re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_nothing_in_the_transcript_can_end_an_element_or_add_one(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write(hostile, capsys)
    # Two script elements, the page's own: the data and the script.
    assert text.count("<script") == 2
    assert text.count("</script") == 2
    # Markup and JavaScript line terminators only as \u escapes; bidi controls as ⟨U+202E⟩.
    for raw in ("<img", "\u2028", "\u2029", "\u202e"):
        assert raw not in text, raw
    # The data decodes to what the transcript holds, made visible and redacted.
    data = embedded(text)
    assert SCRIPT_END in data["values"]
    assert JS_URL in data["values"]
    assert IMG in data["sectionNames"]
    assert "access⟨U+202E⟩evil⟨U+202C⟩ granted" in data["factNames"]
    assert BIDI not in data["factNames"]
    agents = data["sections"][0]["versions"][1]["text"]
    assert SCRIPT_END in agents and IMG in agents and LINE_SEPARATOR in agents
    assert "access⟨U+202E⟩evil⟨U+202C⟩ granted" in agents


def test_secrets_are_redacted_as_show_redacts_them_and_the_page_says_so(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write(hostile, capsys)
    assert SECRET not in text
    data = embedded(text)
    assert "token = [redacted]" in data["sections"][0]["versions"][1]["text"]
    assert data["redactions"] == 1
    assert "shown redacted, by the rules runcontext show" in text


def test_the_policy_allows_the_pages_own_script_and_style_and_nothing_else(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write(hostile, capsys)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert policy is not None
    script = re.search(r"<script>(.*?)</script>", text, re.S)
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert script is not None and style is not None

    def sha(body: str) -> str:
        return base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()

    assert policy.group(1) == (
        f"default-src 'none'; script-src 'sha256-{sha(script.group(1))}'; "
        f"style-src 'sha256-{sha(style.group(1))}'; img-src 'none'; base-uri 'none'; "
        "form-action 'none'"
    )
    # Nothing to fetch: no src, no external href, no stylesheet link.
    assert not re.search(r"\bsrc=", text.split('type="application/json">')[0])
    assert re.findall(r'href="([^"]*)"', text) == ["#timeline", "#facts", "#sections", "#events"]


def test_the_data_holds_the_runs_the_facts_over_time_and_each_sections_versions(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = embedded(write(hostile, capsys))
    assert [row[0] for row in data["runs"]] == [
        "2026-12-02T09:00:00Z",  # the session's creation took 1 December
        "2026-12-03T09:00:00Z",
        "2026-12-04T09:00:00Z",
    ]
    assert [row[2] for row in data["runs"]] == [2, 4, 6]  # messages each was sent with
    assert data["runs"][1][3]["billed"] == {
        "input": 1160,
        "output": 50,
        "cache_read": 800,
        "cache_write": 0,
    }
    names, values = data["factNames"], data["values"]
    facts = {names[f["name"]]: [[a, b, values[v]] for a, b, v in f["spans"]] for f in data["facts"]}
    assert facts["date"] == [[1, 1, "2026-12-01"], [2, 2, "2026-12-02"], [3, 3, "2026-12-03"]]
    assert facts["branch"] == [[1, 1, "main"], [2, 3, SCRIPT_END]]
    # Run 3's changes: the date only (kind, verb, name).
    assert data["runs"][2][6] == [["f", "c", names.index("date")]]
    agents = data["sections"][0]
    assert data["sectionNames"][agents["name"]] == "AGENTS.md"
    first, second = agents["versions"]
    assert (first["runs"], second["runs"]) == ([[1, 1]], [[2, 3]])
    assert first["diff"] is None
    assert second["diff"][0] == "@@ -1,2 +1,8 @@"
    assert f"+{SCRIPT_END}" in second["diff"] and "+token = [redacted]" in second["diff"]
    assert (second["position"], second["bytes"]) == (
        "head",
        len(hostile_agents_text(hostile).encode()),
    )
    assert data["events"] == []
    # Every message the runs were sent with, once.
    assert len(data["messages"]) == 6
    assert '"content": "step 0"' in data["messages"][1]


def hostile_agents_text(path: Path) -> str:
    with Session.open(path, writable=False) as session:
        return next(s.text for s in session.runs()[1].sections if s.name == "AGENTS.md")


def test_a_section_that_leaves_and_comes_back_unchanged_keeps_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    messages = [{"role": "user", "content": "hi"}]
    with_ci = RunContext(head_sections=[("ci", "green")])
    moved = RunContext(tail_sections=[("ci", "green")])
    with Session.create(path, messages) as session:
        for context in (with_ci, RunContext(), with_ci, moved):
            session.record_run(messages, context)
    data = embedded(write(path, capsys))
    versions = data["sections"][0]["versions"]
    assert [(v["position"], v["runs"]) for v in versions] == [
        ("head", [[1, 1], [3, 3]]),
        ("tail", [[4, 4]]),
    ]
    assert versions[1]["diff"] == []  # the same text, moved: the page says so


def test_a_long_version_is_not_diffed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    messages = [{"role": "user", "content": "hi"}]
    long = "".join(f"line {i}\n" for i in range(page.MAX_DIFF_LINES))
    with Session.create(path, messages) as session:
        session.record_run(messages, RunContext(head_sections=[("big", long)]))
        session.record_run(messages, RunContext(head_sections=[("big", long + "one more\n")]))
    versions = embedded(write(path, capsys))["sections"][0]["versions"]
    assert versions[1]["diff"] is None


def test_a_transcript_without_runs_gets_a_page_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path, [{"role": "user", "content": "hi"}]).close()
    data = embedded(write(path, capsys))
    assert (data["runs"], data["facts"], data["sections"], data["messages"]) == ([], [], [], [])


def test_a_long_transcript_interns_what_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = embedded(write(long_transcript(tmp_path / "t.jsonl", 120), capsys))
    assert len(data["runs"]) == 120
    assert len(data["factNames"]) == 2
    assert len(data["values"]) == 40 + 3  # 40 days, 3 branches
    agents = data["sections"][0]["versions"]
    assert len(agents) == 6  # run 1, then a line more at runs 2, 27, 52, 77, 102
    assert [v["runs"] for v in agents] == [
        [[1, 1]],
        [[2, 26]],
        [[27, 51]],
        [[52, 76]],
        [[77, 101]],
        [[102, 120]],
    ]
    assert agents[5]["diff"] == [
        "@@ -42,3 +42,4 @@",
        " Added at run 25.",
        " Added at run 50.",
        " Added at run 75.",
        "+Added at run 100.",
    ]


def test_html_with_a_listing_option_is_refused(
    hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    extras = (["--run", "1"], ["--json"], ["--fact", "date=2026-12-01"], ["--last", "2"])
    for extra in (*extras, ["--diff"], ["--date", "2026-12-01"], ["--messages"]):
        assert cli.main(["log", str(hostile), "--html", str(out), *extra]) == 1
        assert capsys.readouterr().err == (
            "runcontext log: --html writes a page of every run: leave out --run, --context, "
            "--messages, --json, --diff, --last and the filters (--since, --until, --date, "
            "--fact, --section): the page pages, folds and searches by run and date\n"
        )
    assert not out.exists()


def test_html_into_a_missing_directory_says_which(
    hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nowhere" / "page.html"
    assert cli.main(["log", str(hostile), "--html", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"runcontext log: --html {out}: no directory {str(out.parent)!r} to write into\n"
    )
