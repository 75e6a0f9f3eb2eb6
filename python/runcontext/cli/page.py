"""``runcontext log TRANSCRIPT --html FILE``: one self-contained page for a person to read.

The page shows the timeline of runs, each fact's value over the runs, each section's versions
with a text diff between consecutive ones, and each run's token parts and cache share as small
inline SVG charts. It is one HTML file with no network access: its data is one JSON document
in a ``<script type="application/json">`` element, and one small inline script renders from it
only what is on screen (a page of runs, an opened section, an opened run), so the page stays
quick at tens of thousands of runs. docs/TRANSCRIPT.md (*The page*) specifies it.

A transcript is untrusted input. Everything it holds reaches the page as JSON data (``<``,
``>``, ``&``, U+2028 and U+2029 escaped as ``\\u`` escapes, so no text can end the element),
and the script puts it on the page with ``textContent`` and ``createElementNS`` only, never as
markup. A Content-Security-Policy allows the page's own script and style by their SHA-256
hashes and nothing else: no other script, no network, no form, no frame. Section texts, fact
values and messages are redacted as ``runcontext show`` redacts what providers read
(:func:`runcontext.providers.redact.redact`), and every invisible or control character is
shown as an escape (:func:`runcontext.cli._terminal.visible`), as in the terminal.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import hashlib
import html
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from runcontext.cli._session import opened
from runcontext.cli._terminal import visible
from runcontext.providers.redact import redact
from runcontext.transcript import Compaction, Elision, Run, TornTranscriptWarning
from runcontext.transcript.changes import changes, edit_summary
from runcontext.transcript.errors import shown_name

__all__ = [
    "MAX_DIFF_LINES",
    "RUNS_PER_PAGE",
    "page_data",
    "page_html",
    "write_from_args",
    "write_page",
]

# Runs listed on one page of the timeline: a screenful or two, whatever the transcript's length.
RUNS_PER_PAGE = 100
# A version longer than this many lines (either side) gets no line diff: difflib's matching
# grows faster than linearly, and such a diff is not read on a page. Sizes and digests still
# show what changed.
MAX_DIFF_LINES = 5000
# Lines of context around each change in a section diff (as `diff -u`).
DIFF_CONTEXT = 3


class _Redacted:
    """Each distinct text redacted and made visible once, with the count of replacements."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}
        self.replaced = 0

    def __call__(self, text: str) -> str:
        shown = self.shown.get(text)
        if shown is None:
            clean, found = redact(text)
            self.replaced += sum(found.values())
            shown = self.shown[text] = visible(clean)
        return shown


class _Table:
    """Strings interned as indexes into one list: a long transcript repeats its names and
    values run after run, and the page holds each once."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.index: dict[Any, int] = {}

    def __call__(self, item: Any) -> int:
        found = self.index.get(item)
        if found is None:
            found = self.index[item] = len(self.items)
            self.items.append(item)
        return found


def _spans(numbers: list[int]) -> list[list[int]]:
    """Ascending run numbers as ``[first, last]`` spans of consecutive runs."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and spans[-1][1] == number - 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return spans


def _diff(before: str, after: str) -> list[str] | None:
    """The unified diff of two shown texts, without file headers; ``None`` past the limit."""
    old, new = before.split("\n"), after.split("\n")
    if len(old) > MAX_DIFF_LINES or len(new) > MAX_DIFF_LINES:
        return None
    lines = difflib.unified_diff(old, new, lineterm="", n=DIFF_CONTEXT)
    return [line for index, line in enumerate(lines) if index >= 2]  # skip "---", "+++"


