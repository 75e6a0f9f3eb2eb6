"""``instructions``: AGENTS.md (or other names) from the repository root down to the cwd.

Each file found becomes one head section, root first, so the most general instructions come
first and the more specific ones after them, as tools that read AGENTS.md order them. One
section per file (rather than one for all) lets a transcript store each file's text once
under its own digest. The total is bounded: an instruction file is data from the repository
and a huge one must not crowd out the conversation or the context window. The budget goes
to the most specific files first (nearest the working directory: the ones about where the
agent works), so a huge root AGENTS.md is what gets cut, not ``sub/AGENTS.md``.

A cut never splits what redaction would recognise as a secret: the text past the cut is
looked at too (:data:`LOOKAHEAD` bytes), and when the redacted prefix is not a prefix of the
redacted whole, the cut moves back to before the token. Otherwise 19 of an AWS key's 20
characters could reach the model, no longer recognisable as a key.
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence

from runcontext._controls import (
    INVISIBLE_BMP,
    TAG_RUN,
    decode_tags,
    holds_invisible,
    pattern_for,
    what,
)
from runcontext._core import RunContext
from runcontext.errors import RunContextError
from runcontext.providers._files import chunks, open_regular
from runcontext.providers.base import Contribution
from runcontext.providers.git import GitReadError, _locate
from runcontext.providers.redact import redact

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_NAMES",
    "LOOKAHEAD",
    "MAX_DIRECTORIES",
    "InstructionsProvider",
]

DEFAULT_NAMES = ("AGENTS.md",)
DEFAULT_MAX_BYTES = 32 * 1024
# Directories searched at most: the root and the 63 nearest the working directory. A real
# tree is a few levels deep; a hostile one can be 2 000 (PATH_MAX allows that many "d/").
MAX_DIRECTORIES = 64
# Bytes read past a cut to see whether a secret crosses it. Tokens whose patterns have a
# fixed length are far shorter; the open-ended ones are still recognised when cut.
LOOKAHEAD = 1024
_CUT_ATTEMPTS = 4  # the word, the line, the line before, then nothing of this file
_LISTED = 10  # left-out files named in a diagnostic; the rest are counted
_SPELLED = 80  # characters of hidden tag text quoted in a diagnostic
_BOM = b"\xef\xbb\xbf"
_PROC_FD = "/proc/self/fd"
_HAS_PROC_FD = os.path.isdir(_PROC_FD)


def _marker(shown: int, total: int, where: str, budget: int) -> str:
    return (
        f"[runcontext: {where} cut here; {shown} of {total} bytes shown, "
        f"the instructions budget is {budget} bytes]"
    )


def _cut_utf8(data: bytes, limit: int) -> bytes:
    """``data[:limit]`` backed up to the start of a character (never half a code point)."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:  # a continuation byte: inside a character
        cut -= 1
    return data[:cut]


