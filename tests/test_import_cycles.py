"""No import cycles among runcontext's modules: a module never imports, directly or through
others, a module that imports it back. Imports inside functions count (they still tie the
two modules together); imports under ``if TYPE_CHECKING:`` do not (they never run). Importing
``a.b.c`` runs the packages ``a`` and ``a.b`` too, except those the importer is inside."""

from __future__ import annotations

import ast
from pathlib import Path

import runcontext

PACKAGE = Path(runcontext.__file__).parent
# The modules this check covers: every module but those of the packages listed.
NOT_COVERED = ("runcontext.transcript", "runcontext.cli")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)}


def _run_time_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    imported: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded = not isinstance(node.test, ast.UnaryOp)  # `if not TYPE_CHECKING` runs
            for child in node.orelse if guarded else node.body:
                visit(child)
            return
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in imported if name in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        targets = _run_time_imports(path, modules)
        graph[name] = {a for t in targets for a in _ancestors(t)} - _ancestors(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_check_sees_a_cycle_and_run_time_imports(tmp_path: Path) -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "module.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import runcontext.keyed\n"
        "else:\n    import runcontext.errors\n"
        "def later() -> None:\n    from runcontext.budget import usage\n",
        encoding="utf-8",
    )
    assert _run_time_imports(source, _modules()) == {
        "runcontext.errors",
        "runcontext.budget",
        "runcontext.budget.usage",
    }


def test_no_module_is_part_of_an_import_cycle() -> None:
    graph = _graph()
    assert "runcontext.adapters.streams" in graph and graph["runcontext.budget.usage"]
    cycles = [
        cycle
        for cycle in _cycles(graph)
        if any(not member.startswith(NOT_COVERED) for member in cycle)
    ]
    assert cycles == []
