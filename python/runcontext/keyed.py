"""Keyed digests: ``blake3-keyed:`` + 64 hex, BLAKE3's keyed mode with a secret 32-byte key.

A plain digest (:func:`runcontext.digest`) lets anyone who sees it confirm a guessed input
offline; a keyed digest can be recomputed, and a guess confirmed, only by a holder of the
key. It hashes exactly the bytes the plain digest hashes, so a key holder recomputes it from
the same data:

* :func:`keyed_digest` (``key, value``): of the canonical JSON of ``value``, as ``digest``;
* :func:`keyed_digest_bytes` (``key, data``): of raw bytes, as ``digest_bytes``;
* ``RunContext.keyed_digests(key)``: the context digest and the section digests.

The key is ``bytes`` of exactly :data:`KEY_BYTES` (32), e.g. ``secrets.token_bytes(32)`` kept
in your secret store. The form and the reasons are in docs/FORMAT.md § 2.1;
the OpenTelemetry helper's ``key=`` in docs/INTEGRATIONS.md, *OpenTelemetry*.
"""

from __future__ import annotations

from runcontext._core import KEY_BYTES, KEYED_DIGEST_PREFIX, keyed_digest, keyed_digest_bytes

__all__ = ["KEYED_DIGEST_PREFIX", "KEY_BYTES", "keyed_digest", "keyed_digest_bytes"]
