"""runcontext.integrations.opentelemetry with the real OpenTelemetry SDK: the attributes a
span gets (names, values, types), no context text unless asked, redacted text when asked,
non-recording spans left alone, and the ImportError without the extra."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from runcontext import RunContext, Session, request_fingerprint
from runcontext.budget import RequestCount, Usage
from runcontext.integrations.opentelemetry import annotate_span

ACCESS_KEY = "AKIAZ3MHQ7RTXK4P2WNB"
SECRET_KEY = "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"
AGENTS_MD = f"Keep the build green.\naws_access_key_id = {ACCESS_KEY}\n"
NOTES = f"deploy with aws_secret_access_key = {SECRET_KEY}"
CONTEXT = RunContext(
    head_sections=[("AGENTS.md", AGENTS_MD)],
    facts=[("branch", "main"), ("clock", "2026-12-01T09:00:00Z")],
    tail_sections=[("notes", NOTES)],
)
COUNT = RequestCount(
    model="gpt-test", head=120, conversation=900, tail=30, tools=64, quality="calibrated"
)
USAGE = Usage(input=1100, output=42, cache_read=1024, cache_write=64)
REVISION = "blake3:" + "ab" * 32
SEED_MESSAGE = {"role": "user", "content": "Fix the flaky test."}


@pytest.fixture
def tracer() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def finished(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


def all_values(span: ReadableSpan) -> list[Any]:
    values: list[Any] = []
    for value in (span.attributes or {}).values():
        values.extend(value if isinstance(value, tuple) else [value])
    return values


def test_every_attribute_with_its_type(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    tracer_, exporter = tracer
    fingerprint = request_fingerprint(model="gpt-test", context=CONTEXT, revision=REVISION)
    with Session.create(tmp_path / "t.jsonl", [SEED_MESSAGE]) as session:
        with tracer_.start_as_current_span("chat gpt-test"):
            returned = annotate_span(
                context=CONTEXT,
                session=session,
                revision=REVISION,
                fingerprint=fingerprint,
                count=COUNT,
                usage=USAGE,
            )
        seed = session.seed
    attributes = dict(finished(exporter).attributes or {})
    sections = CONTEXT.sections
    assert attributes == {
        "runcontext.context.digest": CONTEXT.digest,
        "runcontext.context.section.names": ("AGENTS.md", "notes"),
        "runcontext.context.section.digests": tuple(s.digest for s in sections),
        "runcontext.context.section.positions": ("head", "tail"),
        "runcontext.builder.revision": REVISION,
        "runcontext.request.fingerprint": fingerprint,
        "runcontext.tokens.head": 120,
        "runcontext.tokens.conversation": 900,
        "runcontext.tokens.tail": 30,
        "runcontext.tokens.tools": 64,
        "runcontext.tokens.total": 1114,
        "runcontext.tokens.quality": "calibrated",
        "runcontext.tokens.model": "gpt-test",
        "gen_ai.usage.input_tokens": 1100,
        "gen_ai.usage.output_tokens": 42,
        "gen_ai.usage.cache_read.input_tokens": 1024,
        "gen_ai.usage.cache_write.input_tokens": 64,
        "gen_ai.conversation.id": seed,
    }
    assert seed.startswith("blake3:")
    assert {key: tuple(v) if isinstance(v, list) else v for key, v in returned.items()} == (
        attributes
    )
    # Counts are ints; everything else is a string or an array of strings.
    counts = {key for key in attributes if key.startswith("gen_ai.usage.")}
    counts |= {f"runcontext.tokens.{part}" for part in ("head", "conversation", "tail", "tools")}
    counts.add("runcontext.tokens.total")
    for key, value in attributes.items():
        items = value if isinstance(value, tuple) else (value,)
        assert all(type(item) is (int if key in counts else str) for item in items), key


def test_the_semantic_convention_names_are_the_published_ones() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

    from runcontext.integrations import opentelemetry as module

    for name in (
        "GEN_AI_CONVERSATION_ID",
        "GEN_AI_USAGE_INPUT_TOKENS",
        "GEN_AI_USAGE_OUTPUT_TOKENS",
        "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS",
    ):
        assert getattr(module, name) == getattr(gen_ai, name)
    # open-telemetry/semantic-conventions-genai renamed the write count from `cache_creation`
    # to `cache_write`, in the form of the read count; the package has no constant for it yet
    # (when it has, it must agree).
    expected = gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS.replace("cache_read", "cache_write")
    written = module.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS
    assert written == expected
    published = getattr(gen_ai, "GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS", None)
    assert published in (None, written)
    assert not hasattr(module, "GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS")


def test_only_what_was_given(tracer: tuple[trace.Tracer, InMemorySpanExporter]) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("call") as span:
        annotate_span(span, context=RunContext(), usage=Usage(input=7))
    attributes = dict(finished(exporter).attributes or {})
    assert attributes == {
        "runcontext.context.digest": RunContext().digest,
        "runcontext.context.section.names": (),
        "runcontext.context.section.digests": (),
        "runcontext.context.section.positions": (),
        "gen_ai.usage.input_tokens": 7,  # no output count: the response did not say
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_write.input_tokens": 0,
    }


def test_conversation_id_overrides_the_seed(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    tracer_, exporter = tracer
    with (
        Session.create(tmp_path / "t.jsonl", [SEED_MESSAGE]) as session,
        tracer_.start_as_current_span("call"),
    ):
        annotate_span(context=CONTEXT, session=session, conversation_id="thread-42")
    assert (finished(exporter).attributes or {})["gen_ai.conversation.id"] == "thread-42"


def test_no_text_by_default(tracer: tuple[trace.Tracer, InMemorySpanExporter]) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("call"):
        annotate_span(context=CONTEXT, count=COUNT, usage=USAGE)
    span = finished(exporter)
    assert not any(key.endswith("_text") for key in span.attributes or {})
    for value in all_values(span):
        assert not isinstance(value, str) or (
            "Keep the build green" not in value and ACCESS_KEY not in value and value != "main"
        )


def test_content_is_redacted(tracer: tuple[trace.Tracer, InMemorySpanExporter]) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("call"):
        annotate_span(context=CONTEXT, content=True)
    span = finished(exporter)
    attributes = span.attributes or {}
    head = attributes["runcontext.context.head_text"]
    tail = attributes["runcontext.context.tail_text"]
    assert isinstance(head, str) and isinstance(tail, str)
    assert "Keep the build green." in head and "[redacted]" in head
    assert "branch" in tail and "[redacted]" in tail
    for value in all_values(span):
        assert ACCESS_KEY not in str(value) and SECRET_KEY not in str(value)
    # The context itself still holds the secrets: only what the span carries is redacted.
    assert ACCESS_KEY in (CONTEXT.head_text or "")


def test_a_context_without_a_tail_sets_no_tail_text(
    tracer: tuple[trace.Tracer, InMemorySpanExporter],
) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("call"):
        annotate_span(context=RunContext(head_sections=[("a", "b")]), content=True)
    attributes = finished(exporter).attributes or {}
    assert "runcontext.context.head_text" in attributes
    assert "runcontext.context.tail_text" not in attributes


def test_a_span_that_is_not_recording_is_left_alone() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("test").start_as_current_span("sampled out") as span:
        assert not span.is_recording()
        assert annotate_span(context=CONTEXT, count=COUNT, content=True) == {}
    assert exporter.get_finished_spans() == ()
    # No span at all: the API's invalid span, also not recording.
    assert annotate_span(trace.INVALID_SPAN, context=CONTEXT) == {}
    provider.shutdown()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"context": "head"}, "context: expected a runcontext.RunContext, got str"),
        ({"session": "s"}, "session: expected a runcontext.Session or None, got str"),
        ({"revision": ""}, "revision: expected a non-empty string or None, got ''"),
        ({"fingerprint": 3}, "fingerprint: expected a non-empty string or None, got 3"),
        ({"conversation_id": b"x"}, "conversation_id: expected a non-empty string or None"),
        ({"count": 12}, "count: expected a runcontext.budget.RequestCount or None, got int"),
        ({"usage": {"input": 1}}, r"usage: expected a runcontext.budget.Usage or None"),
        ({"content": "yes"}, "content: expected True or False, got 'yes'"),
        ({"span": object()}, "span: expected an opentelemetry.trace.Span or None, got object"),
    ],
)
def test_bad_arguments(arguments: dict[str, Any], message: str) -> None:
    given: dict[str, Any] = {"context": CONTEXT, **arguments}
    span = given.pop("span", None)
    with pytest.raises(TypeError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        annotate_span(span, **given)


def test_missing_package_names_the_extra() -> None:
    # A None entry in sys.modules makes `import opentelemetry` raise ImportError.
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import runcontext.integrations.opentelemetry\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert (
        "ImportError: runcontext.integrations.opentelemetry needs opentelemetry-api: "
        "pip install 'runcontext[opentelemetry]'"
    ) in result.stderr


def test_runcontext_imports_no_opentelemetry() -> None:
    code = (
        "import sys, runcontext, runcontext.budget, runcontext.integrations, "
        "runcontext.adapters.streams\n"
        "print('opentelemetry' in sys.modules, 'openai' in sys.modules, "
        "'anthropic' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False False False"


def test_a_loop_outcome_annotates_its_span(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    from runcontext import Loop
    from runcontext.budget import Budget

    with Session.create(tmp_path / "t.jsonl", [SEED_MESSAGE]) as session:
        loop = Loop(
            lambda request: {"role": "assistant", "content": "done"},
            session,
            counter=lambda text: len(text.split()),
            model="gpt-test",
            budget=Budget(context_window=100_000),
        )
        with tracer[0].start_as_current_span("chat gpt-test"):
            outcome = loop.run([SEED_MESSAGE], context=CONTEXT)
            annotate_span(
                context=CONTEXT, session=loop.session, count=outcome.count, usage=outcome.usage
            )
    span = finished(tracer[1])
    attributes = span.attributes or {}
    assert outcome.count is not None
    assert attributes["runcontext.tokens.total"] == outcome.count.total
    assert attributes["runcontext.tokens.quality"] == "estimated"
    assert attributes["gen_ai.conversation.id"] == session.seed
    assert "gen_ai.usage.input_tokens" not in attributes  # nothing was billed
    assert ACCESS_KEY not in str(all_values(span))
