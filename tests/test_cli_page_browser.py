"""The page in a real browser: headless Chromium renders it, runs its script under its
Content-Security-Policy, and draws it.

Chromium is Debian's ``chromium`` (``apt-get install -y chromium``; ``.ci/run`` installs it).
Without it these tests skip, unless ``CI`` is set: in CI a missing browser is a failure.

Console output is Chromium's ``--enable-logging=stderr --v=0``: every console message, and
every Content-Security-Policy refusal (a blocked script, style or load is one), is a
``:CONSOLE`` line there. The page's policy is ``default-src 'none'``, so any load it tried
would be refused and logged: no console line means no error and no load.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from page_transcripts import SCRIPT_END, hostile_transcript, long_transcript

from runcontext import RunContext, Session, cli

BROWSER_TIMEOUT = 180  # seconds: a cold start on a loaded 2-core machine


NO_CHROMIUM = "the page's browser tests need Debian's chromium: apt-get install -y chromium"


def find_chromium() -> str:
    """The browser's path; without one, a skip, or in CI a failure."""
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(
                f"{NO_CHROMIUM} (CI is set, so this fails rather than skips)", pytrace=False
            )
        pytest.skip(NO_CHROMIUM)
    return found


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set, so this fails rather than skips"):
        find_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        find_chromium()


def browse(chromium: str, url: str, *extra: str, cwd: Path) -> tuple[str, list[str]]:
    """Chromium's output (the DOM, for ``--dump-dom``) and its console lines."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            f"--user-data-dir={cwd / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def write_page(transcript: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = transcript.with_suffix(".html")
    assert cli.main(["log", str(transcript), "--html", str(out)]) == 0
    capsys.readouterr()
    return out


def test_the_page_renders_runs_facts_and_a_diff_and_no_hostile_text_runs(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = write_page(hostile_transcript(tmp_path / "hostile.jsonl"), capsys)
    # #run-2 opens run 2: its facts, sections and the hostile message are on the page too.
    dom, console = browse(chromium, page.as_uri() + "#run-2", "--dump-dom", cwd=tmp_path)
    assert console == []
    assert 'data-ready="1"' in dom  # the script ran to its end
    assert "<title>runcontext log: " in dom and "pwned" not in dom.split("</title>")[0]
    rows = re.findall(r'<tr class="run[^"]*" id="run-(\d+)">', dom)
    assert rows == ["1", "2", "3"]
    # Run 2's detail row: its hostile fact value and message, as text.
    assert '<tr class="detail">' in dom
    assert "&lt;/script&gt;&lt;script&gt;document.title='pwned-script'&lt;/script&gt;" in dom
    # The latest AGENTS.md change is shown as a diff, hostile lines as added text.
    added = re.findall(r'<div class="add">([^<]*)</div>', dom)
    assert "+&lt;img src=x onerror=\"document.title='pwned-img'\"&gt;" in added
    assert "+javascript:document.title='pwned-url'" in added
    assert "+token = [redacted]" in added
    assert "+access⟨U+202E⟩evil⟨U+202C⟩ granted" in added
    # No element came from the transcript: no image, no link but the page's own, one script
    # that runs (and the data).
    assert "<img" not in dom
    assert re.findall(r'href="([^"]*)"', dom) == ["#timeline", "#facts", "#sections", "#events"]
    assert dom.count("<script") == 2
    # Each section under its name, as text.
    assert '<summary><span class="iso">AGENTS.md</span>' in dom
    assert (
        '<summary><span class="iso">&lt;img src=x onerror="document.title=\'pwned-img\'"&gt;</span>'
    ) in dom
    # Facts over time and the place for compactions and elisions.
    assert "changed from run 1" in dom
    assert "None recorded: transcript format version 2 has no compaction or elision record" in dom
    assert SCRIPT_END not in dom


def test_the_console_check_sees_a_script_the_policy_refuses(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The check above is only worth something if it can fail: a page whose script no longer
    # matches its hash is refused by the policy, and Chromium says so on the console.
    page = write_page(hostile_transcript(tmp_path / "hostile.jsonl"), capsys)
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace('"use strict";', '"use strict"; ', 1), encoding="utf-8")
    dom, console = browse(chromium, page.as_uri(), "--dump-dom", cwd=tmp_path)
    assert 'data-ready="1"' not in dom
    assert len(console) == 1
    assert "violates the following Content Security Policy directive 'script-src" in console[0]


def test_a_page_without_runs_or_counts_and_a_later_page_of_runs_render(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty, uncounted = tmp_path / "empty.jsonl", tmp_path / "uncounted.jsonl"
    Session.create(empty, [{"role": "user", "content": "hi"}]).close()
    messages = [{"role": "user", "content": "hi"}]
    with Session.create(uncounted, messages) as session:
        session.record_run(messages)  # no context, no tokens
        session.record_run(messages, RunContext(facts=[("date", "2026-12-01")]))
    dom, console = browse(chromium, write_page(empty, capsys).as_uri(), "--dump-dom", cwd=tmp_path)
    assert console == []
    assert 'data-ready="1"' in dom and "No runs recorded." in dom and "no runs" in dom
    page = write_page(uncounted, capsys).as_uri()
    dom, console = browse(chromium, page, "--dump-dom", cwd=tmp_path)
    assert console == []
    assert re.findall(r'<tr class="run[^"]*" id="run-(\d+)">', dom) == ["1", "2"]
    assert dom.count('<td class="same">not counted</td>') == 2
    # Run 142 of 150 is on the timeline's second page, opened.
    page = write_page(long_transcript(tmp_path / "long.jsonl", 150), capsys).as_uri()
    dom, console = browse(chromium, page + "#run-142", "--dump-dom", cwd=tmp_path)
    assert console == []
    rows = re.findall(r'<tr class="run[^"]*" id="run-(\d+)">', dom)
    assert rows == [str(n) for n in range(101, 151)]
    assert '<tr class="run open" id="run-142">' in dom
    assert "runs 101–150 of 150 (page 2 of 2)" in dom


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0) and colour in (2, 6)
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * step
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up = previous[x]
            corner = previous[x - step] if x >= step else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                best = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + best) & 0xFF
        rows.append(
            bytes(line) if step == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3)
        )
        previous = line
    return width, height, rows


def test_the_page_is_drawn_not_blank(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = write_page(long_transcript(tmp_path / "long.jsonl", 150), capsys)
    shot = tmp_path / "page.png"
    _, console = browse(
        chromium,
        page.as_uri(),
        f"--screenshot={shot}",
        "--window-size=1280,800",
        "--hide-scrollbars",
        cwd=tmp_path,
    )
    assert console == []
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 800)
    pixels = [row[i : i + 3] for row in rows[::4] for i in range(0, len(row), 12)]
    counts: dict[bytes, int] = {}
    for pixel in pixels:
        counts[pixel] = counts.get(pixel, 0) + 1
    background = max(counts, key=counts.__getitem__)
    drawn = 1 - counts[background] / len(pixels)
    assert len(counts) > 20  # text, bars and charts in their colours, not one flat fill
    assert drawn > 0.15  # the charts and the table cover a good part of the window
    # The token chart's blue (the head) is on screen.
    assert counts.get(bytes((0x09, 0x69, 0xDA)), 0) > 100