def page_data(
    name: str,
    runs: Sequence[Run],
    messages: Sequence[Any],
    *,
    chain: str | None,
    version: int,
    edits: Sequence[Compaction | Elision] = (),
    sent: Callable[[int], list[Any]] | None = None,
) -> dict[str, Any]:
    """What the page shows, as the JSON its script renders from (docs/TRANSCRIPT.md).

    ``messages`` is the conversation the runs were sent when ``edits`` is empty; with
    compactions or elisions, ``sent(N)`` gives the conversation run N was sent
    (``Session.messages_at``), asked once per generation (the last run before each edit)."""
    shown = _Redacted()
    fact_names, values, names = _Table(), _Table(), _Table()
    fact_sets, section_sets = _Table(), _Table()
    # Per section name: its versions, each [position, bytes, digest, shown text, run numbers].
    versions: dict[int, list[list[Any]]] = {}
    # Per fact name: [run number, value index] at each run that has it.
    fact_runs: dict[int, list[list[int]]] = {}
    sizes: dict[str, int] = {}
    rows: list[list[Any]] = []
    previous: Run | None = None
    edited = {found.after_run for found in edits}  # runs an edit follows (0: the start)
    generation: Sequence[Any] | None = None  # the conversation of the current generation
    flat: list[str] = []  # each run's new messages, as shown text, one run after another
    for run in runs:
        number = run.number
        facts = tuple((fact_names(visible(n)), values(shown(v))) for n, v in run.facts)
        for fact, value in facts:
            fact_runs.setdefault(fact, []).append([number, value])
        kept = []
        for section in run.sections:
            section_name = names(visible(section.name))
            known = versions.setdefault(section_name, [])
            last = known[-1] if known else None
            # A new version when the text or the position differs from the name's last one;
            # the same one again after runs without the section continues that version.
            if last is None or (last[0], last[2]) != (section.position, section.digest):
                size = sizes.get(section.digest)
                if size is None:
                    size = sizes[section.digest] = len(section.text.encode("utf-8"))
                known.append([section.position, size, section.digest, shown(section.text), []])
            index = len(known) - 1
            known[index][4].append(number)
            kept.append([section_name, index])
        found = changes(previous, run)
        changed = [
            [kind, verb[0], fact_names(visible(n)) if kind == "f" else names(visible(n))]
            for kind, group in (("s", found["sections"]), ("f", found["facts"]))
            for verb in ("added", "removed", "changed")
            for n in group[verb]
        ]
        tokens = None if run.tokens is None else dict(run.tokens)
        # The messages new since the run before, as [offset in flat, first position, count,
        # 1 when an edit came between and the whole conversation is shown].
        fresh = bool(edited) and number - 1 in edited
        if fresh or generation is None:
            ending = number  # the generation's last run
            while ending < len(runs) and ending not in edited:
                ending += 1
            generation = messages if sent is None or not edited else sent(ending)
        first = 0 if fresh or previous is None else previous.messages
        count = max(run.messages - first, 0)
        span = [len(flat), first, count, int(fresh)]
        flat.extend(
            shown(json.dumps(m, ensure_ascii=False, indent=1))
            for m in generation[first : first + count]
        )
        rows.append(
            [
                run.timestamp,
                run.digest,
                run.messages,
                tokens,
                fact_sets(facts),
                section_sets(tuple(tuple(pair) for pair in kept)),
                changed,
                span,
            ]
        )
        previous = run
    sections = []
    for section_name, known in versions.items():
        entries = []
        for index, (position, size, digest, text, numbers) in enumerate(known):
            before = known[index - 1][3] if index else None
            entries.append(
                {
                    "position": position,
                    "bytes": size,
                    "digest": digest,
                    "text": text,
                    "runs": _spans(numbers),
                    "diff": None if before is None else _diff(before, text),
                }
            )
        sections.append({"name": section_name, "versions": entries})
    facts_over_time = []
    for fact, told in fact_runs.items():
        spans: list[list[int]] = []  # [first run, last run, value index]
        for number, value in told:
            if spans and spans[-1][1] == number - 1 and spans[-1][2] == value:
                spans[-1][1] = number
            else:
                spans.append([number, number, value])
        facts_over_time.append({"name": fact, "spans": spans})
    return {
        "name": visible(name),
        "version": version,
        "chain": chain,
        "runsPerPage": RUNS_PER_PAGE,
        "maxDiffLines": MAX_DIFF_LINES,
        "factNames": fact_names.items,
        "values": values.items,
        "sectionNames": names.items,
        "factSets": [[list(pair) for pair in facts] for facts in fact_sets.items],
        "sectionSets": [[list(pair) for pair in kept] for kept in section_sets.items],
        "runs": rows,
        "facts": facts_over_time,
        "sections": sections,
        # Each run's new messages, as indented JSON text, where its row's span points.
        "messages": flat,
        # Compactions and elisions, each on the row of the run it follows (run 1 for one
        # before the first run): {"run": N, "kind": "compaction" | "elision", "text": ...}.
        "events": [_event(found) for found in edits],
        "redactions": shown.replaced,
    }


def _event(found: Compaction | Elision) -> dict[str, Any]:
    """A compaction or elision as the page lists it: the run it follows and its line of the
    ``runcontext log`` list."""
    where = f"after run {found.after_run}" if found.after_run else "before run 1"
    line = edit_summary(found)
    kind = "elision" if isinstance(found, Elision) else "compaction"
    return {"run": max(found.after_run, 1), "kind": kind, "text": f"{where}: {line}"}


