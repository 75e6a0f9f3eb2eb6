"""Replace recognisable secrets with ``[redacted]`` before they can reach a prompt.

Providers read the environment: instruction files, repository metadata, whatever a caller's
own provider collects. Any of it may hold a credential someone pasted there. The builder
passes every provider's output through :func:`redact` (on by default) and reports each
replacement as a diagnostic that names the kind of secret, never the secret.

The patterns are deliberately specific (a vendor prefix, a fixed shape or an explicit
``password=`` assignment) so ordinary text, hex digests and UUIDs pass untouched. They
cannot find a secret with no recognisable shape; they are a safety net, not a guarantee.

Speed matters because this runs on every build (a 32 KiB instructions file included): every
pattern starts with a literal so the regex engine can skip ahead, the "not inside a longer
word" checks are done on the match rather than with a leading ``\\b`` (which would make the
engine try every position), and assignments are found from their key words on an
ASCII-lowercased copy instead of with a case-insensitive pattern. 32 KiB of ordinary text
takes well under a millisecond (benches/bench_builder.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

__all__ = ["PATTERNS", "REDACTED", "REVISION", "redact"]

REDACTED = "[redacted]"

# Bump whenever a pattern is added, removed or changed: it enters the builder's revision.
REVISION = "redact/1"

# (kind, pattern, characters that must not come just before the match). A pattern with a
# group named "secret" replaces only that group: `postgres://u:pw@h` keeps its user and host.
_TOKENS: tuple[tuple[str, str, str], ...] = (
    (
        "private-key",
        # A PEM block from BEGIN to END, or to the end of the text when a byte budget cut
        # the END line off: a key's first lines are as secret as the whole key.
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        "",
    ),
    (
        "aws-access-key",
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA)[0-9A-Z]{16}(?![0-9A-Za-z])",
        "word",
    ),
    (
        "github-token",
        r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9_])|github_pat_[A-Za-z0-9_]{22,255}",
        "word",
    ),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt|cbt|imt|ft|soat|oas|agent)-[A-Za-z0-9_-]{20,}", "word"),
    ("anthropic-key", r"sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}", "word-"),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}", "word-"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}", "word"),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
        "",
    ),
    # user:password@ in any URL (`https://`, `postgres://`, `redis://`); the user stays.
    ("url-credentials", r"://[^/\s:@]+:(?!\[redacted\]@)(?P<secret>[^/\s@]+)@", ""),
)

# Key words of `key = value`, `key: value`, `"key": "value"`, `KEY=value` (env files, YAML,
# JSON, query strings), matched in any case and with any prefix or suffix (DB_PASSWORD,
# client_secret, x-api-key). Only words that mean a secret: a bare "token" is too common
# in prose to redact what follows it.
_KEY_WORDS = re.compile(
    r"pass(?:word|wd|phrase)|secret|api[_-]?key|access[_-]?(?:key|token)|auth[_-]?token"
    r"|private[_-]?key"
)
_ASSIGNMENT = re.compile(
    r"""[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*(?!["']?\[redacted\])"""
    r"""(?P<secret>"[^"\n]+"|'[^'\n]+'|[^\s"'&,;]+)"""
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

PATTERNS: tuple[tuple[str, str], ...] = (
    *((kind, pattern) for kind, pattern, _ in _TOKENS),
    ("password-assignment", f"({_KEY_WORDS.pattern}){_ASSIGNMENT.pattern} (any case)"),
)

_NOT_BEFORE = {"": None, "word": "_", "word-": "_-"}  # plus letters and digits
# Compiled one by one: a pattern that starts with a literal lets the engine skip ahead, which
# an alternation of all of them would not (measured: 0.02 ms each against 5 ms combined
# for 32 KiB of ordinary text).
_COMPILED = tuple(
    (kind, re.compile(pattern, re.DOTALL), _NOT_BEFORE[before]) for kind, pattern, before in _TOKENS
)
# Every key word contains one of these; a text with none skips the key-word scan.
_ANCHORS = ("pass", "secret", "key", "token")


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return ``text`` with secrets replaced and a count of replacements per kind.

    The text is returned unchanged (the same object) when nothing matched. Patterns apply
    one after another; ``[redacted]`` matches none of them, so a secret is counted once.
    """
    found: Counter[str] = Counter()
    result = text
    for kind, pattern, not_before in _COMPILED:
        if pattern.search(result) is not None:
            result = pattern.sub(_replacer(result, kind, not_before, found), result)
    lowered = result.translate(_ASCII_LOWER)  # ASCII only, so offsets stay the same
    if any(anchor in lowered for anchor in _ANCHORS):
        result = _redact_assignments(result, lowered, found)
    return (text if not found else result), found


def _replacer(
    text: str, kind: str, not_before: str | None, found: Counter[str]
) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        start = match.start()
        if not_before is not None and start > 0:
            before = text[start - 1]
            if before.isalnum() or before in not_before:
                return match.group(0)  # the tail of a longer word, not a token
        found[kind] += 1
        if "secret" not in match.re.groupindex:
            return REDACTED
        offset = start
        secret_start, secret_end = match.span("secret")
        whole = match.group(0)
        return whole[: secret_start - offset] + REDACTED + whole[secret_end - offset :]

    return replace


def _redact_assignments(text: str, lowered: str, found: Counter[str]) -> str:
    pieces: list[str] = []
    position = 0
    for key in _KEY_WORDS.finditer(lowered):
        if key.start() < position:
            continue  # inside a value already replaced
        assignment = _ASSIGNMENT.match(text, key.end())
        if assignment is None:
            continue
        start, end = assignment.span("secret")
        pieces += [text[position:start], REDACTED]
        position = end
        found["password-assignment"] += 1
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)
