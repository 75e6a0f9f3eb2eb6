"""Counting accuracy and the cost of counting per ``Loop.run``.

Two experiments (benches/RESULTS.md, *Counting and budgets*):

* **Accuracy.** A fake OpenAI server on 127.0.0.1 bills every request the real ``openai``
  SDK sends it with a real tokenizer, the way OpenAI bills chat (below), and answers a
  scripted 50-request tool-using conversation. ``Loop(counter=..., reply=openai_chat_reply)``
  counts each request before it is sent; the count is compared with what the server billed
  for *that* request. Two counts per request: ``estimated``, a ``RequestCounter`` that is
  never calibrated, and the loop's own, calibrated from the second request on. Two local
  counters: the real tokenizer, and a crude ``len(text) // 4``.
* **Overhead.** An in-process backend (no HTTP) returning a fixed completion with usage;
  ``Loop.run`` on the 20th request of the same conversation with a counter and a budget
  against the same loop without them, interleaved, and the split of the difference.

*The real tokenizer.* tiktoken downloads its BPE files, and this machine reaches no network
but PyPI. The ``bpe-openai`` wheel (in the ``bench`` extra) bundles OpenAI's
``o200k_base.tiktoken`` ranks; their SHA-256 is checked against the hash tiktoken itself
expects for that file (``tiktoken_ext.openai_public``), and a ``tiktoken.Encoding`` is built
from them with tiktoken's o200k pattern: the counts are tiktoken's own. Without the two
packages a deterministic stand-in (words and punctuation) is used, and the output says so.

*Billing*, per OpenAI's chat accounting: each message ``3 + tokens(role) + tokens(content)``
(+ ``tokens(name)``, + the tokens of each tool call's function name and arguments), + 3 to
prime the reply, + the tool catalogue rendered in the TypeScript-like ``namespace functions
{ type name = (_: {...}) => any; }`` form OpenAI is reported to put in the system prompt.
That rendering is an approximation: its point is to differ from runcontext's estimate (the
canonical JSON of the tool list), as a real provider's rendering does.

    python benches/bench_budget.py                  # both experiments
    python benches/bench_budget.py --requests 10    # a shorter conversation
    python benches/bench_budget.py --instructions   # Loop.run's instructions (callgrind)
    pytest benches/bench_budget.py --benchmark-only # the Loop.run overhead group
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import statistics
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runcontext import Loop, RunContext, Session, digest
from runcontext.adapters.caching import CacheWarning
from runcontext.adapters.replies import openai_chat_reply
from runcontext.budget import Budget, RequestCounter, Usage

from _timing import benchmark_call, fmt_time, interleaved_medians

MODEL = "gpt-6-luna"
SEED = 15
REQUESTS = 50
OVERHEAD_REQUEST = 20  # the "typical request" of the overhead experiment (1-based)


# --- the tokenizer ------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokenizer:
    name: str  # what the output calls it
    real: bool  # the real o200k_base, or the stand-in
    count: Callable[[str], int]


def _stand_in(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def real_tokenizer() -> Tokenizer:
    """tiktoken's o200k_base built from the ranks bpe-openai bundles, or a deterministic
    stand-in when either package is missing.

    tiktoken's own ``o200k_base()`` spec is used, its loader pointed at bpe-openai's copy of
    the file: tiktoken checks the SHA-256 it expects of ``o200k_base.tiktoken`` and supplies
    the pattern and special tokens, so the counts are tiktoken's."""
    try:
        import importlib.util

        import tiktoken
        import tiktoken.load
        from tiktoken_ext import openai_public
    except ImportError:
        return Tokenizer("stand-in (words and punctuation; no tiktoken)", False, _stand_in)
    # The wheel's data file, found without importing bpe_openai (whose import warns).
    package = importlib.util.find_spec("bpe_openai")
    try:
        if package is None or package.origin is None:
            raise ImportError("bpe_openai")
        data = Path(package.origin).parent / "data" / "o200k_base.tiktoken.gz"
        ranks_file = gzip.decompress(data.read_bytes())
    except (ImportError, OSError):
        return Tokenizer("stand-in (words and punctuation; no bpe-openai)", False, _stand_in)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "o200k_base.tiktoken"
        local.write_bytes(ranks_file)

        def load(url: str, expected_hash: str) -> dict[bytes, int]:
            assert url.endswith("/o200k_base.tiktoken"), url
            return tiktoken.load.load_tiktoken_bpe(str(local), expected_hash=expected_hash)

        original = openai_public.load_tiktoken_bpe
        cache = os.environ.get("TIKTOKEN_CACHE_DIR")
        openai_public.load_tiktoken_bpe = load  # type: ignore[assignment]
        os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the file; copy nothing into tiktoken's cache
        try:
            spec = openai_public.o200k_base()  # ValueError if the hash is not tiktoken's
        finally:
            openai_public.load_tiktoken_bpe = original
            if cache is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = cache
    from runcontext.tokenizers import tiktoken_counter

    encoding = tiktoken.Encoding(**spec)
    return Tokenizer(
        "o200k_base (tiktoken; ranks from bpe-openai)", True, tiktoken_counter(encoding)
    )


