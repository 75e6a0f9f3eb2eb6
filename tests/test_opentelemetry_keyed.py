"""annotate_span(key=...) with the real OpenTelemetry SDK: every digest on the exported span is
keyed, none is a plain digest of anything the context or the conversation holds, and each keyed
value is what an independent implementation (the ``blake3`` package over the reference's
canonical JSON) computes with the key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from runcontext import RunContext, Session, digest, request_fingerprint
from runcontext.integrations.opentelemetry import annotate_span

from reference.jcs import canonical_json as reference_canonical_json

KEY = bytes(range(100, 132))
AGENTS_MD = "Keep the build green.\nRun make test before every commit.\n"
NOTES = "The staging database is read-only on Fridays. " * 60  # past 2 KiB: hashed detached
CONTEXT = RunContext(
    head_sections=[("AGENTS.md", AGENTS_MD)],
    facts=[("branch", "main"), ("clock", "2026-12-01T09:00:00Z")],
    tail_sections=[("notes", NOTES)],
)
REVISION = "blake3:" + "ab" * 32
SEED_MESSAGE = {"role": "user", "content": "Fix the flaky test."}


def oracle(key: bytes, value: object) -> str:
    """The keyed digest of ``value``, computed without runcontext's code."""
    return "blake3-keyed:" + blake3(reference_canonical_json(value), key=key).hexdigest()


@pytest.fixture
def tracer() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def exported(exporter: InMemorySpanExporter) -> dict[str, Any]:
    spans: tuple[ReadableSpan, ...] = exporter.get_finished_spans()
    (span,) = spans
    return dict(span.attributes or {})


def values(attributes: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for value in attributes.values():
        found.extend(value if isinstance(value, tuple) else [value])
    return found


def annotate_keyed(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path, key: bytes
) -> tuple[dict[str, Any], str, str]:
    tracer_, exporter = tracer
    fingerprint = request_fingerprint(model="gpt-test", context=CONTEXT, revision=REVISION)
    with Session.create(tmp_path / f"{key.hex()[:8]}.jsonl", [SEED_MESSAGE]) as session:
        with tracer_.start_as_current_span("chat gpt-test"):
            annotate_span(
                context=CONTEXT,
                session=session,
                revision=REVISION,
                fingerprint=fingerprint,
                key=key,
            )
        seed = session.seed
    return exported(exporter), fingerprint, seed


def test_no_plain_digest_is_exported_with_a_key(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    attributes, fingerprint, seed = annotate_keyed(tracer, tmp_path, KEY)
    exported_values = values(attributes)
    plain = {
        CONTEXT.digest,
        *CONTEXT.section_digests,
        fingerprint,
        REVISION,
        seed,
        digest(SEED_MESSAGE),
    }
    hex_of_plain = {d.removeprefix("blake3:") for d in plain}
    for value in exported_values:
        assert value not in plain
        assert not (isinstance(value, str) and value.startswith("blake3:")), value
        # Nor the plain hash under another name.
        assert not any(isinstance(value, str) and h in value for h in hex_of_plain), value
    # The names and positions are still there; the texts are not.
    assert attributes["runcontext.context.section.names"] == ("AGENTS.md", "notes")
    assert not any(isinstance(v, str) and "staging database" in v for v in exported_values)


def test_keyed_values_are_the_independent_implementation_s(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    attributes, fingerprint, seed = annotate_keyed(tracer, tmp_path, KEY)
    document = {
        "v": 1,
        "head": [["AGENTS.md", AGENTS_MD.rstrip("\n")]],
        "facts": [["branch", "main"], ["clock", "2026-12-01T09:00:00Z"]],
        "tail": [["notes", NOTES.rstrip()]],
    }
    # The document really is the one the plain context digest is of.
    assert "blake3:" + blake3(reference_canonical_json(document)).hexdigest() == CONTEXT.digest
    assert attributes == {
        "runcontext.context.digest": oracle(KEY, document),
        "runcontext.context.section.names": ("AGENTS.md", "notes"),
        "runcontext.context.section.digests": (
            oracle(KEY, {"name": "AGENTS.md", "text": AGENTS_MD.rstrip("\n")}),
            oracle(KEY, {"name": "notes", "text": NOTES.rstrip()}),
        ),
        "runcontext.context.section.positions": ("head", "tail"),
        "runcontext.builder.revision": oracle(KEY, REVISION),
        "runcontext.request.fingerprint": oracle(KEY, fingerprint),
        "gen_ai.conversation.id": oracle(KEY, seed),
    }


def test_another_key_gives_other_values_and_the_same_key_the_same(
    tracer: tuple[trace.Tracer, InMemorySpanExporter], tmp_path: Path
) -> None:
    runs = []
    for index, key in enumerate((KEY, KEY, bytes(32))):
        (tmp_path / str(index)).mkdir()
        runs.append(annotate_keyed(tracer, tmp_path / str(index), key)[0])
        tracer[1].clear()
    first, again, other = runs
    assert again == first
    for name in (
        "runcontext.context.digest",
        "runcontext.builder.revision",
        "runcontext.request.fingerprint",
        "gen_ai.conversation.id",
    ):
        assert other[name] != first[name], name
    assert set(other["runcontext.context.section.digests"]).isdisjoint(
        first["runcontext.context.section.digests"]
    )


def test_without_a_key_the_digests_stay_plain(
    tracer: tuple[trace.Tracer, InMemorySpanExporter],
) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("chat"):
        returned = annotate_span(context=CONTEXT, revision=REVISION, key=None)
    assert returned["runcontext.context.digest"] == CONTEXT.digest
    assert returned["runcontext.builder.revision"] == REVISION
    assert exported(exporter)["runcontext.context.section.digests"] == CONTEXT.section_digests


def test_an_explicit_conversation_id_is_set_as_given(
    tracer: tuple[trace.Tracer, InMemorySpanExporter],
) -> None:
    tracer_, exporter = tracer
    with tracer_.start_as_current_span("chat"):
        annotate_span(context=CONTEXT, conversation_id="thread-42", key=KEY)
    assert exported(exporter)["gen_ai.conversation.id"] == "thread-42"


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (
            "0" * 64,
            TypeError,
            "key: expected 32 bytes (a bytes object), got str; a key is random bytes, not a "
            "passphrase or hex text; make one with secrets.token_bytes(32) and keep it secret",
        ),
        (
            bytearray(32),
            TypeError,
            "key: expected 32 bytes (a bytes object), got bytearray; convert a bytes-like key "
            "with bytes(key); make one with secrets.token_bytes(32) and keep it secret",
        ),
        (
            b"k" * 16,
            ValueError,
            "key: expected exactly 32 bytes (BLAKE3's keyed mode), got 16 bytes; make one with "
            "secrets.token_bytes(32) and keep it secret",
        ),
    ],
)
def test_a_bad_key_is_refused_even_on_a_span_that_is_not_recording(
    key: Any, error: type[Exception], message: str
) -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("sampled out"), pytest.raises(error) as raised:
        annotate_span(context=CONTEXT, key=key)
    assert str(raised.value) == message
