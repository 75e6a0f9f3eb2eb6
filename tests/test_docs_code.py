"""Every Python block in docs/ is valid Python, and every runcontext name it imports or
spells out exists, so a rename cannot leave the docs behind. (INTEGRATIONS.md's examples and
README.md's blocks are also run: tests/integrations/test_docs.py, test_readme.py.)"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCKS = [
    (path.name, number, block)
    for path in sorted(DOCS.glob("*.md"))
    for number, block in enumerate(
        re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL), 1
    )
]


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                value = getattr(value, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize(("doc", "number", "block"), BLOCKS, ids=lambda v: str(v)[:20])
def test_a_docs_block_is_python_whose_runcontext_names_exist(
    doc: str, number: int, block: str
) -> None:
    tree = ast.parse(block, f"{doc} block {number}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("runcontext"):
            for alias in node.names:
                assert _resolves(f"{node.module}.{alias.name}"), (
                    f"{doc}: {node.module}.{alias.name}"
                )
        if isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            if dotted.startswith("runcontext."):
                assert _resolves(dotted), f"{doc}: {dotted}"


def test_there_are_docs_blocks_to_check() -> None:
    assert len(BLOCKS) >= 5