def bpe_openai_agrees(count: Callable[[str], int], texts: Sequence[str]) -> str:
    """Whether bpe-openai's own tokenizer counts ``texts`` as tiktoken does."""
    try:
        from bpe_openai import _bindings
    except ImportError:
        return "bpe-openai not installed"
    other = _bindings.tokenizer_for_encoding("o200k_base")
    differ = sum(other.count(t) != count(t) for t in texts)
    return f"bpe-openai's own count differs from tiktoken's on {differ} of {len(texts)} texts"


def crude(text: str) -> int:
    """A bad counter on purpose: four characters a token."""
    return len(text) // 4


# --- the conversation ---------------------------------------------------------------------

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository and return its contents.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path from the repository root."},
                    "start": {"type": "integer", "description": "First line, 1-based."},
                    "end": {"type": "integer", "description": "Last line, inclusive."},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "grep",
            "description": "Search the repository for a regular expression.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "A Rust regex."},
                    "path": {"type": "string", "description": "A directory or file."},
                    "ignore_case": {"type": "boolean"},
                },
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite, or one test file, and return its output.",
            "parameters": {
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": "A test file or node id."},
                    "mode": {"type": "string", "enum": ["quick", "full"]},
                },
                "required": [],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace one exact snippet of a file with another.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old": {"type": "string", "description": "Text to replace, exactly once."},
                    "new": {"type": "string"},
                },
                "required": ["path", "old", "new"],
            },
        },
    },
]

IDENTITY = "You are a careful coding agent working in a Python and Rust monorepo."
AGENTS_MD = "\n".join(
    f"- rule {i}: {rule}"
    for i, rule in enumerate(
        [
            "keep functions small and named for what they do.",
            "every error says what was wrong, where, and how to fix it.",
            "tests assert real behaviour; never time a test.",
            "run `make test` and `make lint` before each commit.",
            "the format rules live once, in rust/core.",
        ]
        * 12
    )
)  # about 3.5 KB
TODO = "1. read the failing test\n2. fix the parser\n3. run the suite"
_WORDS = [
    "parser",
    "token",
    "record",
    "chain",
    "digest",
    "session",
    "budget",
    "counter",
    "window",
    "head",
    "tail",
    "fact",
    "request",
    "message",
    "reply",
    "tool",
    "schema",
    "error",
    "path",
    "index",
    "line",
    "column",
    "buffer",
    "cache",
    "prefix",
    "transcript",
]


