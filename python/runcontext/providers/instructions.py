"""``instructions``: AGENTS.md (or other names) from the repository root down to the cwd.

Each file found becomes one head section, root first, so the most general instructions come
first and the more specific ones after them, as tools that read AGENTS.md order them. One
section per file (rather than one for all) lets a transcript store each file's text once
under its own digest. The total is bounded: an instruction file is data from the repository
and a huge one must not crowd out the conversation or the context window.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from runcontext.providers._files import read_regular
from runcontext.providers.base import Contribution
from runcontext.providers.git import GitReadError, find_repository

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_NAMES", "InstructionsProvider"]

DEFAULT_NAMES = ("AGENTS.md",)
DEFAULT_MAX_BYTES = 32 * 1024
_BOM = b"\xef\xbb\xbf"


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


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


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
        self.revision = f"instructions/2+{'+'.join(self._names)}+{max_bytes}"

    @property
    def max_output_bytes(self) -> int:
        """The most bytes of names and texts this provider returns: twice its budget.

        Each section's name (``instructions:<path>``) is shorter than its header, which
        quotes the same path and counts against the budget, so the names add at most the
        budget again. The builder raises its per-provider bound to this figure, so a budget
        above the builder's ``max_bytes`` is not refused as too large.
        """
        return 2 * self._max_bytes

    def _directories(self, start: Path) -> tuple[Path | None, list[Path]]:
        try:
            repo = find_repository(start)
        except GitReadError:
            repo = None  # the git provider reports it; here, search the directory alone
        if repo is None:
            return None, [start]
        relative = start.relative_to(repo.root).parts
        return repo.root, [
            repo.root.joinpath(*relative[:depth]) for depth in range(len(relative) + 1)
        ]

    def collect(self, deadline: float) -> Contribution:
        start = Path(os.path.abspath(self._path if self._path is not None else os.getcwd()))
        root, directories = self._directories(start)
        boundary = os.path.realpath(root if root is not None else start)
        sections: list[tuple[str, str | None]] = []
        diagnostics: list[tuple[str, str]] = []
        seen: set[str] = set()
        remaining = self._max_bytes
        left_out: list[str] = []
        for directory in directories:
            for file_name in self._names:
                path = directory / file_name
                shown = path.relative_to(root).as_posix() if root is not None else file_name
                if remaining == 0:
                    if path.is_file():
                        left_out.append(shown)
                    continue
                try:
                    found = read_regular(path, remaining + 1)
                    if found is None:
                        continue
                    data, info = found
                    real = os.path.realpath(path)
                    if not _inside(real, boundary):
                        outside = "the repository" if root is not None else "the directory"
                        raise OSError(f"a link to a file outside {outside}; not read")
                    checked = os.stat(real)  # the file opened is the one whose path was checked
                    if (checked.st_dev, checked.st_ino) != (info.st_dev, info.st_ino):
                        raise OSError("replaced while it was read; not read")
                    if real in seen:
                        continue
                    seen.add(real)
                except OSError as error:
                    diagnostics.append(("unreadable", f"{shown}: {error.strerror or error}"))
                    continue
                size = max(info.st_size, len(data))
                scope = (
                    "the working directory"
                    if root is None
                    else "the whole repository"
                    if directory == root
                    else f"{directory.relative_to(root).as_posix()}/ and below"
                )
                header = f"Instructions from {shown} (they apply to {scope}):\n\n"
                fits = len(header.encode()) + len(data) <= remaining
                marker = _marker(size, size, shown, self._max_bytes)
                if not fits and len(header.encode()) + len(marker.encode()) + 1 > remaining:
                    left_out.append(shown)  # not even the header and a marker fit
                    remaining = 0
                    continue
                text, used, cut = self._render(
                    header, data.removeprefix(_BOM), size, shown, remaining
                )
                if text is None:
                    diagnostics.append(("unreadable", f"{shown}: not UTF-8 text"))
                    continue
                remaining -= used
                sections.append((f"instructions:{shown}", text))
                if cut:
                    remaining = 0
                    diagnostics.append(
                        ("truncated", f"{shown} cut to fit the {self._max_bytes}-byte budget")
                    )
        if left_out:
            diagnostics.append(
                ("truncated", f"left out after the budget was spent: {', '.join(left_out)}")
            )
        return Contribution(head=sections, diagnostics=diagnostics)

    def _render(
        self, header: str, data: bytes, size: int, shown: str, remaining: int
    ) -> tuple[str | None, int, bool]:
        """The section text, the bytes it uses and whether it was cut."""
        header_bytes = len(header.encode())
        if header_bytes + len(data) <= remaining:
            try:
                body = data.decode()
            except UnicodeDecodeError:
                return None, 0, False
            return header + body, header_bytes + len(data), False
        marker = _marker(size, size, shown, self._max_bytes)
        # Room for the header, a newline and the marker (whose figures only get shorter).
        room = max(remaining - header_bytes - len(marker.encode()) - 1, 0)
        kept = _cut_utf8(data, room)
        try:
            body = kept.decode()
        except UnicodeDecodeError:
            return None, 0, False
        text = header + body + ("" if body.endswith("\n") or not body else "\n")
        text += _marker(len(kept), size, shown, self._max_bytes)
        return text, len(text.encode()), True