def _json_for_script(value: object) -> str:
    """JSON that no text in it can end or confuse the ``<script>`` element it is put in:
    ``<``, ``>`` and ``&`` (which occur in JSON only inside strings) and the JavaScript line
    terminators U+2028 and U+2029 as ``\\u`` escapes, which decode to the same text."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@cache
def _asset(name: str) -> str:
    """The page's script (page.js) or style (page.css), shipped beside this module."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


def page_html(data: dict[str, Any]) -> str:
    """The page: its data, its style and its script, under a policy that allows only them."""
    script, style = _asset("page.js"), _asset("page.css")
    policy = (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    title = html.escape(f"runcontext log: {data['name']}")
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name=viewport content="width=device-width, initial-scale=1">\n'
        '<meta name=referrer content="no-referrer">\n'
        f"<title>{title}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        f"{_BODY}"
        f'<script id=data type="application/json">{_json_for_script(data)}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def write_from_args(args: argparse.Namespace, *, others: bool) -> int:
    """``runcontext log TRANSCRIPT --html FILE``: read the transcript, write the page."""
    if others or args.run is not None or args.messages or args.json:
        raise ValueError(
            "--html writes a page of every run: leave out --run, --context, --messages, --json, "
            "--diff, --last and the filters (--since, --until, --date, --fact, --section): the "
            "page pages, folds and searches by run and date"
        )
    target = Path(args.html)
    if not target.parent.is_dir():
        raise ValueError(f"--html {args.html}: no directory {str(target.parent)!r} to write into")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TornTranscriptWarning)
        with opened(args) as session:
            runs, messages, edits = session.runs(), session.messages(), session.edits()
            # The conversation of the last run before each edit (Replay), read now: the
            # session closes before the page is written.
            ends = sorted({found.after_run for found in edits if found.after_run} | {len(runs)})
            generations = {n: session.messages_at(n) for n in ends if n}
            name, chain, version = session.store.name, session.chain, session.version
    for warning in caught:  # as the list does: the complete runs are on the page
        print(f"runcontext log: warning: {visible(str(warning.message))}", file=sys.stderr)
    write_page(
        target,
        shown_name(name),
        runs,
        messages,
        chain=chain,
        version=version,
        edits=edits,
        sent=generations.__getitem__,
    )
    count = len(runs)
    print(f"wrote {visible(str(target))}: {count:,} run{'' if count == 1 else 's'}")
    return 0


def write_page(
    path: str | Path,
    name: str,
    runs: Sequence[Run],
    messages: Sequence[Any],
    *,
    chain: str | None,
    version: int,
    edits: Sequence[Compaction | Elision] = (),
    sent: Callable[[int], list[Any]] | None = None,
) -> None:
    """Write the page of a transcript's runs to ``path`` (replaced if it exists)."""
    data = page_data(name, runs, messages, chain=chain, version=version, edits=edits, sent=sent)
    text = page_html(data)
    Path(path).write_text(text, encoding="utf-8")


_BODY = """\
<header>
<h1>runcontext log <span id=name></span></h1>
<p id=summary></p>
<p class=note id=notice></p>
<nav><a href="#timeline">Runs</a> <a href="#facts">Facts</a> <a href="#sections">Sections</a>
<a href="#events">Compactions and elisions</a></nav>
</header>
<main>
<section id=timeline><h2>Runs</h2>
<div id=overview></div>
<div class=legend><span class="key k0"></span>head <span class="key k1"></span>conversation
<span class="key k2"></span>tail <span class="key k3"></span>tools
<span class="key kc"></span>read from the cache (share of billed input)
<span class="key kx"></span>context changed</div>
<div class=pager><button id=first>first</button><button id=prev>previous</button>
<span id=pageinfo></span><button id=next>next</button><button id=last>last</button>
<label>run <input id=gorun type=number min=1 size=7></label>
<label>recorded on or after <input id=godate type=date></label></div>
<table id=runs><thead><tr><th>run</th><th>recorded (UTC)</th><th>told</th><th>digest</th>
<th>messages</th><th>tokens by part</th><th>cache</th><th>changes</th></tr></thead>
<tbody></tbody></table>
</section>
<section id=facts><h2>Facts over time</h2><div id=factlist></div></section>
<section id=sections><h2>Sections</h2><div id=sectionlist></div></section>
<section id=events><h2>Compactions and elisions</h2><div id=eventlist></div></section>
</main>
"""
