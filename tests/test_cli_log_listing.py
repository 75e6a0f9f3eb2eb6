"""``runcontext log``'s list, written from each run's envelope with the common case (same
sections, same fact names) written out, against a plain reference: every run a ``Run`` from
``Session.runs()``, its changes from ``changes()``, its time from the ``datetime``, the whole
text escaped at once (``visible``) and the JSON from ``json.dumps`` of dictionaries.

The transcripts vary what the fast paths skip: sections added, removed, edited and moved,
facts added, removed, renamed and reordered, multi-line values and control characters in
names and values, years before 1000, runs with token counts (with and without billing),
empty contexts, a version 1 file and a torn one.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext, canonical_json, cli
from runcontext.cli._terminal import visible
from runcontext.transcript import Run, Session
from runcontext.transcript.changes import changes

SECTIONS = [
    "AGENTS.md",
    "tools",
    "ci",
    "na\u202eme",
    "CLAUDE.md",
    "instructions:AGENTS.md",
    "instructions:sub/AGENTS.md",
]
FACTS = ["date", "branch", "ticket", "multi", "c\u200etrl", "x"]
VALUES = [
    "2026-12-01",
    "2026-12-02",
    "2026-12-01 (Tuesday)",  # the clock provider's form: the day, then the weekday
    "2026-12-0x (Tuesday)",  # names no day: always shown
    "0999-01-01",
    "main",
    "a\nb",
    "line\r\nfeed",
    "esc\x1b[2K",
    "\u202ebidi",
    "\x85nel",
    "tab\there",
    "ünï",
    "\\n",
    '"quoted"',
]
TEXTS = ["Keep the build green.", "Keep it green.\nAlways.", "x" * 300, "ünicode → text"]


# --- the reference -------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return text.replace("\n", "\\n")


def _told(run: Run) -> str | None:
    return dict(run.facts).get("date")


def _told_day(run: Run) -> str | None:
    """The day of the run's date fact: ``YYYY-MM-DD``, alone or before a space."""
    told = _told(run)
    if told is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}( .*)?", told, re.DOTALL):
        return None
    try:
        return date.fromisoformat(told[:10]).isoformat()
    except ValueError:
        return None


def _when(run: Run) -> str:
    return run.time.strftime("%Y-%m-%d %H:%M:%SZ")  # strftime pads no year before 1000


def _section(run: Run | None, name: str) -> Any:
    assert run is not None
    return next(s for s in run.sections if s.name == name)


def _shown_section(run: Run | None, name: str) -> str:
    section = _section(run, name)
    return f"{section.position} {len(section.text.encode())} B {section.digest[:19]}"


def _tokens(tokens: Mapping[str, Any]) -> list[str]:
    total = tokens["head"] + tokens["conversation"] + tokens["tail"] + tokens["tools"]
    context = tokens["head"] + tokens["tail"]
    share = f"{round(100 * context / total)}%" if total else "-"
    line = (
        f"  tokens   {total:,} ({tokens['quality']}): context {context:,} ({share}; head "
        f"{tokens['head']:,}, tail {tokens['tail']:,}), conversation "
        f"{tokens['conversation']:,}, tools {tokens['tools']:,}"
    )
    if "limit" in tokens:
        room = tokens["limit"] - total
        line += f"; limit {tokens['limit']:,}, "
        line += f"headroom {room:,}" if room >= 0 else f"over by {-room:,}"
    lines = [line]
    if "billed" in tokens:
        billed = tokens["billed"]
        output = f", {billed['output']:,} output" if "output" in billed else ""

        def part(name: str) -> str:
            share = f"{billed[name] / billed['input']:.0%}" if billed["input"] else "-"
            return f"{billed[name]:,} ({share})"

        lines.append(
            f"  billed   {billed['input']:,} input: {part('cache_read')} read from the cache, "
            f"{part('cache_write')} written to it{output}"
        )
    return lines


