"""Replace recognisable secrets with ``[redacted]`` before they can reach a prompt.

Providers read the environment: instruction files, repository metadata, whatever a caller's
own provider collects. Any of it may hold a credential someone pasted there. The builder
passes every provider's output through :func:`redact` (on by default) and reports each
replacement as a diagnostic that names the kind of secret, never the secret.

The patterns are deliberately specific (a vendor prefix, a fixed shape or an explicit
``password=`` assignment) so ordinary text, hex digests and UUIDs pass untouched. They
cannot find a secret with no recognisable shape; they are a safety net, not a guarantee.
Not covered, among others: ``.netrc`` lines (``password hunter2``, no operator), bearer
tokens and JWTs, ``token=``/``DB_PASS=`` (key words too common or too short to mean a
secret), and a passphrase of plain words after a colon (read as prose).

Speed matters because this runs on every build (a 32 KiB instructions file included): every
pattern starts with a literal so the regex engine can skip ahead, the "not inside a longer
word" checks are done on the match rather than with a leading ``\\b`` (which would make the
engine try every position), and assignments are found from their key words on an
ASCII-lowercased copy instead of with a case-insensitive pattern. 32 KiB of ordinary text
takes well under a millisecond (benches/bench_builder.py). Every repetition is bounded or
consumes what it scans, so the time is linear in the text's length whatever its shape.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

__all__ = ["PATTERNS", "REDACTED", "REVISION", "redact"]

REDACTED = "[redacted]"

# Bump whenever a pattern is added, removed or changed: it enters the builder's revision.
REVISION = "redact/2"

# Every repetition is bounded or consumes what it scans, so no pattern can rescan the same
# text from many starting points: redaction stays linear in the text's length, whatever the
# text (a provider's output is bounded in size, not in shape).
_VALUE = 256  # the longest value an assignment pattern scans before it decides

# (kind, pattern, characters that must not come just before the match). A pattern with a
# group named "secret" replaces only that group: `postgres://u:pw@h` keeps its user and host.
_TOKENS: tuple[tuple[str, str, str], ...] = (
    (
        "private-key",
        # A PEM block from BEGIN to END or, when a byte budget cut the END line off, to the
        # end of the text but not over the instructions provider's marker line, which says
        # where the text was cut and is no part of the key.
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"|.*?(?=\n\[runcontext: [^\n]*\]\Z|\Z))",
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
    ("anthropic-key", r"sk-ant-[a-z]{1,20}[0-9]{0,4}-[A-Za-z0-9_-]{20,}", "word-"),
    # The body must hold a digit (checked on the match): 20 random characters nearly always
    # do, and `sk-learn-compatible-estimators-api` does not.
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}", "word-"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}", "word"),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
        "",
    ),
    # user:password@ in any URL (`https://`, `postgres://`, `redis://`); the user stays.
    (
        "url-credentials",
        r"://[^/\s:@]{1,256}:(?!\[redacted\]@)(?P<secret>[^/\s@]{1,256})@",
        "",
    ),
)
_NEEDS_DIGIT = frozenset(("openai-key",))
_DIGIT = re.compile(r"[0-9]")

# Key words of `key = value`, `key: value`, `"key": "value"`, `KEY=value`, `key := value`,
# `'key' => 'value'` (env files, YAML, JSON, shell, Go, PHP), matched in any case. The key
# word must start a word (`DB_PASSWORD`, `x-api-key`, `clientSecret`; not `mysecret`) and
# may be followed only by `_key`/`_token` (`secret_key`), then the operator: `secretary`,
# `secrets`, `api_key_env` and `private_key_path` are not secrets. Only words that mean a
# secret: a bare "token" is too common in prose to redact what follows it.
_KEY_WORDS = re.compile(
    r"(?:pass(?:word|wd|phrase)|secret|api[_-]?key|access[_-]?(?:key|token)|auth[_-]?token"
    r"|private[_-]?key)(?:[_.-]?(?:key|token))?"
)
_ASSIGNMENT = re.compile(
    r"""["']?[ \t]{0,8}(?P<op>:=|=>|[:=])(?![=>])[ \t]{0,8}(?!["']?\[redacted\])"""
    rf"""(?P<secret>"[^"\n]{{1,{_VALUE}}}"?|'[^'\n]{{1,{_VALUE}}}'?|[^\s"'&,;]{{1,{_VALUE}}})"""
)
# The rest of a value longer than _VALUE, taken only when the value is redacted (so each
# character is scanned once more at most).
_REST = {
    '"': re.compile(r'[^"\n]*"?'),
    "'": re.compile(r"[^'\n]*'?"),
    "": re.compile(r"""[^\s"'&,;]*"""),
}
# Values that are not secrets: references ($DB_PASSWORD, ${{ secrets.X }}, %PASS%,
# {{ pass }}), placeholders (<your password>) and YAML/JSON scalars (null, true, ~).
_NOT_SECRETS = frozenset(("null", "none", "nil", "true", "false", "yes", "no", "~"))
_REFERENCE = ("$", "%", "{{", "<")
# Prose: after a colon, one word of letters followed by another word on the same line
# (`Password: must be at least 12 characters.`) is a sentence, not a value.
_PROSE_NEXT = re.compile(r"[ \t]+[A-Za-z]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

PATTERNS: tuple[tuple[str, str], ...] = (
    *((kind, pattern) for kind, pattern, _ in _TOKENS),
    ("password-assignment", f"({_KEY_WORDS.pattern}){_ASSIGNMENT.pattern} (any case)"),
)

_NOT_BEFORE = {"": None, "word": "_", "word-": "_-"}  # plus letters and digits
# Compiled one by one: a pattern that starts with a literal lets the engine skip ahead, which
# an alternation of all of them would not (measured on 32 KiB of ordinary text: 0.14 ms for
# all of them one by one, 0.24 ms for one alternation).
_COMPILED = tuple(
    (kind, re.compile(pattern, re.DOTALL), _NOT_BEFORE[before]) for kind, pattern, before in _TOKENS
)
# Every key word contains one of these; a text with none skips the key-word scan.
_ANCHORS = ("pass", "secret", "key", "token")


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return ``text`` with secrets replaced and a count of replacements per kind.

    The text is returned unchanged (the same object) when nothing matched. Patterns apply
    one after another; ``[redacted]`` matches none of them, so a secret is counted once.
    Linear in ``len(text)``.
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
        if kind in _NEEDS_DIGIT and _DIGIT.search(match.group(0)) is None:
            return match.group(0)
        found[kind] += 1
        if "secret" not in match.re.groupindex:
            return REDACTED
        offset = start
        secret_start, secret_end = match.span("secret")
        whole = match.group(0)
        return whole[: secret_start - offset] + REDACTED + whole[secret_end - offset :]

    return replace


def _starts_a_word(text: str, start: int) -> bool:
    if start == 0:
        return True
    before = text[start - 1]
    if not before.isalnum():
        return True  # `DB_PASSWORD`, `x-api-key`, `"secret"`, `$password`
    return (before.islower() or before.isdigit()) and text[start].isupper()  # `dbPassword`


def _is_a_value(value: str, operator: str, text: str, end: int) -> bool:
    quote = value[0] if value[0] in "\"'" else ""
    bare = value.strip("\"'")
    if not bare or bare.startswith(_REFERENCE) or bare.lower() in _NOT_SECRETS:
        return False
    return not (operator == ":" and not quote and bare.isalpha() and _PROSE_NEXT.match(text, end))


def _redact_assignments(text: str, lowered: str, found: Counter[str]) -> str:
    pieces: list[str] = []
    position = 0
    for key in _KEY_WORDS.finditer(lowered):
        if key.start() < position or not _starts_a_word(text, key.start()):
            continue  # inside a value already replaced, or the tail of a longer word
        assignment = _ASSIGNMENT.match(text, key.end())
        if assignment is None:
            continue
        value = assignment.group("secret")
        start, end = assignment.span("secret")
        if not _is_a_value(value, assignment.group("op"), text, end):
            continue
        quote = value[0] if value[0] in "\"'" else ""
        if not (quote and len(value) > 1 and value.endswith(quote)):  # may go on past _VALUE
            rest = _REST[quote].match(text, end)
            end = end if rest is None else rest.end()
        pieces += [text[position:start], REDACTED]
        position = end
        found["password-assignment"] += 1
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)
