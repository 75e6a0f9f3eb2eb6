"""Transcripts for the page tests (tests/test_cli_page*.py): a hostile one and a long one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runcontext import RunContext, Session

# Each would run script, load something or reorder what is shown if the page let it.
SCRIPT_END = "</script><script>document.title='pwned-script'</script>"
IMG = "<img src=x onerror=\"document.title='pwned-img'\">"
JS_URL = "javascript:document.title='pwned-url'"
LINE_SEPARATOR = "line\u2028separator\u2029paragraph"
BIDI = "access\u202eevil\u202c granted"
# A GitHub token: redacted as `runcontext show` redacts it.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HOSTILE = "\n".join([SCRIPT_END, IMG, JS_URL, LINE_SEPARATOR, BIDI])
AGENTS = "Keep the build green.\nExplain every change.\n"
HOSTILE_AGENTS = AGENTS + HOSTILE + f"\ntoken = {SECRET}\n"


def clock(hours: int = 24) -> Callable[[], datetime]:
    steps = iter(range(10**7))
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    return lambda: start + timedelta(hours=hours * next(steps))


def tokens(run: int) -> dict[str, Any]:
    return {
        "head": 800,
        "conversation": 100 + 10 * run,
        "tail": 40,
        "tools": 200,
        "quality": "calibrated",
        "billed": {
            "input": 1150 + 10 * run,
            "output": 50,
            "cache_read": 800 if run else 0,
            "cache_write": 0 if run else 800,
        },
    }


def hostile_transcript(path: Path) -> Path:
    """Three runs: the hostile texts arrive in run 2 as a section's new lines, as fact values
    and names, and in a message; run 3 changes nothing but the date."""
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    contexts = [
        RunContext(
            head_sections=[("AGENTS.md", AGENTS)],
            facts=[("date", "2026-12-01"), ("branch", "main")],
        ),
        RunContext(
            head_sections=[("AGENTS.md", HOSTILE_AGENTS), (IMG, "a section named in markup")],
            facts=[("date", "2026-12-02"), ("branch", SCRIPT_END), (BIDI, JS_URL)],
            tail_sections=[("ci", LINE_SEPARATOR)],
        ),
        RunContext(
            head_sections=[("AGENTS.md", HOSTILE_AGENTS), (IMG, "a section named in markup")],
            facts=[("date", "2026-12-03"), ("branch", SCRIPT_END), (BIDI, JS_URL)],
            tail_sections=[("ci", LINE_SEPARATOR)],
        ),
    ]
    with Session.create(path, conversation, clock=clock()) as session:
        for run, context in enumerate(contexts):
            content = HOSTILE if run == 1 else f"step {run}"
            conversation = [*conversation, {"role": "user", "content": content}]
            reply = {"role": "assistant", "content": "done"}
            session.record_run(conversation, context, reply, tokens=tokens(run))
            conversation = [*conversation, reply]
    return path


def long_transcript(path: Path, runs: int) -> Path:
    """``runs`` runs, three a day: a date that changes daily, an AGENTS.md that gains a line
    every 25 runs, a CI section that flips, a branch that changes every 50 runs."""
    base = "".join(f"Rule {i}: keep the build green and explain every change.\n" for i in range(40))
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    with Session.create(path, conversation, clock=clock(8), durable=False) as session:
        for run in range(runs):
            agents = base + "".join(f"Added at run {k}.\n" for k in range(0, run, 25))
            context = RunContext(
                head_sections=[("AGENTS.md", agents), ("tools", "git, pytest")],
                facts=[("date", f"day {run // 3}"), ("branch", f"topic-{run // 50}")],
                tail_sections=[("ci", "Last CI run: " + ("red" if run % 7 == 0 else "green"))],
            )
            conversation = [*conversation, {"role": "user", "content": f"step {run}"}]
            reply = {"role": "assistant", "content": "done"}
            session.record_run(conversation, context, reply, tokens=tokens(run % 30))
            conversation = [*conversation, reply]
    return path
