"""Replace recognisable secrets with ``[redacted]`` before they can reach a prompt.

Providers read the environment: instruction files, repository metadata, whatever a caller's
own provider collects. Any of it may hold a credential someone pasted there. The builder
passes every provider's output through :func:`redact` (on by default) and reports each
replacement as a diagnostic that names the kind of secret, never the secret.

The patterns are deliberately specific (a vendor prefix, a fixed shape or an explicit
``password=`` assignment) so ordinary text, hex digests and UUIDs pass untouched. They
cannot find a secret with no recognisable shape; they are a safety net, not a guarantee.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["PATTERNS", "REDACTED", "REVISION", "redact"]

REDACTED = "[redacted]"

# Bump whenever a pattern is added, removed or changed: it enters the builder's revision.
REVISION = "redact/1"

# (kind, pattern). For patterns with a group named "secret" only that group is replaced, so
# `password = hunter2` keeps its key and reads `password = [redacted]`.
PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        # A PEM block from BEGIN to END, or to the end of the text when a byte budget cut
        # the END line off: a key's first lines are as secret as the whole key.
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|imt|ft|soat|oas|agent)-[A-Za-z0-9_-]{20,}"),
    ("anthropic-key", r"(?<![A-Za-z0-9_-])sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}"),
    ("openai-key", r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
    ),
    (
        "url-credentials",
        r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^/\s@]+)@",
    ),
    (
        "password-assignment",
        # key = value, key: value, key="value", KEY=value (env files, YAML, URLs' query
        # strings). Only names that mean a secret; a bare "token" is too common in prose.
        r"(?i)\b[a-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key"
        r"|auth[_-]?token|access[_-]?token|private[_-]?key)[a-z0-9_.-]*"
        r"""["']?[ \t]*[:=][ \t]*"""
        r"""(?P<secret>"[^"\n]+"|'[^'\n]+'|(?!\[redacted\])[^\s"'&,;]+)""",
    ),
)

_KINDS = tuple(kind for kind, _ in PATTERNS)


def _compile() -> re.Pattern[str]:
    # One alternation, one pass over the text: the builder redacts every run, so it must cost
    # well under a millisecond for a 32 KiB instructions file. Each alternative is a named
    # group `k<index>`; the inner "secret" groups are renamed `s<index>` to stay unique.
    parts = []
    for index, (_, pattern) in enumerate(PATTERNS):
        body = pattern.replace("(?P<secret>", f"(?P<s{index}>")
        if body.startswith("(?i)"):
            body = f"(?i:{body[4:]})"
        parts.append(f"(?P<k{index}>{body})")
    return re.compile("|".join(parts), re.DOTALL)


_COMBINED = _compile()
_KEEPS_KEY = frozenset(int(name[1:]) for name in _COMBINED.groupindex if name.startswith("s"))


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return ``text`` with secrets replaced and a count of replacements per kind.

    The text is returned unchanged (the same object) when nothing matched.
    """
    found: Counter[str] = Counter()

    def replace(match: re.Match[str]) -> str:
        index = int((match.lastgroup or "k0")[1:])
        found[_KINDS[index]] += 1
        if index not in _KEEPS_KEY:
            return REDACTED
        offset = match.start()
        start, end = match.span(f"s{index}")
        whole = match.group(0)
        return whole[: start - offset] + REDACTED + whole[end - offset :]

    redacted = _COMBINED.sub(replace, text)
    return (text if not found else redacted), found
