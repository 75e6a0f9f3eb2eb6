"""Request fingerprints: one digest for "the same request, measured the same way".

A measurement (a cost, a latency, an eval score) is only comparable with another if the
model, the context, the code that produced the context and the tools were all the same. The
fingerprint hashes exactly those four. The builder's revision is in it so a changed provider
can never pass as the same measured request, even on a day its output happens to match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runcontext._checks import check_context
from runcontext._core import RunContext, digest

__all__ = ["FINGERPRINT_VERSION", "request_fingerprint"]

FINGERPRINT_VERSION = 1


def request_fingerprint(
    *,
    model: str,
    context: RunContext,
    revision: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    basis: str | None = None,
    sampling: Mapping[str, Any] | None = None,
) -> str:
    """``blake3:<hex>`` over the model, the context digest, the revision and the tools.

    To key a measurement of one request rather than of a request shape, add ``basis`` (the
    digest of the conversation's last message, ``runcontext.digest(messages[-1])``, or of the
    whole conversation) and ``sampling`` (the sampling parameters sent: temperature, top_p,
    max_tokens, …, canonicalised like the tools). Each is hashed only when given, so a
    fingerprint without them is the same as before they existed.

    ``revision`` is :attr:`runcontext.ContextBuilder.revision` (or any string naming
    how the context was made). ``tools`` are the tool declarations as sent to the API, in
    order (the model sees them in order); they are canonicalised (RFC 8785), so key order
    and number spelling do not matter. Each tool may be any Mapping; values inside it must
    be JSON values (dict, list, tuple, str, int, float, bool, None). ``None`` and ``[]`` are
    the same: no tools.
    """
    if not isinstance(model, str) or not model:
        raise TypeError(f"model: expected a non-empty model name, got {model!r}")
    check_context(context, optional=False)
    if not isinstance(revision, str) or not revision:
        raise TypeError(
            f"revision: expected a non-empty string (ContextBuilder.revision), got {revision!r}"
        )
    declared: list[Any] = []
    if tools is not None:
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
            raise TypeError(
                f"tools: expected a sequence of tool declarations, got {type(tools).__name__}"
            )
        for index, tool in enumerate(tools):
            if not isinstance(tool, Mapping):
                raise TypeError(
                    f"tools[{index}]: expected a tool declaration mapping, "
                    f"got {type(tool).__name__}"
                )
            # Any Mapping (a MappingProxyType, a frozen dict) hashes as the dict it holds;
            # nested values must still have a JSON form (dicts, lists, str, numbers, ...).
            declared.append(tool if type(tool) is dict else dict(tool))
    document: dict[str, Any] = {
        "fingerprint": FINGERPRINT_VERSION,
        "model": model,
        "context": context.digest,
        "revision": revision,
        "tools": declared,
    }
    if basis is not None:
        if not isinstance(basis, str) or not basis:
            raise TypeError(f"basis: expected a digest string, got {basis!r}")
        document["basis"] = basis
    if sampling is not None:
        if not isinstance(sampling, Mapping):
            raise TypeError(
                f"sampling: expected a mapping of sampling parameters, "
                f"got {type(sampling).__name__}"
            )
        document["sampling"] = sampling if type(sampling) is dict else dict(sampling)
    # `digest` canonicalises; a tool holding a value JSON cannot (a set, NaN) raises
    # CanonicalJSONError with its path, e.g. `$.tools[2].parameters.default`.
    return digest(document)
