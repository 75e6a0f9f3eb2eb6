"""The JavaScript package (js/, the core compiled to WebAssembly) against this one, on random
input: the same canonical bytes and digests, the same refusal kinds, classes and places, the
same RunContexts, and transcripts that each continues for the other (docs/JAVASCRIPT.md).

Needs Node 20; builds the package's .wasm (`make js`) when it is missing or older than
rust/. `make test-js` runs it.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runcontext import RunContext, canonical_json, canonicalize_text, digest
from runcontext.errors import CanonicalJSONError, RunContextError
from runcontext.transcript import Session
from runcontext.transcript.memory import verify_bytes

from conftest import ROOT
from strategies import MAX_SAFE_INTEGER, unique_pairs

DRIVER = ROOT / "tests" / "js_driver.mjs"
WASM = ROOT / "js" / "runcontext.wasm"
ARGUMENT = {"head_sections": "headSections", "facts": "facts", "tail_sections": "tailSections"}


class Node:
    """One `node tests/js_driver.mjs` process: a request line in, an answer line out."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node is not None, "node not found: the JavaScript package's tests need Node 20"
        sources = [p.stat().st_mtime for p in (ROOT / "rust").rglob("*.rs")]
        if not WASM.exists() or WASM.stat().st_mtime < max(sources):
            subprocess.run(["make", "js"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        self.process = subprocess.Popen(
            [node, str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def __call__(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    driver = Node()
    yield driver
    driver.close()


def transport(value: Any) -> Any:
    """`value` in the driver's transport form (its header says which)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return {"$f": struct.pack(">d", value).hex()}
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else {"$n": str(value)}
    if isinstance(value, list | tuple):
        return [transport(v) for v in value]
    if isinstance(value, frozenset):
        return {"$set": []}
    if isinstance(value, dict):
        return {k: transport(v) for k, v in value.items()}
    raise AssertionError(f"no transport for {value!r}")


def python_failure(error: Exception) -> dict[str, Any]:
    if isinstance(error, CanonicalJSONError):
        return {
            "class": type(error).__name__,
            "kind": error.kind,
            "path": error.path,
            "line": error.line,
            "column": error.column,
            "offset": error.offset,
        }
    assert isinstance(error, RunContextError)
    return {
        "class": type(error).__name__,
        "kind": error.kind,
        "argument": ARGUMENT[error.argument],
        "index": error.index,
        "type_error": isinstance(error, TypeError),
    }


# Keys never start with "$" (the transport's tags); strings may hold lone surrogates, but never
# a high one just before a low one: Python holds those as two lone surrogates (refused), while
# in a JavaScript string, as in JSON's escapes, they are one character's pair.
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_chars = st.one_of(
    st.characters(blacklist_characters="$"),
    st.sampled_from(["\ud800", "\udfff", "\U0001f600", "\ue000", '"', "\\", "\x00", "\u2028"]),
)
_text = st.lists(_chars, max_size=8).map("".join).filter(lambda s: _PAIR.search(s) is None)
_numbers = st.one_of(
    st.floats(),  # NaN and ±Infinity included: both refuse them
    st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
    st.integers().filter(lambda n: abs(n) > MAX_SAFE_INTEGER),
    st.sampled_from([0.0, -0.0, 1e21, 1e-7, 5e-324, 2.0**60, 1.5]),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, _text, st.just(frozenset()))
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_text, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_values)
def test_canonical_json_and_digest_agree(node: Node, value: Any) -> None:
    answer = node("canonical", value=transport(value))
    try:
        expected = canonical_json(value).decode()
    except CanonicalJSONError as error:
        assert answer == {"error": python_failure(error)}
        return
    assert answer == {"ok": {"canonical": expected, "digest": digest(value)}}


_json_texts = st.one_of(
    _values.filter(lambda v: not isinstance(v, frozenset)).map(
        lambda v: json.dumps(v, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=24),
)


@settings(max_examples=300)
@given(_json_texts, st.data())
def test_canonicalize_text_agrees_on_mutated_text(node: Node, text: bytes, data: Any) -> None:
    if text and data.draw(st.booleans()):  # one byte changed: mostly a refusal somewhere
        at = data.draw(st.integers(0, len(text) - 1))
        text = text[:at] + bytes([data.draw(st.integers(0, 255))]) + text[at + 1 :]
    answer = node("text", hex=text.hex())
    try:
        expected = canonicalize_text(text).decode()
    except CanonicalJSONError as error:
        assert answer == {"error": python_failure(error)}
        return
    assert answer == {"ok": expected}


_json_strings = st.one_of(
    _values.filter(lambda v: not isinstance(v, frozenset)).map(
        lambda v: json.dumps(v, ensure_ascii=False, default=str)
    ),
    st.lists(st.sampled_from(['"', "[", "]", "1", ",", "\n", "\ud800", "\udfff", "é", "{"])).map(
        "".join
    ),
).filter(lambda s: _PAIR.search(s) is None)


@settings(max_examples=200)
@given(_json_strings)
def test_canonicalize_text_agrees_on_strings(node: Node, text: str) -> None:
    """A string (not bytes) with a lone surrogate is refused where the surrogate is, unless
    a problem comes first, in both languages."""
    answer = node("string", text=text)
    try:
        expected = canonicalize_text(text).decode()
    except CanonicalJSONError as error:
        assert answer == {"error": python_failure(error)}
        return
    assert answer == {"ok": expected}


def describe(rc: RunContext) -> dict[str, Any]:
    return {
        "digest": rc.digest,
        "head_text": rc.head_text,
        "tail_text": rc.tail_text,
        "sections": [[s.position, s.name, s.digest] for s in rc.sections],
        "facts": [list(p) for p in rc.facts],
    }


_bad_entries = st.one_of(
    st.lists(st.tuples(_text, st.one_of(st.none(), _text))),
    st.lists(st.one_of(st.tuples(_text), st.integers(0, 3), _text, st.lists(_text, max_size=3))),
    st.dictionaries(_text, _text, max_size=2),
    st.just(frozenset()),
    st.integers(0, 3),
    st.none(),
)
_argument = st.one_of(unique_pairs(), _bad_entries)


@settings(max_examples=300)
@given(st.fixed_dictionaries({}, optional=dict.fromkeys(ARGUMENT, _argument)))
def test_runcontext_agrees(node: Node, args: dict[str, Any]) -> None:
    answer = node("runcontext", args=transport(args))
    try:
        expected = describe(RunContext(**args))
    except RunContextError as error:
        assert answer == {"error": python_failure(error)}
        return
    assert answer == {"ok": expected}


def _verified(path: Path) -> dict[str, Any]:
    v = verify_bytes(path.read_bytes())
    return {
        "messages": [canonical_json(m).decode() for m in v.messages],
        "runs": [
            {
                "number": r.number,
                "digest": r.digest,
                "messages": r.messages,
                "time": r.timestamp,
                "context": describe(r.context),
            }
            for r in v.runs
        ],
        "chain": v.chain,
    }


_message_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": _message_text},
        optional={
            "n": st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False))
        },
    ),
    min_size=1,
    max_size=3,
)
_contexts = st.fixed_dictionaries(
    {},
    optional={
        "head_sections": unique_pairs(),
        "facts": unique_pairs(),
        "tail_sections": unique_pairs(),
    },
).filter(
    # A valid context: section names are unique across head and tail together.
    lambda c: (
        not (
            {name for name, _ in c.get("head_sections", [])}
            & {name for name, _ in c.get("tail_sections", [])}
        )
    )
)


@settings(max_examples=25)
@given(
    st.booleans(),
    st.lists(st.tuples(_messages, st.one_of(st.none(), _contexts)), min_size=1, max_size=4),
)
def test_transcripts_continue_each_other(
    node: Node, tmp_path_factory: pytest.TempPathFactory, js_first: bool, turns: list[Any]
) -> None:
    """Python and JavaScript take turns recording runs in one file; both read it the same."""
    path = tmp_path_factory.mktemp("transcript") / "t.jsonl"
    system = {"role": "system", "content": "You are a careful agent."}
    start = datetime(2026, 1, 31, 9, 30, tzinfo=UTC)
    conversation: list[Any] = [system]
    if js_first:
        assert "ok" in node("create", path=str(path), messages=conversation, time=start.isoformat())
    else:
        Session.create(path, conversation, clock=lambda: start).close()
    for turn, (new, context) in enumerate(turns):
        conversation = conversation + new
        when = start + timedelta(minutes=turn + 1, microseconds=1000 * turn)
        reply = {"role": "assistant", "content": f"reply {turn}"}
        if (turn % 2 == 0) == js_first:
            answer = node(
                "record",
                path=str(path),
                messages=conversation,
                context=None if context is None else transport(context),
                reply=reply,
                time=when.isoformat(),
            )
            assert "ok" in answer, answer
        else:
            with Session.open(path, clock=lambda when=when: when) as session:
                rc = None if context is None else RunContext(**context)
                session.record_run(conversation, rc, reply)
        conversation = [*conversation, reply]
    assert node("verify", path=str(path)) == {"ok": _verified(path)}
    assert len(_verified(path)["runs"]) == len(turns)
