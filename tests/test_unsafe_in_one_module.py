"""The binding's raw CPython access stays in one module, and the core exports no raw-pointer
writers (AGENTS.md; the safety argument is in rust/python/src/ffi.rs)."""

from __future__ import annotations

import re

from conftest import ROOT

BINDING = ROOT / "rust" / "python" / "src"
CORE = ROOT / "rust" / "core" / "src"


def code_lines(text: str) -> list[tuple[int, str]]:
    """Each line without its `//` comment (doc comments included), numbered from 1."""
    return [(n, line.split("//", 1)[0]) for n, line in enumerate(text.splitlines(), 1)]


def test_every_unsafe_block_of_the_binding_is_in_ffi() -> None:
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(BINDING.glob("*.rs"))
        if path.name != "ffi.rs"
        for n, line in code_lines(path.read_text())
        if re.search(r"\bunsafe\b|extern\s+\"C\"", line)
    ]
    assert found == [], "move raw CPython access into rust/python/src/ffi.rs:\n" + "\n".join(found)
    ffi = (BINDING / "ffi.rs").read_text()
    blocks = [n for n, line in code_lines(ffi) if re.search(r"\bunsafe\s*\{", line)]
    assert blocks, "ffi.rs has no unsafe block"
    lines = ffi.splitlines()
    for n in blocks:
        # Each block argues its case in the comment lines just above it (or above the
        # statement it starts in).
        above = "\n".join(lines[max(0, n - 12) : n])
        assert "SAFETY:" in above, f"ffi.rs:{n}: an unsafe block without a SAFETY argument"


def test_the_core_exports_no_unsafe_functions() -> None:
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(CORE.glob("*.rs"))
        for n, line in code_lines(path.read_text())
        if re.search(r"\bpub\s+unsafe\s+fn\b", line)
    ]
    assert found == [], "the core exports raw-pointer functions:\n" + "\n".join(found)