def reference_text(run: Run, previous: Run | None) -> str:
    told = _told(run)
    when = _when(run)
    if told is not None and _told_day(run) != run.time.date().isoformat():
        when += f"  told {_one_line(told)}"
    count = run.messages
    lines = [] if run.tokens is None else _tokens(run.tokens)
    found = changes(previous, run)
    before = {} if previous is None else dict(previous.facts)
    after = dict(run.facts)
    changed = []
    for verb in ("added", "removed", "changed"):
        for name in found["sections"][verb]:
            old = "" if verb == "added" else _shown_section(previous, name)
            new = "" if verb == "removed" else _shown_section(run, name)
            shown = {"added": new, "removed": old, "changed": f"{old} → {new}"}[verb]
            changed.append(f"  {verb:<8} section {_one_line(name)}: {shown}")
        for name in found["facts"][verb]:
            old = _one_line(before.get(name, ""))
            new = _one_line(after.get(name, ""))
            shown = {"added": new, "removed": old, "changed": f"{old} → {new}"}[verb]
            changed.append(f"  {verb:<8} fact {_one_line(name)}: {shown}")
    lines += changed
    if not changed:  # the counts' lines say nothing of the context
        lines.append("  (no context)" if previous is None else "  unchanged")
    s = "" if count == 1 else "s"
    return f"run {run.number}  {when}  {run.digest}  {count} message{s}\n" + "\n".join(lines) + "\n"


def _section_json(section: Any) -> dict[str, Any]:
    return {
        "position": section.position,
        "bytes": len(section.text.encode()),
        "digest": section.digest,
    }


def reference_json(run: Run, previous: Run | None) -> dict[str, Any]:
    found = changes(previous, run)
    before = {} if previous is None else dict(previous.facts)
    after = dict(run.facts)
    facts, sections = found["facts"], found["sections"]
    return {
        "run": run.number,
        "time": run.time.isoformat().replace("+00:00", "Z"),
        "date": _told(run),
        "digest": run.digest,
        "messages": run.messages,
        "tokens": None if run.tokens is None else dict(run.tokens),
        "changes": {
            "facts": {
                "added": [{"name": n, "value": after[n]} for n in facts["added"]],
                "removed": [{"name": n, "value": before[n]} for n in facts["removed"]],
                "changed": [
                    {"name": n, "old": before[n], "new": after[n]} for n in facts["changed"]
                ],
            },
            "sections": {
                "added": [{"name": n} | _section_json(_section(run, n)) for n in sections["added"]],
                "removed": [
                    {"name": n} | _section_json(_section(previous, n)) for n in sections["removed"]
                ],
                "changed": [
                    {
                        "name": n,
                        "old": _section_json(_section(previous, n)),
                        "new": _section_json(_section(run, n)),
                    }
                    for n in sections["changed"]
                ],
            },
        },
    }


def reference_listing(
    path: Path,
    *,
    json_output: bool,
    keep: Callable[[Run, Run | None], bool] | None = None,
    last: int | None = None,
) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Session.open(path, writable=False) as session:
            runs = session.runs()
            chain = session.chain
    pairs = [(run, previous) for run, previous in zip(runs, [None, *runs], strict=False)]
    if keep is not None:
        pairs = [pair for pair in pairs if keep(*pair)]
    matched = len(pairs)
    if last is not None:
        pairs = pairs[-last:]
    if json_output:
        escaped = json.dumps([reference_json(*pair) for pair in pairs], ensure_ascii=False)
        # What a terminal would obey, as \u escapes (json.dumps escapes C0 itself).
        for code in [*range(0x7F, 0xA0), 0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F)]:
            escaped = escaped.replace(chr(code), f"\\u{code:04x}")
        for code in range(0x2066, 0x206A):
            escaped = escaped.replace(chr(code), f"\\u{code:04x}")
        return escaped
    parts = [reference_text(*pair) for pair in pairs]
    if keep is not None:
        trimmed = "" if len(parts) == matched else f"; the last {len(parts)} are shown"
        parts.append(f"{matched} of {len(runs)} runs match{trimmed}\n")
    elif len(parts) < len(runs):
        parts.append(f"the last {len(parts)} of {len(runs)} runs are shown\n")
    bills = [run.tokens["billed"] for run, _ in pairs if run.tokens and "billed" in run.tokens]
    if bills:
        total = sum(bill["input"] for bill in bills)
        read = sum(bill["cache_read"] for bill in bills) / total if total else None
        written = sum(bill["cache_write"] for bill in bills) / total if total else None
        parts.append(
            f"billed  {len(bills)} of {len(pairs)} runs: {total:,} input tokens, "
            + ("-" if read is None else f"{read:.1%}")
            + " read from the cache, "
            + ("-" if written is None else f"{written:.1%}")
            + " written to it\n"
        )
    parts.append(
        f"chain  {chain}\n" if chain else "chain  none (a version 1 transcript: unchained)\n"
    )
    return visible("".join(parts))