def context(request: int) -> RunContext:
    """The run's context: a stable head, and facts (a clock) that change every request."""
    return RunContext(
        head_sections=[("identity", IDENTITY), ("agents", AGENTS_MD)],
        facts=[
            ("date", f"2026-12-01T09:{request // 60:02d}:{request % 60:02d}Z"),
            ("cwd", "/home/dev/work/monorepo/services/api"),
            ("git", f"main @ {hashlib.sha1(str(request // 5).encode()).hexdigest()[:7]}"),
        ],
        tail_sections=[("todo", TODO)],
    )


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _file(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        name = "_".join(rng.sample(_WORDS, 2))
        out.append(
            rng.choice(
                [
                    f"def {name}(value: int, *, limit: int = {rng.randint(1, 4096)}) -> str:",
                    f"    {name} = {rng.choice(_WORDS)}.get({name!r}, {rng.randint(0, 99)})",
                    f"    if {name} is None:  # {_sentence(rng, 5)}",
                    f'        raise ValueError(f"{name}: expected {{limit}}, got {{value!r}}")',
                    f"    return {rng.choice(_WORDS)}[{i}:{i + rng.randint(1, 9)}]",
                    "",
                ]
            )
        )
    return "\n".join(out)


def _grep(rng: random.Random, hits: int) -> str:
    return "\n".join(
        f"python/runcontext/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}:"
        f"    {_sentence(rng, rng.randint(4, 12))}"
        for _ in range(hits)
    )


def _tests(rng: random.Random) -> str:
    lines = [f"tests/test_{rng.choice(_WORDS)}.py::test_{w} PASSED" for w in rng.sample(_WORDS, 12)]
    lines.append(f"FAILED tests/test_{rng.choice(_WORDS)}.py::test_round_trip - AssertionError")
    lines.append(_file(rng, rng.randint(10, 40)))
    lines.append(f"==== 1 failed, {rng.randint(200, 900)} passed in {rng.random() * 9:.2f}s ====")
    return "\n".join(lines)


@dataclass
class Turn:
    """One user turn: the question, the tool-calling reply, the tool results, the answer."""

    user: dict[str, Any]
    calls: dict[str, Any]  # the assistant's tool-calling message (the server's first reply)
    results: list[dict[str, Any]]
    answer: dict[str, Any]  # the assistant's text (the server's second reply)


def conversation(requests: int = REQUESTS, seed: int = SEED) -> list[Turn]:
    """``requests // 2`` turns of two requests each: a tool call, then the answer."""
    rng = random.Random(seed)
    turns = []
    for t in range((requests + 1) // 2):
        calls, results = [], []
        for c in range(rng.choice([1, 1, 2, 3])):
            call_id = f"call_{t:02d}{c}{rng.getrandbits(40):010x}"
            tool = rng.choice(["read_file", "read_file", "grep", "run_tests"])
            if tool == "read_file":
                args: dict[str, Any] = {"path": f"python/runcontext/{rng.choice(_WORDS)}.py"}
                if rng.random() < 0.5:
                    args |= {"start": rng.randint(1, 200), "end": rng.randint(201, 600)}
                output = _file(rng, rng.randint(20, 300))
            elif tool == "grep":
                args = {"pattern": f"def {rng.choice(_WORDS)}_", "path": "python/"}
                output = _grep(rng, rng.randint(5, 80))
            else:
                args = {"target": f"tests/test_{rng.choice(_WORDS)}.py", "mode": "quick"}
                output = _tests(rng)
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)},
                }
            )
            results.append({"role": "tool", "tool_call_id": call_id, "content": output})
        turns.append(
            Turn(
                user={"role": "user", "content": _sentence(rng, rng.randint(8, 60))},
                calls={"role": "assistant", "content": None, "tool_calls": calls},
                results=results,
                answer={
                    "role": "assistant",
                    "content": " ".join(_sentence(rng, 12) for _ in range(rng.randint(3, 25))),
                },
            )
        )
    return turns


