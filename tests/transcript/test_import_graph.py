"""The transcript package's modules import one another without a cycle, and the package
depends on neither the run loop nor the budget (the loop depends on it).

The graph is read from the source: the imports a module makes when it is imported (at module
level, in ``try`` and ``if`` blocks too); an import inside a function runs once every module
involved is initialised, so it cannot meet a half-imported one."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import runcontext.transcript

PACKAGE = "runcontext.transcript"
DIRECTORY = Path(runcontext.transcript.__file__).parent


def _module_level_imports(tree: ast.Module) -> list[str]:
    """The modules the statements run at import time import (not those inside functions and
    classes)."""
    names: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.append(node.module)
            # `from runcontext.transcript import files` imports a submodule
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.If | ast.Try):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, block, []):
                    pending.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return names


def graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports at import time."""
    modules = {
        PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}": path
        for path in DIRECTORY.glob("*.py")
    }
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _module_level_imports(ast.parse(path.read_text(encoding="utf-8")))
        edges[name] = {module for module in imported if module in modules and module != name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``edges`` (its modules in order, the first repeated last), or ``None``."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(edges[node]):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for node in sorted(edges):
        found = visit(node, [])
        if found:
            return found
    return None


def test_the_package_modules_import_one_another_without_a_cycle() -> None:
    edges = graph()
    assert len(edges) >= 10 and edges[PACKAGE]  # the package was read
    assert cycle(edges) is None


def test_a_submodule_never_imports_the_package_itself() -> None:
    # The package imports every submodule: a submodule importing it would close a cycle.
    for name, imported in graph().items():
        assert PACKAGE not in imported or name == PACKAGE, name


def test_no_module_of_the_package_imports_the_loop_or_the_budget() -> None:
    # Anywhere in it, inside functions too.
    for path in DIRECTORY.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert not name.startswith(("runcontext.loop", "runcontext.budget")), path.name


def test_the_cycle_finder_finds_one() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycle(edges) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_each_module_imports_first_and_the_package_needs_neither_loop_nor_budget() -> None:
    # Each in a fresh interpreter, imported first: a cycle would fail on a half-made module.
    for path in sorted(DIRECTORY.glob("*.py")):
        name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        if name == f"{PACKAGE}.postgres":
            continue  # needs the postgres extra; tests/transcript/test_postgres_* import it
        code = (
            f"import sys, {name}\n"
            "assert not {'runcontext.loop', 'runcontext.budget'} & set(sys.modules), "
            "sorted(m for m in sys.modules if m.startswith('runcontext'))"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, (name, result.stderr)