# --- the transcripts -----------------------------------------------------------------------


def _context(rng: random.Random) -> RunContext:
    head, tail = [], []
    for name in rng.sample(SECTIONS, rng.randint(0, 3)):
        (head if rng.random() < 0.6 else tail).append((name, rng.choice(TEXTS)))
    facts = [(name, rng.choice(VALUES)) for name in rng.sample(FACTS, rng.randint(0, 4))]
    return RunContext(head_sections=head, facts=facts, tail_sections=tail)


def _next(rng: random.Random, context: RunContext) -> RunContext:
    """Mostly a value changed, as in a long session; sometimes anything else."""
    roll = rng.random()
    facts = list(context.facts)
    if roll < 0.5 and facts:
        index = rng.randrange(len(facts))
        facts[index] = (facts[index][0], rng.choice(VALUES))
    elif roll < 0.6 and len(facts) > 1:
        facts.reverse()  # reordered: the same names, not in the same order
    elif roll < 0.7 and facts and not any(name.endswith("2") for name, _ in facts):
        facts[0] = (facts[0][0] + "2", facts[0][1])  # renamed
    elif roll < 0.85:
        return _context(rng)
    return RunContext(
        head_sections=context.head_sections, facts=facts, tail_sections=context.tail_sections
    )


def _tokens_of(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.6:
        return None
    parts = ("head", "conversation", "tail", "tools")
    tokens: dict[str, Any] = {part: rng.choice([0, rng.randint(0, 90_000)]) for part in parts}
    tokens["quality"] = rng.choice(["exact", "calibrated", "estimated"])
    if rng.random() < 0.5:
        tokens["limit"] = rng.randint(0, 100_000)
    if rng.random() < 0.5:
        given = rng.randint(0, 100_000)
        read = rng.randint(0, given)
        tokens["billed"] = {
            "input": given,
            "cache_read": read,
            "cache_write": rng.randint(0, given - read),
        }
        if rng.random() < 0.5:
            tokens["billed"]["output"] = rng.randint(0, 999)
    return tokens


def write(path: Path, seed: int, runs: int, start: datetime) -> Path:
    rng = random.Random(seed)
    moment = [start]

    def clock() -> datetime:
        moment[0] += timedelta(seconds=rng.choice([1, 3600, 86_400, 0.25, 0.000001]))
        return moment[0]

    conversation = [{"role": "system", "content": "seed"}]
    context = _context(rng)
    with Session.create(path, conversation, clock=clock) as session:
        for i in range(runs):
            context = _next(rng, context) if i else context
            conversation.append({"role": "user", "content": f"turn {i}"})
            reply = {"role": "assistant", "content": "ok"}
            session.record_run(conversation, context, reply, tokens=_tokens_of(rng))
            conversation.append(reply)
    return path


def unchained(source: Path, path: Path) -> Path:
    """``source`` as a version 1 file: the same records without their chains."""
    records = [json.loads(line) for line in source.read_bytes().splitlines()]
    for record in records:
        del record["chain"]
        if record["type"] == "header":
            record["version"] = 1
    path.write_bytes(b"".join(canonical_json(record) + b"\n" for record in records))
    return path


START = datetime(2026, 11, 30, 23, 59, 58, tzinfo=UTC)
BEFORE_1000 = datetime(999, 12, 31, 20, tzinfo=UTC)  # crosses into the year 1000


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("listing")
    made = [
        write(directory / f"t{seed}.jsonl", seed, 150, START if seed % 2 else BEFORE_1000)
        for seed in range(4)
    ]
    made.append(unchained(made[1], directory / "v1.jsonl"))
    torn = directory / "torn.jsonl"
    torn.write_bytes(made[0].read_bytes() + b'{"digest":"blake3:')
    made.append(torn)
    empty = directory / "empty.jsonl"
    write(empty, 9, 0, START)
    return [*made, empty]


def logged(*argv: str, status: int = 0) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["log", *argv]) == status
    return out.getvalue()