def requests_of(turns: Sequence[Turn], requests: int) -> Iterator[tuple[list[Any], Any]]:
    """Each request's conversation (without the context) and the reply the server scripts;
    the conversation continues with the loop's reply (``openai_chat_reply`` of the SDK's
    response, which is the scripted message without its null members)."""
    history: list[Any] = []
    made = 0
    for turn in turns:
        for step in ("calls", "answer"):
            if made == requests:
                return
            if step == "calls":
                history.append(turn.user)
                scripted = turn.calls
            else:
                scripted = turn.answer
            reply = yield list(history), scripted
            history.append(reply)
            if step == "calls":
                history.extend(turn.results)
            made += 1


# --- the fake server: OpenAI's chat accounting with the real tokenizer -----------------------


def _ts_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"{_ts_type(schema.get('items', {}))}[]"
    return {"integer": "number", "number": "number", "boolean": "boolean"}.get(kind, "string")


def render_tools(tools: Sequence[dict[str, Any]]) -> str:
    """The tool catalogue as OpenAI is reported to render it into the prompt (an
    approximation: the point is that it is not the JSON runcontext's estimate counts)."""
    lines = ["# Tools", "", "## functions", "", "namespace functions {", ""]
    for tool in tools:
        function = tool["function"]
        if function.get("description"):
            lines.append(f"// {function['description']}")
        lines.append(f"type {function['name']} = (_: {{")
        parameters = function.get("parameters", {})
        required = set(parameters.get("required", []))
        for name, schema in parameters.get("properties", {}).items():
            if schema.get("description"):
                lines.append(f"// {schema['description']}")
            lines.append(f"{name}{'' if name in required else '?'}: {_ts_type(schema)},")
        lines.append("}) => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def billed_prompt(body: dict[str, Any], count: Callable[[str], int]) -> int:
    """The prompt tokens of a chat request, as OpenAI counts them (the tools approximated)."""
    total = 3  # the reply's priming
    for message in body["messages"]:
        total += 3 + count(message["role"])
        content = message.get("content")
        if isinstance(content, str):
            total += count(content)
        elif isinstance(content, list):
            total += sum(count(p.get("text", "")) for p in content if isinstance(p, dict))
        if message.get("name"):
            total += count(message["name"])
        for call in message.get("tool_calls") or []:
            total += count(call["function"]["name"]) + count(call["function"]["arguments"])
    if body.get("tools"):
        total += count(render_tools(body["tools"]))
    return total


class FakeOpenAI:
    """``/v1/chat/completions`` on 127.0.0.1: bills each request and answers with the next
    scripted reply (``self.script``)."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count
        self.script: Any = None  # the next reply message
        self.billed: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = billed_prompt(body, server.count)
                server.billed.append(prompt)
                message = dict(server.script)
                answer = {
                    "id": f"chatcmpl-{len(server.billed)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": 50,
                        "total_tokens": prompt + 50,
                    },
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- accuracy -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """One request: what was billed, the never-calibrated estimate, the loop's count."""

    billed: int
    estimated: int
    loop: int
    quality: str


def accuracy(
    tokenizer: Callable[[str], int], counter: Callable[[str], int], requests: int = REQUESTS
) -> list[Measured]:
    """Run the scripted conversation through a Loop with ``counter``, billed by a server
    counting with ``tokenizer``; one :class:`Measured` per request."""
    import openai

    turns = conversation(requests)
    never_calibrated = RequestCounter(counter)
    measured: list[Measured] = []
    with FakeOpenAI(tokenizer) as server, tempfile.TemporaryDirectory() as tmp:
        client = openai.OpenAI(base_url=server.url, api_key="test", max_retries=0)
        session = Session.create(Path(tmp) / "t.jsonl", [turns[0].user])
        loop = _loop(
            lambda body: client.chat.completions.create(model=MODEL, messages=body, tools=TOOLS),
            session,  # the transcript the accuracy figures can be checked against
            counter=counter,
            model=MODEL,
            tools=TOOLS,
            budget=Budget(context_window=1_050_000, reserved_output=32_768, safety_margin=4_096),
            reply=openai_chat_reply,
        )
        steps = requests_of(turns, requests)
        messages, scripted = next(steps)
        for index in range(requests):
            ctx = context(index)
            estimate = never_calibrated.count_request(messages, ctx, model=MODEL, tools=TOOLS)
            server.script = scripted
            outcome = loop.run(messages, context=ctx)
            assert outcome.usage is not None and outcome.count is not None
            assert outcome.usage.input == server.billed[-1]
            measured.append(
                Measured(
                    server.billed[-1], estimate.total, outcome.count.total, outcome.count.quality
                )
            )
            try:
                messages, scripted = steps.send(outcome.reply)
            except StopIteration:
                break
        session.close()
    return measured


@dataclass(frozen=True)
class Errors:
    n: int
    mean_pct: float
    max_pct: float
    mean_tokens: float
    max_tokens: int


def errors(pairs: Sequence[tuple[int, int]]) -> Errors | None:
    """Absolute errors of (count, billed) pairs."""
    if not pairs:
        return None
    tokens = [abs(c - b) for c, b in pairs]
    pct = [100 * abs(c - b) / b for c, b in pairs]
    return Errors(
        len(pairs), statistics.fmean(pct), max(pct), statistics.fmean(tokens), max(tokens)
    )


def report_accuracy(name: str, rows: Sequence[Measured]) -> dict[str, Errors | None]:
    by: dict[str, Errors | None] = {
        "estimated (never calibrated)": errors([(r.estimated, r.billed) for r in rows])
    }
    for quality in ("estimated", "calibrated", "exact"):
        by[f"loop, {quality}"] = errors([(r.loop, r.billed) for r in rows if r.quality == quality])
    print(
        f"\n{name}: {len(rows)} requests, billed {rows[0].billed:,} to {rows[-1].billed:,} tokens"
    )
    print(f"  {'count':<30} {'n':>3} {'mean err':>9} {'max err':>9} {'mean tok':>9} {'max tok':>8}")
    for label, e in by.items():
        if e is not None:
            print(
                f"  {label:<30} {e.n:>3} {e.mean_pct:>8.2f}% {e.max_pct:>8.2f}% "
                f"{e.mean_tokens:>9,.0f} {e.max_tokens:>8,}"
            )
    return by


# --- overhead -----------------------------------------------------------------------------


def typical(requests: int = OVERHEAD_REQUEST) -> tuple[list[Any], list[Any], RunContext]:
    """The conversation of the previous request and of request ``requests`` (1-based), and
    its context; the replies are the scripted messages (as ``openai_chat_reply`` gives them)."""
    turns = conversation(requests)
    steps = requests_of(turns, requests)
    previous: list[Any] = []
    messages, scripted = next(steps)
    for _ in range(requests - 1):
        previous = messages
        reply = {k: v for k, v in scripted.items() if v is not None}
        messages, scripted = steps.send(reply)
    return previous, messages, context(requests - 1)


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": MODEL,
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 30_000, "completion_tokens": 1, "total_tokens": 30_001},
}


