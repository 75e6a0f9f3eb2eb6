"""OpenTelemetry: put a run's context, counts and billed usage on a span, never its text.

:func:`annotate_span` sets attributes on a span (the current one by default) through the
OpenTelemetry API only (``pip install 'runcontext[opentelemetry]'``); the SDK, the exporter
and the sampling are the application's. The attribute names, their types, why the text
stays out unless asked for and what ``key=`` (keyed digests) changes are in
docs/INTEGRATIONS.md, *OpenTelemetry*.
"""

from __future__ import annotations

from collections.abc import Mapping

try:
    from opentelemetry import trace
    from opentelemetry.util.types import AttributeValue
except ImportError as error:  # pragma: no cover - exercised by the import test without the extra
    from runcontext.integrations._turns import missing_extra

    missing_extra("opentelemetry-api", "opentelemetry", error)

from runcontext._checks import check_context
from runcontext._core import RunContext, keyed_digest, keyed_digest_bytes
from runcontext.budget.request_count import RequestCount
from runcontext.budget.usage import Usage
from runcontext.providers.redact import redact
from runcontext.transcript.session import Session

__all__ = ["annotate_span"]

# The GenAI semantic conventions' names. They live in open-telemetry/semantic-conventions-genai,
# which renamed the cache-write count from `cache_creation` to `cache_write`; the
# opentelemetry-semantic-conventions package (0.66b2, `gen_ai_attributes`) still has the other
# names but no constant for `cache_write` yet. Written out: that package is not a dependency of
# opentelemetry-api. Both cache counts "SHOULD be included in gen_ai.usage.input_tokens", as
# they are in Usage.input.
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.usage.cache_write.input_tokens"


def _text(value: object, argument: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TypeError(f"{argument}: expected a non-empty string or None, got {value!r}")
    return value


def annotate_span(
    span: trace.Span | None = None,
    *,
    context: RunContext,
    session: Session | None = None,
    conversation_id: str | None = None,
    revision: str | None = None,
    fingerprint: str | None = None,
    count: RequestCount | None = None,
    usage: Usage | None = None,
    content: bool = False,
    key: bytes | None = None,
) -> Mapping[str, AttributeValue]:
    """Set the run's attributes on ``span`` (``trace.get_current_span()`` when ``None``).

    Always ``runcontext.context.digest`` and the sections as three parallel string arrays
    (``runcontext.context.section.names``, ``.digests``, ``.positions``); with the arguments
    that give them, ``runcontext.builder.revision`` (``ContextBuilder.revision``),
    ``runcontext.request.fingerprint`` (:func:`runcontext.request_fingerprint`), the count's
    ``runcontext.tokens.{head,conversation,tail,tools,total}`` (ints), ``.quality`` and
    ``.model``, the billed ``gen_ai.usage.*`` tokens, and ``gen_ai.conversation.id``
    (``conversation_id``, else the session's ``seed``).

    With ``key`` (32 secret bytes, e.g. ``secrets.token_bytes(32)``) every digest set is keyed
    (``blake3-keyed:…``, docs/FORMAT.md § 2.1), so that no one without the key can confirm a
    guessed file or message against the trace: the context and section digests are the keyed
    digests of the same documents (``context.keyed_digests(key)``); the revision, the
    fingerprint and the session's seed, which arrive as digests, are exported as
    ``keyed_digest(key, value)``. A ``conversation_id`` passed in is yours and is set as given.

    The context's text is never set unless ``content=True``, which adds
    ``runcontext.context.head_text`` and ``tail_text`` with secrets redacted
    (:func:`runcontext.providers.redact.redact`). A span that is not recording (sampled out,
    or no SDK installed) is left alone and nothing is computed. Returns the attributes set.
    """
    check_context(context, optional=False)
    if session is not None and not isinstance(session, Session):
        raise TypeError(
            f"session: expected a runcontext.Session or None, got {type(session).__name__}"
        )
    conversation_id = _text(conversation_id, "conversation_id")
    revision = _text(revision, "revision")
    fingerprint = _text(fingerprint, "fingerprint")
    if count is not None and not isinstance(count, RequestCount):
        raise TypeError(
            f"count: expected a runcontext.budget.RequestCount or None, got {type(count).__name__}"
        )
    if usage is not None and not isinstance(usage, Usage):
        raise TypeError(
            f"usage: expected a runcontext.budget.Usage or None (read_usage(response) makes "
            f"one), got {type(usage).__name__}"
        )
    if not isinstance(content, bool):
        raise TypeError(f"content: expected True or False, got {content!r}")
    if key is not None:
        keyed_digest_bytes(key, b"")  # refuses a key that is not 32 bytes, naming `key`
    if span is None:
        span = trace.get_current_span()
    elif not isinstance(span, trace.Span):
        raise TypeError(
            f"span: expected an opentelemetry.trace.Span or None, got {type(span).__name__}"
        )
    if not span.is_recording():
        return {}

    sections = context.sections
    if key is None:
        context_digest = context.digest
        section_digests = [section.digest for section in sections]
    else:
        context_digest, keyed_sections = context.keyed_digests(key)
        section_digests = list(keyed_sections)
        # Received as digests (their documents are not at hand): keyed over their own text.
        revision = None if revision is None else keyed_digest(key, revision)
        fingerprint = None if fingerprint is None else keyed_digest(key, fingerprint)
    attributes: dict[str, AttributeValue] = {
        "runcontext.context.digest": context_digest,
        "runcontext.context.section.names": [section.name for section in sections],
        "runcontext.context.section.digests": section_digests,
        "runcontext.context.section.positions": [section.position for section in sections],
    }
    if revision is not None:
        attributes["runcontext.builder.revision"] = revision
    if fingerprint is not None:
        attributes["runcontext.request.fingerprint"] = fingerprint
    if count is not None:
        attributes.update(
            {
                "runcontext.tokens.head": count.head,
                "runcontext.tokens.conversation": count.conversation,
                "runcontext.tokens.tail": count.tail,
                "runcontext.tokens.tools": count.tools,
                "runcontext.tokens.total": count.total,
                "runcontext.tokens.quality": count.quality,
                "runcontext.tokens.model": count.model,
            }
        )
    if usage is not None:
        attributes[GEN_AI_USAGE_INPUT_TOKENS] = usage.input
        if usage.output is not None:
            attributes[GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output
        attributes[GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read
        attributes[GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] = usage.cache_write
    if conversation_id is None and session is not None:
        conversation_id = session.seed if key is None else keyed_digest(key, session.seed)
    if conversation_id is not None:
        attributes[GEN_AI_CONVERSATION_ID] = conversation_id
    if content:
        for name, text in (("head_text", context.head_text), ("tail_text", context.tail_text)):
            if text is not None:
                attributes[f"runcontext.context.{name}"] = redact(text)[0]
    span.set_attributes(attributes)
    return attributes