# --- the tests -----------------------------------------------------------------------------


def test_the_transcripts_reach_every_case(transcripts: list[Path]) -> None:
    text = "".join(logged(str(path)) for path in transcripts)
    for shown in (
        "  changed  fact ",  # the common case
        "  added    fact ",
        "  removed  fact ",
        "  added    section ",
        "  removed  section ",
        "  changed  section ",
        "  unchanged\n",
        "  (no context)\n",
        "  billed   ",
        "\\x1b[2K",  # controls in values, escaped
        "na⟨U+202E⟩me",  # and in names
        "a\\nb",  # line breaks kept on one line
        "run 1  999-12-31 ",  # strftime's year before 1000
        "  told 0999-01-01",
        "  told 2026-12-01 (Tuesday)",
        "  told 2026-12-0x (Tuesday)",
    ):
        assert shown in text, shown
    assert any("  changed  fact date: " in logged(str(path)) for path in transcripts[:2])


def test_the_text_list_is_the_reference(transcripts: list[Path]) -> None:
    for path in transcripts:
        assert logged(str(path)) == reference_listing(path, json_output=False), path.name


def test_the_json_list_is_the_reference(transcripts: list[Path]) -> None:
    for path in transcripts:
        listed = logged(str(path), "--json")
        expected = reference_listing(path, json_output=True)
        # The list puts one run on a line; json.loads of both shows the same values.
        assert json.loads(listed) == json.loads(expected), path.name
        assert listed.replace(",\n", ", ").replace("[\n", "[").replace("\n]", "]") == (
            expected + "\n"
        ), path.name


def test_one_fact_sessions_are_the_reference(tmp_path: Path) -> None:
    # A one-fact context whose value changes run after run is the case `texts` writes in its
    # loop: every value above (controls, line breaks, the recording date itself, so that no
    # `told` is shown), a renamed fact, a section change and token counts in between.
    rng = random.Random(7)
    for start in (START, BEFORE_1000):
        moment = [start]

        def clock(moment: list[datetime] = moment) -> datetime:
            moment[0] += timedelta(seconds=rng.choice([1, 86_400]))
            return moment[0]

        path = tmp_path / f"one-{start.year}.jsonl"
        conversation = [{"role": "system", "content": "seed"}]
        with Session.create(path, conversation, clock=clock) as session:
            for i in range(120):
                name = rng.choice(["date", "date", "date", "c\u200etrl", "x"])
                value = rng.choice([*VALUES, moment[0].date().isoformat(), f"v{i}"])
                head = [("AGENTS.md", rng.choice(TEXTS[:2]))]
                context = RunContext(head_sections=head, facts=[(name, value)])
                if i % 2:  # one message more or two: "1 message" and "N messages"
                    conversation.append({"role": "user", "content": f"turn {i}"})
                reply = {"role": "assistant", "content": "ok"}
                tokens = _tokens_of(rng) if i % 9 == 0 else None
                session.record_run(conversation, context, reply, tokens=tokens)
                conversation.append(reply)
        assert logged(str(path)) == reference_listing(path, json_output=False)
        assert json.loads(logged(str(path), "--json")) == json.loads(
            reference_listing(path, json_output=True)
        )


def test_one_run_is_the_reference(transcripts: list[Path]) -> None:
    path = transcripts[0]
    with Session.open(path, writable=False) as session:
        runs = session.runs()
    for number in range(1, len(runs) + 1, 7):
        previous = runs[number - 2] if number > 1 else None
        text = logged(str(path), "--run", str(number))
        assert text.startswith(visible(reference_text(runs[number - 1], previous)))
        shown = json.loads(logged(str(path), "--run", str(number), "--json"))
        assert {key: shown[key] for key in reference_json(runs[number - 1], previous)} == (
            reference_json(runs[number - 1], previous)
        )