def _backend(body: Any) -> dict[str, Any]:
    return COMPLETION


def _loop(*args: Any, **kwargs: Any) -> Loop:
    """A ``Loop`` with the default adapter on ``MODEL``. Its ``CacheWarning`` (splice sends no
    cache breakpoint) is beside the point here: the fake server bills but does not cache, and
    these loops measure counting and budgets."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        return Loop(*args, **kwargs)


def overhead_runs(counter: Callable[[str], int]) -> dict[str, Callable[[], object]]:
    """``Loop.run`` of the typical request with counter + budget, and without; each call
    starts from the same state (the previous request billed, this one not yet)."""
    previous, messages, ctx = typical()
    plain = Loop(_backend, reply=openai_chat_reply)
    requests = RequestCounter(counter)
    counted = _loop(
        _backend,
        counter=requests,
        model=MODEL,
        tools=TOOLS,
        budget=Budget(context_window=1_050_000, reserved_output=32_768, safety_margin=4_096),
        reply=openai_chat_reply,
    )
    # The previous request was sent and billed: this one is counted calibrated.
    requests.calibrate(
        requests.count_request(previous, context(OVERHEAD_REQUEST - 2), model=MODEL, tools=TOOLS),
        Usage(input=28_000),
    )
    # Keep the state between calls: a counter remembers each conversation it counted, so a
    # second run of the same request would find all of it known and count nothing appended.
    # Restoring the state is a list copy of <= 8 entries.
    shapes = requests._shapes  # the bench resets the counter's memory
    saved = {key: list(prefixes) for key, prefixes in shapes.items()}

    def restore() -> None:
        for key, prefixes in saved.items():
            shapes[key][:] = prefixes

    def with_counting() -> object:
        outcome = counted.run(messages, context=ctx)  # which calibrates from its usage
        assert outcome.count is not None and outcome.usage is not None
        assert outcome.count.quality == "calibrated"
        restore()
        return outcome

    def without() -> object:
        return plain.run(messages, context=ctx)

    return {"with counter + budget": with_counting, "without": without}


def overhead_split(counter: Callable[[str], int]) -> dict[str, Callable[[], object]]:
    """The parts of the counted run's extra work, each on its own."""
    previous, messages, ctx = typical()
    requests = RequestCounter(counter)
    budget = Budget(context_window=1_050_000, reserved_output=32_768, safety_margin=4_096)
    count = requests.count_request(messages, ctx, model=MODEL, tools=TOOLS)
    appended = messages[len(previous) :]
    usage = Usage(input=30_000)
    loop = _loop(_backend, counter=requests, model=MODEL, budget=budget)
    return {
        f"digest of the conversation ({len(messages)} messages)": lambda: digest(list(messages)),
        f"digest of the billed prefix ({len(previous)})": lambda: digest(list(previous)),
        f"counter on the {len(appended)} appended messages": lambda: [
            requests.count_message(m) for m in appended
        ],
        "tools: canonical JSON + digest": lambda: requests.count_tools(TOOLS),
        "budget check (+ loop.spent())": lambda: budget.check(count, loop.spent()),
        "calibrate": lambda: requests.calibrate(count, usage),
    }


