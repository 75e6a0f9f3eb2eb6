"""The run loop: splice, call the backend, record the run, weigh the context."""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext, adapters
from runcontext.budget.calibration import MESSAGE_OVERHEAD
from runcontext.loop import Loop, RunOutcome
from runcontext.tokenizers import tiktoken_counter
from runcontext.transcript.session import (
    ConversationMismatchError,
    SeedMismatchError,
    Session,
    TornTranscriptError,
)

SEED = {"role": "system", "content": "You are a careful coding agent."}
AGENTS = "Keep the build green.\n" * 400


def clock() -> datetime:
    return datetime(2025, 1, 31, 9, 30, tzinfo=UTC)


def context(day: str, agents: str = AGENTS) -> RunContext:
    return RunContext(head_sections=[("AGENTS.md", agents)], facts=[("date", day)])


class Backend:
    """Records each request and answers with its length."""

    def __init__(self) -> None:
        self.requests: list[list[Any]] = []

    def __call__(self, request: list[Any]) -> dict[str, Any]:
        self.requests.append(request)
        return {"role": "assistant", "content": f"saw {len(request)} messages"}


class CountingCounter:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def test_run_splices_calls_the_backend_and_returns_the_conversation() -> None:
    backend = Backend()
    messages = [SEED, {"role": "user", "content": "Fix it."}]
    snapshot = copy.deepcopy(messages)
    ctx = context("Monday")

    outcome = Loop(backend).run(messages, context=ctx)

    assert backend.requests == [[ctx.head_message, *messages, ctx.tail_message]]
    assert outcome.request is backend.requests[0]
    assert outcome.request[1] is messages[0] and outcome.request[2] is messages[1]
    reply = {"role": "assistant", "content": "saw 4 messages"}
    assert outcome.reply == reply
    assert outcome.messages == [*messages, reply]  # the conversation: never the context
    assert outcome.messages is not messages
    assert messages == snapshot and len(messages) == 2  # the caller's list is not mutated
    assert outcome.context_digest == ctx.digest
    assert outcome.context_tokens is None  # no counter: no number is invented
    assert outcome.run is None


def test_no_context_is_the_empty_context() -> None:
    backend = Backend()
    outcome = Loop(backend).run([SEED])
    assert backend.requests == [[SEED]]
    assert outcome.context_digest == RunContext().digest


def test_a_session_records_the_conversation_and_one_envelope_per_run(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, [SEED], clock=clock)
    loop = Loop(Backend(), session=session)
    messages: list[Any] = [SEED]
    for day in ("Monday", "Tuesday"):
        messages = [*messages, {"role": "user", "content": f"What day is it? ({day})"}]
        outcome = loop.run(messages, context=context(day))
        assert outcome.run is not None
        assert outcome.run.digest == outcome.context_digest
        messages = outcome.messages
    session.close()

    records = [json.loads(raw) for raw in path.read_bytes().splitlines()]
    assert [(r["type"], r.get("index", r.get("run"))) for r in records] == [
        ("header", None),
        ("message", 0),
        ("message", 1),
        ("section", None),
        ("run-context", 1),
        ("message", 2),
        ("message", 3),
        ("run-context", 2),  # AGENTS.md is not stored again
        ("message", 4),
    ]
    with Session.open(path) as reopened:
        assert reopened.messages() == messages
        assert [run.context for run in reopened.runs()] == [context("Monday"), context("Tuesday")]
        assert [run.messages for run in reopened.runs()] == [2, 4]


def test_a_session_refuses_another_conversation_before_calling_the_backend(
    tmp_path: Path,
) -> None:
    backend = Backend()
    session = Session.create(tmp_path / "s.jsonl", [SEED, {"role": "user", "content": "hi"}])
    with pytest.raises(SeedMismatchError):
        Loop(backend, session=session).run([{"role": "system", "content": "Someone else."}])
    with pytest.raises(ValueError, match="has 1 messages but the transcript already records 2"):
        Loop(backend, session=session).run([SEED])
    assert backend.requests == []
    session.close()


# --- nothing is spent on a run that cannot be recorded -----------------------------------------


def test_a_read_only_session_is_refused_before_calling_the_backend(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, [SEED]).close()
    backend = Backend()
    with (
        Session.open(path, writable=False) as session,
        pytest.raises(ValueError, match="the session is read-only"),
    ):
        Loop(backend, session=session).run([SEED, {"role": "user", "content": "hi"}])
    with Session.open(path, writable=False) as session:
        loop = Loop(backend, session=session)
        with pytest.raises(ValueError, match="the session is read-only"):
            asyncio.run(loop.arun([SEED, {"role": "user", "content": "hi"}]))
    assert backend.requests == []