def _invisible_note(shown: str, body: str) -> str | None:
    """A note when the file's text holds characters a reader does not see as written
    (:data:`runcontext._controls.RANGES`: a terminal escape, a bare carriage return, a bidi
    override, tag or zero-width characters): they can hide text from the person reviewing
    what the agent is told. A CRLF line end is not counted. A few passes at C speed, none
    for printable ASCII. The text reaches the model unchanged (docs/PROVIDERS.md says why)."""
    if not holds_invisible(body):
        return None
    text = body.replace("\r\n", "\n")  # the same lines and columns, without CRLF's CR
    pattern = pattern_for(text, tag_runs=False)
    found = pattern.search(text)
    if found is None:
        return None
    count = len(text) - len(pattern.sub("", text))
    first = found.start()
    line = text.count("\n", 0, first) + 1
    column = first - text.rfind("\n", 0, first)
    code = ord(text[first])
    name = unicodedata.name(text[first], "") or f"({what(code)})"
    note = (
        f"{shown}: {count} invisible or control character{'s' if count > 1 else ''}, the "
        f"first at line {line}, column {column}: U+{code:04X} {name}"
    )
    runs = TAG_RUN.findall(text) if pattern is not INVISIBLE_BMP else []
    if runs:
        decoded = decode_tags(runs[0][:_SPELLED])
        cut = "…" if len(runs[0]) > _SPELLED else ""
        more = f" and {len(runs) - 1} more run{'s' if len(runs) > 2 else ''}" if runs[1:] else ""
        note += f'; tag characters spell "{decoded}{cut}"{more}'
    return f"{note}; the model gets the text as it is, and `runcontext show` shows them as escapes"


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _real_path(fd: int, path: str) -> str:
    """The real path of what ``fd`` (opened from ``path``) is, without a race.

    Linux says it in ``/proc/self/fd`` in one call; ``os.path.realpath`` costs an ``lstat``
    per component of the path (a quarter of a second 2 000 levels deep), and what it
    resolves may have been swapped after the open, so it is checked against ``fd``.
    """
    if _HAS_PROC_FD:
        try:
            return os.readlink(f"{_PROC_FD}/{fd}")
        except OSError:
            pass
    real = os.path.realpath(path)
    checked, opened = os.stat(real), os.fstat(fd)
    if (checked.st_dev, checked.st_ino) != (opened.st_dev, opened.st_ino):
        raise OSError("replaced while it was read; not read")
    return real


