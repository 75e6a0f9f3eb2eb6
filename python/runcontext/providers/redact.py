"""Replace recognisable secrets with ``[redacted]`` before they can reach a prompt.

Providers read the environment: instruction files, repository metadata, whatever a caller's
own provider collects. Any of it may hold a credential someone pasted there. The builder
passes every provider's output through :func:`redact` (on by default) and reports each
replacement as a diagnostic that names the kind of secret, never the secret.

Redaction is on by default, so it must not damage the instructions it reads: an AGENTS.md
that documents ``BETTER_AUTH_SECRET=dummy pnpm build``, ``api_key: str`` or
``process.env.API_KEY`` has to reach the model as written. Hence two kinds of rule:

- **Vendor formats** (``ghp_…``, ``sk_live_…``, ``AIza…``, PEM blocks, …) carry the recall:
  a fixed prefix and shape that ordinary text does not have. Even these are refused when
  the body is a placeholder (``glpat-your-token-here``, ``AKIAXXXXXXXXXXXXXXXX``).
- **Assignments** (``password=…``, ``"api_key": "…"``, ``- **Password:** …``) and URL
  passwords fire only when the value looks like a credential: long enough, of mixed
  character classes, not a placeholder, reference, type name or piece of code, and never
  across a markdown delimiter. docs/PROVIDERS.md § Redaction lists every rule and number.

Speed and linear time: this runs on every build over up to 32 KiB per instructions file.
Every scan is one regex that starts with a literal, so the engine skips ahead (one that
starts with a set of characters is tried at every position: ten times slower), and whose
repetitions are bounded or possessive, so it never rescans text from many starting points.
Vendor formats with a separator (``ghp_``, ``sk-``) are found from two scans for "`_` or
`-` followed by 16 token characters" and matched once at the start of that token, instead
of one scan per vendor. Key words are found in the UTF-8 bytes lowered by ``bytes.lower``
(ASCII letters only), scanned as bytes and mapped back to character offsets, which keeps
its speed on non-ASCII text, unlike ``str.translate`` (70 times slower as soon as one
character is not ASCII). docs/PROVIDERS.md gives the figures; tests/test_redact_cost.py the checks.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

__all__ = ["PATTERNS", "REDACTED", "REVISION", "Secret", "find_secrets", "redact"]

REDACTED = "[redacted]"

# Bump whenever a rule is added, removed or changed: it enters the builder's revision.
REVISION = "redact/3"

_VALUE = 256  # the longest value an assignment scans before it decides
_BLOCK_LINES = 32  # the most lines of a YAML block scalar (`password: |`) taken as a value
_BLOCK_CHARS = 4096  # ... and the most characters
_MIN_CREDENTIAL = 6  # a shorter assignment value is never taken for a credential
_MIN_DISTINCT = 5  # ... nor one with fewer distinct characters (`aaaa11`)


class Secret(NamedTuple):
    """One secret found in a text: its kind and where it is (``text[start:end]``)."""

    kind: str
    start: int
    end: int


# -- vendor formats ---------------------------------------------------------------------

# Formats whose token has a separator (`_`, `-`, `.`) within its first 16 characters,
# matched at the start of a token (after a character that cannot be part of one). Order
# matters where prefixes overlap: `sk-ant-` and `sk-or-v1-` before the general `sk-`.
_SEPARATED: tuple[tuple[str, str], ...] = (
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"),
    (
        "gitlab-token",
        r"gl(?:pat|dt|rt|ptt|cbt|imt|ft|soat|oas|agent)-[A-Za-z0-9_-]{20,255}",
    ),
    ("anthropic-key", r"sk-ant-[a-z]{1,20}[0-9]{0,4}-[A-Za-z0-9_-]{20,255}"),
    ("openrouter-key", r"sk-or-v1-[a-f0-9]{64}"),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,255}"),
    # Clerk's secret keys share this shape; either way it is a secret key.
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,255}|whsec_[A-Za-z0-9+/=]{32,255}"),
    ("slack-token", r"xox[abeprs]-[0-9]{6,14}-[A-Za-z0-9-]{8,255}|xapp-[0-9]-[A-Za-z0-9-]{20,255}"),
    ("huggingface-token", r"hf_[A-Za-z]{34}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    # A PyPI token is a macaroon whose base64 starts with "pypi.org" (or "test.pypi.org").
    ("pypi-token", r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}+"),
    ("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}"),
    ("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("square-token", r"sq0(?:atp-[A-Za-z0-9_-]{22}|csp-[A-Za-z0-9_-]{43})"),
    ("linear-key", r"lin_api_[A-Za-z0-9]{40}"),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("newrelic-key", r"NRAK-[A-Z0-9]{27}"),
    ("supabase-key", r"sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{31,255}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{37}"),
    ("groq-key", r"gsk_[A-Za-z0-9]{52}"),
    ("perplexity-key", r"pplx-[A-Za-z0-9]{48}"),
    (
        "tailscale-key",
        r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{10,}+-[A-Za-z0-9]{20,}+",
    ),
    ("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}+"),
    ("grafana-token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2}"),
    ("figma-token", r"figd_[A-Za-z0-9_-]{40}"),
    ("notion-token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    ("heroku-key", r"HRKU-AA[A-Za-z0-9_-]{58}"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
)
# Formats without an early separator, found by one scan per first letter (`A`, `S`): a
# pattern that starts with a literal lets the engine skip to it, where one that starts with
# a set of characters is tried at every position (ten times slower, measured). A group
# named "secret" is what is replaced: `AccountKey=` stays, so the string stays readable.
_UNSEPARATED: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("atlassian-token", r"ATATT3[A-Za-z0-9_=-]{180,}+"),
    ("azure-storage-key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)"),
    ("twilio-key", r"SK[0-9a-fA-F]{32}"),
    ("azure-sas-key", r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{43}=)"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
)
_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    # Encrypted PEM header lines, then chunks of base64 separated by real newlines, JSON's
    # escaped `\n`, or spaces (a key pasted on one line). Anything else (prose, "...") ends
    # the body; every repetition is possessive, so nothing is scanned twice.
    r"(?:(?:\r?\n|(?:\\r)?\\n)(?:Proc-Type|DEK-Info|Comment): ?[^\n\\]{1,100}+){0,4}+"
    r"(?P<body>(?:[ \t]*+(?:\r?\n|(?:\\r)?\\n)){0,2}+[ \t]*+(?P<first>[A-Za-z0-9+/=]*+)"
    r"(?:(?:[ \t]*+(?:\r?\n|(?:\\r)?\\n)){1,2}+[ \t]*+[A-Za-z0-9+/=]++|[ \t]++[A-Za-z0-9+/=]++)*+)"
    r"(?:[ \t]*+(?:\r?\n|(?:\\r)?\\n)?+[ \t]*+-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?+"
)
# After `://`: a Slack or Discord webhook, or `user:password@` (the user may be empty:
# `redis://:pw@host`). One scan, starting with the literal `://`.
_URL = re.compile(
    r"://(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<slack>[A-Za-z0-9_/+-]{20,}+)"
    r"|(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/(?P<discord>[0-9]{17,20}/[A-Za-z0-9_-]{60,68})"
    r"|[^\s/:@`'\"<>]{0,256}+:(?P<secret>[^\s@`'\"<>]{1,256}+)@)"
)
_URL_AT = 4  # the most `@` a URL password is read across
_URL_MORE = re.compile(r"[^\s@`'\"<>]{0,256}+@")  # a further `@`: the password goes on

# "A separator, then a letter or digit and 15 more token characters": every format in
# _SEPARATED has one within its first 16 characters, and ordinary prose rarely does (about
# 20 in 32 KiB of real AGENTS.md text, mostly long snake_case names), so few candidates
# reach the token match. One scan per separator, each starting with a literal.
_TRIGGERS = tuple(
    re.compile(re.escape(separator) + r"(?=[A-Za-z0-9][A-Za-z0-9_+/=-]{15})") for separator in "_-"
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_LOOKBACK = 16  # every prefix in _SEPARATED puts its first separator within 16 characters
_RUN_BEFORE = re.compile(r"[A-Za-z0-9_.-]{1,16}+$")  # the token characters before a separator


def _alternation(
    table: tuple[tuple[str, str], ...],
) -> tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    # No group around each branch: a group hides the branches' first characters from the
    # engine. The kind is found afterwards, on the match alone, by the first branch that
    # matches all of it: the same branch the alternation took.
    kinds = tuple((kind, re.compile(body)) for kind, body in table)
    return re.compile("|".join(f"(?:{body})" for _, body in table)), kinds


def _by_first_letter(table: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], ...]:
    # One scan per first letter, the letter outside the alternation: a literal prefix.
    letters = dict.fromkeys(body[0] for _, body in table)
    scans = []
    for letter in letters:
        bodies = [body[1:] for _, body in table if body[0] == letter]
        scans.append(re.compile(letter + "(?:" + "|".join(bodies) + ")"))
    return tuple(scans)


def _kind(kinds: tuple[tuple[str, re.Pattern[str]], ...], token: str) -> str:
    return next(kind for kind, pattern in kinds if pattern.fullmatch(token))


_SEPARATED_RE, _SEPARATED_KINDS = _alternation(_SEPARATED)
_UNSEPARATED_KINDS = tuple((kind, re.compile(body)) for kind, body in _UNSEPARATED)
_UNSEPARATED_SCANS = _by_first_letter(
    tuple((k, b.replace("?P<secret>", "")) for k, b in _UNSEPARATED)
)

# The body of a token is a placeholder, not a secret, when it holds one of these (any
# case) or a run of six identical characters (`XXXXXX`, `000000`): random bodies of 16+
# characters almost never do (a run of six in 64 random hex digits: 1 in 17 000).
_PLACEHOLDER_WORDS = ("example", "your", "here", "placeholder", "redacted", "123456", "abcdef")
_RUN = re.compile(r"(.)\1{5}")
# For assignment values: a run of four at the start or after a separator (`****`,
# `sk-xxxx`, `key_0000`); `hunter2xxxx` is a password with a tail, not a placeholder.
_RUN_SHORT = re.compile(r"(?:^|[-_.:/+])(.)\1{3}")
_WORDS_ONLY = re.compile(r"[a-z_-]++")  # `sk-learn-compatible-estimators` is words


def _placeholder_token(token: str) -> bool:
    lowered = token.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS) or _RUN.search(token):
        return True
    return _WORDS_ONLY.fullmatch(token) is not None


# -- assignments ------------------------------------------------------------------------

# Key words of `key = value`, `key: value`, `"key": "value"`, `KEY=value`, `key := value`,
# `'key' => 'value'`, `- **Password:** value` (env files, YAML, JSON, shell, Go, PHP,
# markdown), matched in any case on a lowered copy. The key word must start a word
# (`DB_PASSWORD`, `x-api-key`, `clientSecret`; not `mysecret`) and may be followed only by
# `_key`/`_token` (`secret_key`) before the operator: `secretary`, `secrets`,
# `password_hash`, `api_key_env` and `private_key_path` are not secrets.
_OPERATOR = r"""(?:["'`]|\*\*|__)?[ \t]{0,8}(?P<op>:=|=>|[:=])(?![=>])(?:\*\*|__)?[ \t]{0,8}"""
_SUFFIX = r"(?:[_.-]?(?:key|token))?"
# Four scans, each starting with a literal and ending with the operator, so only real
# assignments reach Python (one alternation of the key words measured ten times slower).
# `key` and `token` need the word before them: `api key`, `access_token`, `auth-token`,
# `private_key`.
_KEY_SCANS = (
    re.compile(r"pass(?:word|wd|phrase)" + _SUFFIX + _OPERATOR),
    re.compile(r"secret(?P<base>[_-]?key[_-]?base)?" + _SUFFIX + _OPERATOR),
    re.compile(r"key" + _SUFFIX + _OPERATOR),
    re.compile(r"token" + _SUFFIX + _OPERATOR),
)
_KEY_SCANS_BYTES = tuple(re.compile(scan.pattern.encode()) for scan in _KEY_SCANS)
# The literal each key scan starts with: a text without it has no match, and the scan is
# skipped. The same holds for `-----BEGIN` (_PEM) and `://`
# (_URL).
_KEY_WORDS = tuple(
    scan.pattern[
        : len(scan.pattern) - len(scan.pattern.lstrip("abcdefghijklmnopqrstuvwxyz"))
    ].encode()
    for scan in _KEY_SCANS
)
_WORD_BEFORE = {
    ord("k"): re.compile(rb"(?:api|access|private)[ _-]?$"),
    ord("t"): re.compile(rb"(?:access|auth)[ _-]?$"),
}
_DOUBLE = re.compile(rf'"(?P<v>(?:[^"\\\n]|\\.){{1,{_VALUE}}}+)(?P<q>"?)')
_SINGLE = re.compile(rf"'(?P<v>[^'\n]{{1,{_VALUE}}}+)(?P<q>'?)")
_BACKTICK = re.compile(rf"`(?P<v>[^`\n]{{1,{_VALUE}}}+)(?P<q>`?)")
_BARE = re.compile(rf"[^\s`]{{1,{_VALUE}}}+")
_BARE_QUERY = re.compile(rf"[^\s`&#]{{1,{_VALUE}}}+")  # `?client_secret=x&next=1`
_BLOCK = re.compile(r"[|>][-+]?[1-9]?[-+]?[ \t]*+(?:#[^\n]*+)?(?=\r?\n)")
# The rest of a value longer than _VALUE, taken only when it is redacted (so each
# character is scanned once more at most).
_REST = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*+"?'),
    "'": re.compile(r"[^'\n]*+'?"),
    "`": re.compile(r"[^`\n]*+`?"),
    "": re.compile(r"[^\s`]*+"),
    "?": re.compile(r"[^\s`&#]*+"),
}
# Another field follows: `client_secret=x&grant_type=y`, `Password=x;Database=y`.
_NEXT_PARAMETER = re.compile(r"[&;,][A-Za-z_][\w. -]{0,64}=")
_TRAILING = ".,;:)]}>'\"*"  # sentence punctuation and markdown after a bare value
_RAILS_HEX = re.compile(r"[0-9a-f]{64,}+")

# Values that are not credentials.
_SCALARS = frozenset(
    ("null", "none", "nil", "true", "false", "yes", "no", "on", "off", "undefined", "empty")
)
# References, templates, YAML tags/aliases/anchors, paths, placeholders in angle brackets.
_NOT_A_VALUE_START = (*"$%{<[(!*&#@/~\\", "./", "../")
_PLACEHOLDER_PARTS = (
    "your", "change", "example", "placeholder", "replace", "dummy", "sample", "redacted",
    "...", "\u2026", "here", "todo", "insert", "fake", "test", "demo", "secret",
    "password", "passwd", "token", "apikey", "api_key", "api-key", "•",
)  # fmt: skip
_PLACEHOLDER = re.compile("|".join(map(re.escape, _PLACEHOLDER_PARTS)))
# Code: a call or an index on a (dotted) name, a dotted name, or a constant's name
# (`os.environ["X"]`, `os.getenv("X")`, `process.env.X`, `settings.SECRET_KEY`,
# `z.string().min(1)`, `varchar(255)`, `OPENAI_API_KEY`). A bare `(` is no sign of code:
# Django's generated keys hold them.
_CODE = re.compile(
    # a call or an index: a name, then brackets holding only names, quotes and commas
    r"[A-Za-z_$][\w.$]*+[(\[][\w.$()\[\]\"',:]*+[;,]?"
    r"|[A-Za-z_$][\w$]*+(?:\.[A-Za-z_$][\w$]*+)++[!?]?"  # a dotted name
    r"|[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++"  # a constant
)
# A phrase or name: every part between separators is a plain word or a short number
# (`postgres`, `proxy-pass`, `ci-build-at-least-32-chars`, `kubernetes.io/dockerconfigjson`).
# A word is lower case, upper case, Capitalised or camelCase (`minioAdmin`): 20 random
# letters of mixed case (a real key without a digit, 3 in 100 of them) are none of these.
_WORD = r"(?:[A-Z]?[a-z]++(?:[A-Z][a-z]++)*+|[A-Z]++|[0-9]{1,4})"
_PHRASE = re.compile(rf"[-_./:+]?{_WORD}(?:[-_./:+ \t]++{_WORD})*+[-_./:+]?")
_NUMBER_OR_VERSION = re.compile(r"v?[0-9]++(?:[.:][0-9]++)*+")


def _looks_like_credential(value: str) -> bool:
    """Whether an assignment's (or URL's) value has the shape of a real credential."""
    if len(value) < _MIN_CREDENTIAL or value.startswith(_NOT_A_VALUE_START):
        return False
    lowered = value.lower()
    if lowered in _SCALARS or _PLACEHOLDER.search(lowered):
        return False
    if value != value.strip() or _RUN_SHORT.search(value) or _CODE.fullmatch(value):
        return False
    if _PHRASE.fullmatch(value) or _NUMBER_OR_VERSION.fullmatch(value):
        return False
    if len(set(value)) < _MIN_DISTINCT:
        return False
    classes = (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )
    return classes >= 2


# -- the scans --------------------------------------------------------------------------


def find_secrets(text: str) -> list[Secret]:
    """Every secret in ``text``, in order and not overlapping. Linear in ``len(text)``.

    Where two rules find the same secret (`api_key: "sk-…"`), the vendor format wins, so the
    diagnostic names the vendor; an assignment or URL password never overlaps a token.
    """
    tokens: list[Secret] = []
    _find_pem(text, tokens)
    _find_separated(text, tokens)
    _find_unseparated(text, tokens)
    values: list[Secret] = []
    _find_urls(text, tokens, values)
    tokens.sort(key=_position)
    tokens = _without_overlaps(tokens)
    _find_assignments(text, values)
    values.sort(key=_position)
    return _merge(tokens, _without_overlaps(values))


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return ``text`` with secrets replaced and a count of replacements per kind.

    The text is returned unchanged (the same object) when nothing matched. ``[redacted]``
    matches no rule, so redacting twice changes nothing. Linear in ``len(text)``.
    """
    secrets = find_secrets(text)
    found: Counter[str] = Counter()
    if not secrets:
        return text, found
    pieces: list[str] = []
    position = 0
    for secret in secrets:
        pieces += [text[position : secret.start], REDACTED]
        position = secret.end
        found[secret.kind] += 1
    pieces.append(text[position:])
    return "".join(pieces), found


def _token_start(text: str, index: int) -> bool:
    return index == 0 or text[index - 1] not in _TOKEN_CHARS


def _token_end(text: str, index: int) -> bool:
    return index >= len(text) or not (text[index].isalnum() or text[index] in "_-")


def _find_separated(text: str, out: list[Secret]) -> None:
    separators = sorted(m.start() for trigger in _TRIGGERS for m in trigger.finditer(text))
    covered = 0  # a token found reaches here: later triggers inside it are not new tokens
    for separator in separators:
        if separator < covered:
            continue
        run = _RUN_BEFORE.search(text, max(0, separator - _LOOKBACK), separator)
        start = separator if run is None else run.start()
        if not _token_start(text, start):
            continue  # deep inside a long run of token characters: not a token's start
        match = _SEPARATED_RE.match(text, start)
        if match is None or not _token_end(text, match.end()):
            continue
        token = match.group()
        if _placeholder_token(token):
            continue
        kind = _kind(_SEPARATED_KINDS, token)
        if kind == "openai-key" and not any(c.isdigit() for c in token[3:]):
            continue  # `sk-Learn-Compatible-Estimators`: 20 random characters hold a digit
        out.append(Secret(kind, start, match.end()))
        covered = match.end()


def _find_unseparated(text: str, out: list[Secret]) -> None:
    for scan in _UNSEPARATED_SCANS:
        for match in scan.finditer(text):
            start, end = match.span()
            if not _token_start(text, start) or not _token_end(text, end):
                continue
            kind, pattern = next(
                (k, p) for k, p in _UNSEPARATED_KINDS if p.fullmatch(match.group())
            )
            if "secret" in pattern.groupindex:
                start = text.index("=", start) + 1  # `AccountKey=` stays
            if _placeholder_token(text[start:end]):
                continue
            out.append(Secret(kind, start, end))


def _find_pem(text: str, out: list[Secret]) -> None:
    if "-----BEGIN" not in text:
        return
    for match in _PEM.finditer(text):
        # A key's first line is 64 characters of base64 (or the whole key on one line);
        # "-----BEGIN PRIVATE KEY-----" named in prose is followed by words, or nothing.
        if len(match.group("first")) < 16 or not any(c.isdigit() for c in match.group("body")):
            continue
        if text.startswith(("...", "\u2026"), match.end()):
            continue  # an abridged example: "MIIEvQ...", not a key
        out.append(Secret("private-key", match.start(), match.end()))


def _find_urls(text: str, out: list[Secret], values: list[Secret]) -> None:
    if "://" not in text:
        return
    covered = 0
    for match in _URL.finditer(text):
        if match.group("secret") is None:
            token = match.group("slack") or match.group("discord") or ""
            if _placeholder_token(token) or not _token_end(text, match.end()):
                continue
            start = match.start()
            while start > 0 and text[start - 1].isalpha() and match.start() - start < 8:
                start -= 1  # the scheme: `https`
            kind = "slack-webhook" if match.group("slack") else "discord-webhook"
            out.append(Secret(kind, start, match.end()))
            continue
        start, end = match.span("secret")
        if start < covered:
            continue  # inside a password already taken
        # A password may hold `@` and `/` (`P@ss/w0rd@host`): it runs to the last `@` of
        # the URL (at most _URL_AT of them, 256 characters apart). In a URL whose path holds
        # `@` more than the password is replaced, which costs less than leaking a password.
        for _ in range(_URL_AT):
            more = _URL_MORE.match(text, end + 1)
            if more is None or "://" in more.group():
                break  # no further `@`, or it belongs to the next URL
            end = more.end() - 1
        password = text[start:end]
        if "/" in password and password.split("/", 1)[0].isdigit():
            continue  # `host:8080/path@v2`: a port and a path, not a password
        if _looks_like_credential(password):
            values.append(Secret("url-credentials", start, end))
            covered = end


class _Key(NamedTuple):
    start: int  # where the key word starts (`api` of `api_key`)
    end: int  # where the value starts: after the operator and its spaces
    operator: str
    rails: bool  # `secret_key_base`


def _keys(text: str) -> list[_Key]:
    """Every key word followed by an operator, in order, found in any case.

    On a lowered copy: `bytes.lower` lowers ASCII letters only and UTF-8 multi-byte
    sequences hold no ASCII byte, so the lowered UTF-8 has the text's characters in the
    same places, and is scanned as bytes (twice as fast as a str with non-ASCII text). Much
    faster than `str.translate` (which leaves its fast path at the first non-ASCII
    character) and exact where `str.lower` is not (`"\u212a".lower()` is an ASCII "k").
    """
    ascii_only = text.isascii()
    lowered = text.encode("utf-8", "surrogatepass").lower()
    found: list[tuple[int, int, str, bool]] = []
    for index, (literal, scan) in enumerate(zip(_KEY_WORDS, _KEY_SCANS_BYTES, strict=True)):
        if literal not in lowered:
            continue
        for key in scan.finditer(lowered):
            start = key.start()
            before = _WORD_BEFORE.get(lowered[start])
            if before is not None:  # `key`/`token`: find `api `/`access_`/... before it
                word = before.search(lowered, max(0, start - 8), start)
                if word is None:
                    continue
                start = word.start()
            rails = index == 1 and key.group("base") is not None  # the `secret` scan
            found.append((start, key.end(), key.group("op").decode(), rails))
    if ascii_only:
        return sorted(_Key(*entry) for entry in found)
    # Byte offsets to character offsets, in one pass over the offsets in order: every
    # offset is next to an ASCII byte, so each slice between two of them decodes whole.
    offsets = sorted({offset for start, end, _, _ in found for offset in (start, end)})
    characters: dict[int, int] = {}
    byte = char = 0
    for offset in offsets:
        char += len(lowered[byte:offset].decode("utf-8", "surrogatepass"))
        byte = offset
        characters[offset] = char
    return sorted(
        _Key(characters[start], characters[end], operator, rails)
        for start, end, operator, rails in found
    )


def _starts_a_word(text: str, start: int) -> bool:
    if start == 0:
        return True
    before = text[start - 1]
    if not before.isalnum():
        return True  # `DB_PASSWORD`, `x-api-key`, `"secret"`, `$password`
    return (before.islower() or before.isdigit()) and text[start].isupper()  # `dbPassword`


def _find_assignments(text: str, out: list[Secret]) -> None:
    position = 0
    for key in _keys(text):
        if key.start < position or not _starts_a_word(text, key.start):
            continue  # inside a value already taken, or the tail of a longer word
        found = _value(text, key.start, key.end, key.operator)
        if isinstance(found, int):
            position = found  # a bare value refused: key words inside it are part of it
            continue
        if found is None:
            continue
        start, end = found
        if key.rails and _RAILS_HEX.fullmatch(text[start:end]):
            out.append(Secret("rails-secret-key-base", start, end))
        else:
            out.append(Secret("password-assignment", start, end))
        position = end


def _value(text: str, key_start: int, start: int, operator: str) -> tuple[int, int] | int | None:
    """The span of a credential-shaped value at ``start``; None if there is none; where a
    bare value that is no credential ends (`password=password=…` is read once)."""
    if start >= len(text):
        return None
    first = text[start]
    line_start = text.rfind("\n", max(0, key_start - _VALUE), key_start) + 1
    if first == "`" and text.count("`", line_start, start) % 2:
        return None  # `?api_key=` in inline code: the backtick closes the code, no value
    if first in "\"'`":
        pattern = {'"': _DOUBLE, "'": _SINGLE, "`": _BACKTICK}[first]
        match = pattern.match(text, start)
        if match is None:
            return None
        value = match.group("v")
        if not _looks_like_credential(value.replace('\\"', '"')):
            return None
        end = match.end("v")
        if not match.group("q"):  # longer than _VALUE or unterminated: take the rest
            rest = _REST[first].match(text, end)
            end = end if rest is None else rest.end()
            if text[end - 1 : end] == first:
                end -= 1
        return match.start("v"), end  # the quotes stay: JSON, YAML and markdown stay valid
    if operator == ":" and first in "|>":
        return _block_scalar(text, key_start, start)
    name = key_start  # the parameter's name: `?client_secret=` is a query parameter
    while name > max(0, key_start - 64) and (text[name - 1].isalnum() or text[name - 1] in "_.-"):
        name -= 1
    query = name > 0 and text[name - 1] in "?&"
    match = (_BARE_QUERY if query else _BARE).match(text, start)
    if match is None:
        return None
    value = match.group()
    cut = value.find("**")  # `**password=x**`: the emphasis closes, the value ends
    if cut >= 0:
        value = value[:cut]
    parameter = _NEXT_PARAMETER.search(value)
    if parameter is not None:
        value = value[: parameter.start()]
    if _CODE.fullmatch(value):
        return None  # checked before the trailing `)` or `]` is cut off
    value = value.rstrip(_TRAILING)
    # Decided on the first _VALUE characters; only a value taken goes on to its end, so a
    # value refused is never scanned past them (`password=password=…` stays linear).
    if not _looks_like_credential(value):
        return start + len(value)
    end = start + len(value)
    if len(match.group()) == _VALUE and end == match.end():
        rest = _REST["?" if query else ""].match(text, end)
        end = end if rest is None else rest.end()
    return start, end


def _block_scalar(text: str, key_start: int, start: int) -> tuple[int, int] | None:
    # `password: |` then lines indented deeper than the key's line. The indicator must end
    # its line, so each line starts at most one block, and a block is at most
    # _BLOCK_LINES lines: each line is read a bounded number of times.
    indicator = _BLOCK.match(text, start)
    if indicator is None:
        return None
    line_start = text.rfind("\n", 0, key_start) + 1
    line = text[line_start:key_start]
    indent = len(line) - len(line.lstrip(" "))
    position = text.find("\n", indicator.end()) + 1
    first = last = -1
    for _ in range(_BLOCK_LINES):
        if position <= 0 or position >= len(text) or position - start > _BLOCK_CHARS:
            break
        newline = text.find("\n", position)
        line_end = len(text) if newline < 0 else newline
        content = text[position:line_end].rstrip("\r")
        stripped = content.lstrip(" ")
        if stripped:
            if len(content) - len(stripped) <= indent:
                break
            if first < 0:
                first = position + len(content) - len(stripped)
            last = position + len(content.rstrip())
        position = line_end + 1
    if first < 0:
        return None
    words = text[first:last].split()
    if not words or not _looks_like_credential(words[0]):
        return None
    return first, last


def _position(secret: Secret) -> tuple[int, int]:
    return secret.start, secret.end


def _without_overlaps(secrets: list[Secret]) -> list[Secret]:
    kept: list[Secret] = []
    for secret in secrets:
        if kept and secret.start < kept[-1].end:
            continue
        kept.append(secret)
    return kept


def _merge(tokens: list[Secret], values: list[Secret]) -> list[Secret]:
    # Both lists are sorted and free of overlaps; a value that overlaps a token is dropped.
    merged: list[Secret] = []
    index = 0
    for value in values:
        while index < len(tokens) and tokens[index].end <= value.start:
            merged.append(tokens[index])
            index += 1
        if index < len(tokens) and tokens[index].start < value.end:
            continue
        merged.append(value)
    merged.extend(tokens[index:])
    return merged


PATTERNS: tuple[tuple[str, str], ...] = (
    ("private-key", _PEM.pattern),
    *_SEPARATED,
    *_UNSEPARATED,
    ("slack-webhook", _URL.pattern),
    ("discord-webhook", _URL.pattern),
    ("url-credentials", _URL.pattern),
    *(("password-assignment", f"{scan.pattern}<value> (any case)") for scan in _KEY_SCANS),
    ("rails-secret-key-base", "secret_key_base = <64+ hex digits> (any case)"),
)
"""Every kind of secret and the pattern that finds it (values are checked further)."""