def test_a_torn_transcript_is_refused_before_calling_the_backend(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, [SEED]).close()
    with path.open("ab") as file:
        file.write(b'{"index":1,"mess')  # a writer killed mid-append
    backend = Backend()
    with pytest.warns(UserWarning, match="the last record is torn"):
        session = Session.open(path)
    with session, pytest.raises(TornTranscriptError, match=":3: the file ends with a torn record"):
        Loop(backend, session=session).run([SEED, {"role": "user", "content": "hi"}])
    assert backend.requests == []


def test_a_transcript_torn_after_opening_is_refused_before_calling_the_backend(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, [SEED])
    with path.open("ab") as file:  # another writer dies mid-append after this session opened
        file.write(b'{"index":1,"mess')
    backend = Backend()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TornTranscriptError):
            Loop(backend, session=session).run([SEED, {"role": "user", "content": "hi"}])
    assert backend.requests == []
    session.close()


def test_a_diverged_conversation_is_refused_before_calling_the_backend(tmp_path: Path) -> None:
    backend = Backend()
    question = {"role": "user", "content": "hi"}
    with Session.create(tmp_path / "s.jsonl", [SEED, question]) as session:
        edited = {"role": "user", "content": "hello"}  # the last recorded message, changed
        with pytest.raises(ConversationMismatchError, match="its message 1 has digest") as info:
            Loop(backend, session=session).run([SEED, edited])
        assert info.value.index == 1
    assert backend.requests == []


def test_a_failing_counter_is_refused_before_calling_the_backend(tmp_path: Path) -> None:
    def broken(text: str) -> int:
        raise RuntimeError("tokenizer down")

    backend = Backend()
    path = tmp_path / "s.jsonl"
    with Session.create(path, [SEED]) as session:
        loop = Loop(backend, session=session, counter=broken)
        with pytest.raises(RuntimeError, match="tokenizer down"):
            loop.run([SEED, {"role": "user", "content": "hi"}], context=context("Monday"))
        assert session.runs() == []
        assert session.messages() == [SEED]
    assert backend.requests == []


def test_a_request_the_adapter_refuses_is_refused_before_calling_the_backend() -> None:
    backend = Backend()
    loop = Loop(backend, adapter=adapters.openai_chat)
    with pytest.raises(ValueError, match="role"):
        loop.run([{"role": "narrator", "content": "Once upon a time"}])
    assert backend.requests == []


# --- adapters -----------------------------------------------------------------------------------


def test_the_adapter_builds_an_anthropic_request_body(tmp_path: Path) -> None:
    seen: list[Any] = []

    def backend(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)  # e.g. client.messages.create(model=..., max_tokens=..., **body)
        return {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}

    anthropic = functools.partial(adapters.anthropic_messages, cache=True)
    messages = [{"role": "user", "content": "Fix the flaky test."}]
    snapshot = copy.deepcopy(messages)
    ctx = context("Monday")
    session = Session.create(tmp_path / "s.jsonl", messages, clock=clock)
    outcome = Loop(backend, session=session, adapter=anthropic).run(messages, context=ctx)

    assert seen == [adapters.anthropic_messages(messages, ctx, cache=True)]
    assert outcome.request is seen[0]
    assert outcome.request["system"][0] == {
        "type": "text",
        "text": ctx.head_text,
        "cache_control": {"type": "ephemeral"},
    }
    assert outcome.request["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": ctx.tail_text}],
    }
    assert messages == snapshot  # the adapter marked a copy, not the caller's message
    reply = {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert outcome.messages == [*messages, reply]
    assert session.messages() == [*messages, reply]  # the transcript holds no context
    assert session.context_at(1) == ctx
    session.close()


def test_the_adapter_builds_an_openai_chat_request() -> None:
    backend = Backend()
    ctx = context("Monday")
    messages = [{"role": "user", "content": "Fix it."}]
    adapter = functools.partial(adapters.openai_chat, role="developer")
    outcome = Loop(backend, adapter=adapter).run(messages, context=ctx)
    assert backend.requests == [
        [
            {"role": "developer", "content": ctx.head_text},
            messages[0],
            {"role": "developer", "content": ctx.tail_text},
        ]
    ]
    assert outcome.request is backend.requests[0]
    assert outcome.messages == [*messages, {"role": "assistant", "content": "saw 3 messages"}]


def test_a_non_callable_adapter_is_refused() -> None:
    with pytest.raises(TypeError, match="adapter: expected a callable"):
        Loop(Backend(), adapter="openai")  # type: ignore[arg-type]


def test_the_counter_weighs_each_distinct_context_once() -> None:
    counter = CountingCounter()
    loop = Loop(Backend(), counter=counter)
    monday, tuesday = context("Monday"), context("Tuesday")
    outcomes = [loop.run([SEED], context=ctx) for ctx in [monday] * 40 + [tuesday, monday]]

    # Head and tail of Monday once, then of Tuesday once: forty runs, one count. (The
    # conversation is counted too: once, since the same one is recognised later.)
    contexts = {monday.head_text, monday.tail_text, tuesday.head_text, tuesday.tail_text}
    assert [text for text in counter.texts if text in contexts] == [
        monday.head_text,
        monday.tail_text,
        tuesday.head_text,
        tuesday.tail_text,
    ]
    assert len(counter.texts) == 5
    # Each of the head and the tail is a message: its text plus the per-message overhead.
    weight = len(AGENTS.split()) + len(str(monday.tail_text).split()) + 2 * MESSAGE_OVERHEAD
    assert {o.context_tokens for o in outcomes} == {weight}


def test_a_context_with_no_text_weighs_nothing_without_calling_the_counter() -> None:
    counter = CountingCounter()
    assert Loop(Backend(), counter=counter).run([SEED]).context_tokens == 0
    assert counter.texts == ["system\nYou are a careful coding agent."]  # the conversation


def test_a_bad_counter_or_reply_is_refused() -> None:
    with pytest.raises(TypeError, match="counter: expected a token count"):
        Loop(Backend(), counter=lambda text: 1.5).run([SEED], context=context("x"))  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="reply as a message mapping with a 'role'"):
        Loop(lambda request: "just text").run([SEED])
    with pytest.raises(TypeError, match=r"messages\[0\]"):
        Loop(Backend()).run(["not a message"])  # type: ignore[list-item]