def _real_directory(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return os.path.realpath(path)
    try:
        return _real_path(fd, path)
    finally:
        os.close(fd)


def _back(text: str, cut: int) -> int:
    """An earlier cut: the start of the word ``cut`` is in, else of the line before it."""
    word = max(text.rfind(space, 0, cut) for space in " \t\n\r") + 1
    if 0 < word < cut:
        return word
    return text.rfind("\n", 0, max(cut - 1, 0)) + 1


def _safe_cut(text: str, lookahead: str) -> tuple[int, Counter[str]]:
    """How many characters of ``text`` to keep so that no secret-shaped token is split.

    ``lookahead`` is what follows ``text`` in the file. The cut at ``len(text)`` is safe
    when redacting the kept part gives a prefix of redacting the whole: a token across the
    cut is recognised in the whole and not (or not the same) in the part. Returns the cut
    and the kinds of secrets it was moved back for.
    """
    whole = text + lookahead
    redacted, found = redact(whole)
    cut = len(text)
    for _ in range(_CUT_ATTEMPTS):
        part, part_found = redact(whole[:cut])
        if redacted.startswith(part):
            break
        cut = _back(whole, cut)
    else:
        cut, part_found = 0, Counter()
    if cut == len(text):
        return cut, Counter()
    # What the whole has that neither the kept part nor the text past the cut has alone.
    return cut, found - part_found - redact(lookahead)[1]


class InstructionsProvider:
    """Head sections ``instructions:<path>``: each instruction file from root to ``path``.

    ``names`` are the file names looked for in each directory, in that order (e.g.
    ``("AGENTS.md", "CLAUDE.md")``); a name that is a link to a file already read is read
    once. ``max_bytes`` bounds the UTF-8 size of all the sections together: the file that
    crosses it is cut at a character boundary with a visible marker line, later files are
    left out, and a ``truncated`` diagnostic says which. Outside a repository only the
    directory itself is searched. A file whose real path is outside the repository (outside
    the directory, when there is no repository) is not read: a link planted as AGENTS.md
    could otherwise put ``~/.aws/credentials`` into the prompt.
    """

    name = "instructions"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        names: Sequence[str] = DEFAULT_NAMES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if isinstance(names, str):
            raise TypeError(f"names: expected a sequence of file names, got the string {names!r}")
        for name in names:
            if not name or os.sep in name or "/" in name or name in (".", ".."):
                raise ValueError(f"names: {name!r} is not a plain file name")
        if max_bytes < 256:
            raise ValueError(f"max_bytes: {max_bytes} is too small to hold even the marker line")
        self._path = None if path is None else os.fspath(path)
        self._names = tuple(names)
        self._max_bytes = max_bytes
        self.revision = f"instructions/3+{'+'.join(self._names)}+{max_bytes}"

    @property
    def max_output_bytes(self) -> int:
        """The most bytes of names and texts this provider returns: twice its budget.

        Each section's name (``instructions:<path>``) is shorter than its header, which
        quotes the same path and counts against the budget, so the names add at most the
        budget again. The builder raises its per-provider bound to this figure, so a budget
        above the builder's ``max_bytes`` is not refused as too large.
        """
        return 2 * self._max_bytes

    def _directories(
        self, start: str, deadline: float
    ) -> tuple[str | None, list[tuple[str, str]], list[str]]:
        """The repository root (or ``None``), the directories to search and notes.

        Directories are ``(path, path from the root)`` pairs, root first, at most
        :data:`MAX_DIRECTORIES`: the root and the ones nearest ``start``. Strings, not
        ``Path`` objects: a ``Path`` of a chain 2 000 levels deep costs milliseconds each.
        """
        try:
            found = _locate(start, deadline)
        except GitReadError:
            found = None  # the git provider reports it; here, search the directory alone
        if found is None:
            return None, [(start, "")], []
        root = found[0]
        relative = os.path.relpath(start, root).split(os.sep) if start != root else []
        depths = range(len(relative) + 1)
        notes: list[str] = []
        if len(depths) > MAX_DIRECTORIES:
            skipped = len(depths) - MAX_DIRECTORIES
            depths = range(len(depths) - MAX_DIRECTORIES + 1, len(depths))
            notes.append(
                f"{skipped} directories between the repository root and "
                f"{'/'.join(relative[: depths[0]])}/ were not searched: at most "
                f"{MAX_DIRECTORIES} directories are (the root and the nearest ones)"
            )
            chosen = [0, *depths]
        else:
            chosen = list(depths)
        return (
            root,
            [
                (os.path.join(root, *relative[:depth]), "/".join(relative[:depth]))
                for depth in chosen
            ],
            notes,
        )

    def collect(self, deadline: float) -> Contribution:
        start = os.path.abspath(self._path if self._path is not None else os.getcwd())
        root, directories, notes = self._directories(start, deadline)
        boundary = _real_directory(root if root is not None else start)
        outside = "the repository" if root is not None else "the directory"
        # (root-first position, kind, message), sorted at the end: files are read most
        # specific first, diagnostics read root first like the sections.
        noted: list[tuple[int, str, str]] = [(-1, "truncated", note) for note in notes]
        sections: list[tuple[int, str, str]] = []
        seen: set[tuple[int, int]] = set()
        remaining = self._max_bytes
        left_out: list[tuple[int, str]] = []
        candidates = [
            (depth, os.path.join(directory, file_name), relative, f"{relative}/{file_name}")
            for depth, (directory, relative) in enumerate(directories)
            for file_name in self._names
        ]
        # Most specific directory first; names in their order within a directory.
        order = sorted(range(len(candidates)), key=lambda i: (-candidates[i][0], i))
        for count, index in enumerate(order):
            _, path, relative, shown = candidates[index]
            shown = shown.lstrip("/")
            if count and time.monotonic() > deadline:
                message = f"stopped at the deadline before {shown}; it and those above are left out"
                noted.append((index, "truncated", message))
                break
            header = self._header(shown, relative, root is None)
            smallest = len(header.encode()) + len(_marker(0, 0, shown, self._max_bytes)) + 2
            if remaining < smallest:
                if os.path.isfile(path):
                    left_out.append((index, shown))
                continue
            try:
                read = self._read(path, remaining + LOOKAHEAD + 1, deadline, boundary, seen)
            except OSError as error:
                if str(error).startswith("a link to a file outside"):
                    error = OSError(f"a link to a file outside {outside}; not read")
                noted.append((index, "unreadable", f"{shown}: {error.strerror or error}"))
                continue
            if read is None:
                continue
            data, size = read
            if (
                remaining
                < len(header.encode()) + len(_marker(size, size, shown, self._max_bytes)) + 2
            ):
                left_out.append((index, shown))  # its real size's marker does not fit
                continue
            try:
                RunContext(head_sections=[(f"instructions:{shown}", "-")])
            except RunContextError as error:  # the core says what a section name may hold
                noted.append(
                    (index, "unreadable", f"{shown}: its path cannot name a section: {error}")
                )
                continue
            rendered = self._render(header, data.removeprefix(_BOM), size, shown, remaining)
            if rendered is None:
                noted.append((index, "unreadable", f"{shown}: not UTF-8 text"))
                continue
            text, used, cut = rendered
            remaining -= used
            sections.append((index, f"instructions:{shown}", text))
            invisible = _invisible_note(shown, text[len(header) :])
            if invisible is not None:
                noted.append((index, "invisible-characters", invisible))
            if cut is not None:
                noted.append((index, "truncated", cut))
        if left_out:
            left_out.sort()
            names = ", ".join(shown for _, shown in left_out[:_LISTED])
            more = len(left_out) - _LISTED
            names += f" and {more} more" if more > 0 else ""
            message = (
                f"left out: {names}; the {self._max_bytes}-byte budget went to the files "
                "nearer the working directory"
            )
            noted.append((len(candidates), "truncated", message))
        sections.sort()
        noted.sort(key=lambda note: note[0])
        return Contribution(
            head=[(name, text) for _, name, text in sections],
            diagnostics=[(kind, message) for _, kind, message in noted],
        )

    @staticmethod
    def _header(shown: str, relative: str, no_repository: bool) -> str:
        scope = (
            "the working directory"
            if no_repository
            else f"{relative}/ and below"
            if relative
            else "the whole repository"
        )
        return f"Instructions from {shown} (they apply to {scope}):\n\n"

    @staticmethod
    def _read(
        path: str, limit: int, deadline: float, boundary: str, seen: set[tuple[int, int]]
    ) -> tuple[bytes, int] | None:
        """Up to ``limit`` bytes of ``path`` and its size; ``None`` if absent or read already."""
        opened = open_regular(path)
        if opened is None:
            return None
        fd, info = opened
        try:
            if not _inside(_real_path(fd, path), boundary):
                raise OSError("a link to a file outside the boundary; not read")
            if (info.st_dev, info.st_ino) in seen:
                return None  # CLAUDE.md -> AGENTS.md: one file, read once
            seen.add((info.st_dev, info.st_ino))
            data = b"".join(chunks(fd, limit, deadline, os.path.basename(path)))
        finally:
            os.close(fd)
        return data, max(info.st_size, len(data))

    def _render(
        self, header: str, data: bytes, size: int, shown: str, remaining: int
    ) -> tuple[str, int, str | None] | None:
        """The text, the bytes it uses and, if it was cut, what to say; ``None`` if not UTF-8."""
        header_bytes = len(header.encode())
        if header_bytes + len(data) <= remaining:  # then the read reached the end of the file
            try:
                return header + data.decode(), header_bytes + len(data), None
            except UnicodeDecodeError:
                return None
        marker = _marker(size, size, shown, self._max_bytes)
        # Room for the header, a newline and the marker (whose figures only get shorter).
        room = max(remaining - header_bytes - len(marker.encode()) - 1, 0)
        kept = _cut_utf8(data, room)
        try:
            body = kept.decode()
        except UnicodeDecodeError:
            return None
        lookahead = data[len(kept) : len(kept) + LOOKAHEAD].decode("utf-8", "ignore")
        cut, secrets = _safe_cut(body, lookahead)
        moved = len(kept) - len(body[:cut].encode())
        body = body[:cut]
        shown_bytes = len(body.encode())
        text = header + body + ("" if body.endswith("\n") or not body else "\n")
        text += _marker(shown_bytes, size, shown, self._max_bytes)
        note = (
            f"{shown}: {shown_bytes} of {size} bytes kept, cut to fit the "
            f"{self._max_bytes}-byte budget (files nearer the working directory come first)"
        )
        if moved:
            what = ", ".join(sorted(secrets)) or "a token"
            note += (
                f"; the cut was moved {moved} bytes earlier so as not to split what looks "
                f"like a secret ({what})"
            )
        return text, len(text.encode()), note