@pytest.mark.parametrize(
    ("argv", "keep"),
    [
        (["--fact", "date=2026-12-01"], lambda run, _: dict(run.facts).get("date") == "2026-12-01"),
        (["--fact", "multi=a\nb"], lambda run, _: dict(run.facts).get("multi") == "a\nb"),
        (
            ["--section", "ci", "--section", "na\u202eme"],
            lambda run, previous: any(
                {"ci", "na\u202eme"} & set(names)
                for names in changes(previous, run)["sections"].values()
            ),
        ),
        (
            ["--since", "2026-12-03", "--until", "2027-01-01T00:00:00+01:00"],
            lambda run, _: (
                datetime(2026, 12, 3, tzinfo=UTC)
                <= run.time
                <= datetime(2026, 12, 31, 23, tzinfo=UTC)
            ),
        ),
        (
            ["--until", "1000-01-01"],
            lambda run, _: run.time.year < 1000 or run.time.date().isoformat() == "1000-01-01",
        ),
        (["--date", "2026-12-01"], lambda run, _: _told_day(run) == "2026-12-01"),
        (
            ["--date", "0999-01-01", "--date", "2026-12-02"],
            lambda run, _: _told_day(run) in ("0999-01-01", "2026-12-02"),
        ),
        (
            ["--section", "AGENTS.md"],  # the name, or the name after a prefix and a path
            lambda run, previous: any(
                name == "AGENTS.md" or name.endswith((":AGENTS.md", "/AGENTS.md"))
                for names in changes(previous, run)["sections"].values()
                for name in names
            ),
        ),
        (
            ["--section", "instructions:*", "--fact", "date=2026-12-02"],
            lambda run, previous: (
                dict(run.facts).get("date") == "2026-12-02"
                and any(
                    name.startswith("instructions:")
                    for names in changes(previous, run)["sections"].values()
                    for name in names
                )
            ),
        ),
        (
            ["--section", "sub/AGENTS.md"],
            lambda run, previous: any(
                "instructions:sub/AGENTS.md" in names
                for names in changes(previous, run)["sections"].values()
            ),
        ),
    ],
)
def test_a_filtered_list_is_the_reference(
    transcripts: list[Path], argv: list[str], keep: Callable[[Run, Run | None], bool]
) -> None:
    matched = 0
    for path in transcripts[:4]:
        expected = reference_listing(path, json_output=False, keep=keep)
        found = not expected.startswith("0 of ")
        text = logged(str(path), *argv, status=0 if found else 1)  # 1: nothing matched
        assert text == expected, path.name
        assert json.loads(logged(str(path), *argv, "--json", status=0 if found else 1)) == (
            json.loads(reference_listing(path, json_output=True, keep=keep))
        )
        matched += found
    assert matched  # the filter selected something somewhere


@pytest.mark.parametrize("last", [1, 7, 1000])
def test_last_keeps_the_last_runs_selected(transcripts: list[Path], last: int) -> None:
    path = str(transcripts[1])
    for argv, keep in (([], None), (["--section", "tools"], _tools_changed)):
        expected = reference_listing(transcripts[1], json_output=False, keep=keep, last=last)
        assert logged(path, *argv, "--last", str(last)) == expected
        assert json.loads(logged(path, *argv, "--last", str(last), "--json")) == json.loads(
            reference_listing(transcripts[1], json_output=True, keep=keep, last=last)
        )


def _tools_changed(run: Run, previous: Run | None) -> bool:
    return any("tools" in names for names in changes(previous, run)["sections"].values())


def test_the_list_imports_neither_the_loop_nor_the_budget(tmp_path: Path) -> None:
    # Listing a transcript needs neither the run loop nor the budget package, nor asyncio.
    path = write(tmp_path / "t.jsonl", 1, 3, START)
    code = (
        "import contextlib, io, sys\nfrom runcontext.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['log', sys.argv[1]])\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    imported = set(result.stdout.split())
    assert "runcontext.transcript.session" in imported
    unwanted = {"asyncio", "runcontext.budget", "runcontext.loop"}
    assert not imported & unwanted