def test_arun_awaits_an_async_backend_and_records_the_run(tmp_path: Path) -> None:
    seen: list[list[Any]] = []

    async def backend(request: list[Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        seen.append(request)
        return {"role": "assistant", "content": "async reply"}

    session = Session.create(tmp_path / "s.jsonl", [SEED], clock=clock)
    counter = CountingCounter()
    loop = Loop(backend, session=session, counter=counter)
    messages = [SEED, {"role": "user", "content": "hi"}]
    ctx = context("Monday")

    async def main() -> list[RunOutcome]:
        first = await loop.arun(messages, context=ctx)
        second = await loop.arun(
            [*first.messages, {"role": "user", "content": "again"}], context=ctx
        )
        return [first, second]

    first, second = asyncio.run(main())
    assert seen[0] == [ctx.head_message, *messages, ctx.tail_message]
    assert first.messages == [*messages, {"role": "assistant", "content": "async reply"}]
    assert len(messages) == 2
    assert second.run is not None and second.run.number == 2
    # Head and tail once for both runs; each message once (run 2 counts only what it added).
    assert len(counter.texts) == 2 + 4
    assert session.messages() == [*second.messages]
    session.close()


def test_run_refuses_an_async_backend() -> None:
    async def backend(request: list[Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": "never"}

    with pytest.raises(TypeError, match=r"await loop\.arun"):
        Loop(backend).run([SEED])


def test_arun_accepts_a_plain_backend() -> None:
    outcome = asyncio.run(Loop(Backend()).arun([SEED], context=context("x")))
    assert outcome.reply == {"role": "assistant", "content": "saw 3 messages"}


# --- the tiktoken counter ---------------------------------------------------------------------


def tiny_encoding() -> Any:
    """A byte-level encoding with one merge ("ab"), built here: no BPE file to download."""
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    return tiktoken.Encoding(
        name="tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )


def test_the_tiktoken_counter_counts_tokens_of_a_given_encoding() -> None:
    count = tiktoken_counter(tiny_encoding())
    assert count("abab") == 2  # two merged "ab" tokens
    assert count("abc d") == 4  # "ab", "c", " ", "d"
    assert count("<|endoftext|>") == len("<|endoftext|>")  # special-looking text is ordinary
    loop = Loop(Backend(), counter=count)
    ctx = context("Monday", agents="ab ab")
    expected = count(str(ctx.head_text)) + count(str(ctx.tail_text)) + 2 * MESSAGE_OVERHEAD
    assert loop.run([SEED], context=ctx).context_tokens == expected


def test_the_tiktoken_counter_explains_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"pip install 'runcontext\[tiktoken\]'"):
        tiktoken_counter()


def test_the_tiktoken_counter_refuses_a_non_encoding() -> None:
    with pytest.raises(TypeError, match=r"encoding name or a tiktoken\.Encoding"):
        tiktoken_counter(42)  # type: ignore[arg-type]