def report_overhead(name: str, counter: Callable[[str], int]) -> float:
    previous, messages, _ = typical()
    size = sum(len(json.dumps(m)) for m in messages)
    runs = interleaved_medians(overhead_runs(counter), repeat=21)
    diff = runs["with counter + budget"] - runs["without"]
    print(
        f"\nLoop.run, request {OVERHEAD_REQUEST}: {len(messages)} messages ({size / 1024:.0f} KB), "
        f"{len(messages) - len(previous)} appended, {len(AGENTS_MD) / 1024:.1f} KB AGENTS.md, "
        f"{len(TOOLS)} tools; counter {name}"
    )
    for label, seconds in runs.items():
        print(f"  {label:<44} {fmt_time(seconds)}")
    print(f"  {'difference (counting + budget)':<44} {fmt_time(diff)}")
    split = interleaved_medians(overhead_split(counter), repeat=21)
    for label, seconds in split.items():
        print(f"    {label:<42} {fmt_time(seconds)}")
    return diff


INSTRUCTION_CALLS = 200
INSTRUCTION_ROWS = {  # label: (counter, overhead_runs row)
    "with counter (o200k_base) + budget": ("real", "with counter + budget"),
    "with counter (len // 4) + budget": ("crude", "with counter + budget"),
    "without counter or budget": ("none", "without"),
}


def _child(which: str, row: str, calls: int) -> None:
    """Under callgrind: one warm-up call of the row, then ``calls`` more."""
    counter = real_tokenizer().count if which == "real" else crude
    call = overhead_runs(counter)[row]
    call()
    for _ in range(calls):
        call()


def instructions() -> None:
    """Instructions per ``Loop.run`` under callgrind: a run with INSTRUCTION_CALLS calls less
    one with none, divided by the calls, so that set-up and imports cancel out."""
    import subprocess
    import sys

    def total(which: str, row: str, calls: int, out: Path) -> int:
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        subprocess.run(
            [*valgrind, sys.executable, __file__, "--child", which, row, str(calls)],
            check=True,
            capture_output=True,
        )
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert match, f"no totals in {out}"
        return int(match.group(1))

    print(f"\nLoop.run, request {OVERHEAD_REQUEST}, instructions per call (callgrind)")
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, (which, row) in INSTRUCTION_ROWS.items():
            base = total(which, row, 0, Path(tmp) / "zero.out")
            full = total(which, row, INSTRUCTION_CALLS, Path(tmp) / "full.out")
            counts[label] = (full - base) // INSTRUCTION_CALLS
    without = counts["without counter or budget"]
    for label, count in counts.items():
        print(f"  {label:<40} {count:>12,}  {count / without:6.2f}×  (+{count - without:,})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=REQUESTS)
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument(
        "--instructions", action="store_true", help="count Loop.run's instructions (valgrind)"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    if args.instructions:
        instructions()
        return 0
    real = real_tokenizer()
    print(f"tokenizer: {real.name}" + ("" if real.real else " -- NOT the real tokenizer"))
    if real.real:
        texts = [render_tools(TOOLS), context(0).head_text or "", context(0).tail_text or ""]
        for turn in conversation(args.requests):
            texts += [turn.user["content"], turn.answer["content"]]
            texts += [r["content"] for r in turn.results]
            texts += [c["function"]["arguments"] for c in turn.calls["tool_calls"]]
        print(f"  {bpe_openai_agrees(real.count, texts)}")
    for label, counter in ((real.name, real.count), ("len(text) // 4", crude)):
        report_accuracy(f"counter {label}", accuracy(real.count, counter, args.requests))
    if not args.no_overhead:
        for label, counter in ((real.name, real.count), ("len(text) // 4", crude)):
            report_overhead(label, counter)
    return 0


# --- pytest -------------------------------------------------------------------------------

OVERHEAD_ROWS = {
    "runcontext Loop.run, counter (o200k_base) + budget": ("real", "with counter + budget"),
    "runcontext Loop.run, counter (len // 4) + budget": ("crude", "with counter + budget"),
    "Loop.run without counter or budget": ("crude", "without"),
}


@pytest.mark.parametrize("implementation", OVERHEAD_ROWS)
def test_loop_run_overhead(benchmark: Any, implementation: str) -> None:
    which, row = OVERHEAD_ROWS[implementation]
    counter = real_tokenizer().count if which == "real" else crude
    benchmark.group = f"budget: Loop.run overhead, request {OVERHEAD_REQUEST} of a tool-using chat"
    benchmark_call(
        benchmark,
        overhead_runs(counter)[row],
        implementation=implementation,
        anchor=row == "without",
    )


def test_accuracy_runs(quick: bool) -> None:
    # Errors, not times: no pytest-benchmark group (skipped under --benchmark-only). It runs
    # the real SDK against the local server; no network.
    real = real_tokenizer()
    rows = accuracy(real.count, real.count, 10 if quick else REQUESTS)
    assert rows[0].quality == "estimated"
    assert all(r.quality == "calibrated" for r in rows[1:])
    by = report_accuracy("check", rows)
    estimated, calibrated = by["estimated (never calibrated)"], by["loop, calibrated"]
    assert estimated is not None and calibrated is not None
    # Calibration is what fixes the tools' rendering: the calibrated count is the closer one.
    assert calibrated.mean_pct < estimated.mean_pct


if __name__ == "__main__":
    raise SystemExit(main())
