"""Every Python block in docs/ is valid Python, every runcontext name it imports or
spells out exists, and every keyword argument docs/ and README.md pass to a runcontext
callable is in its signature, so a rename cannot leave the docs behind. (INTEGRATIONS.md's
examples and README.md's blocks are also run: tests/integrations/test_docs.py,
test_readme.py.)"""

from __future__ import annotations

import ast
import importlib
import inspect
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


# --- keyword arguments shown in the docs exist --------------------------------------------
#
# Every keyword argument that docs/*.md or README.md passes to one of runcontext's public
# callables exists in its signature: in fenced Python blocks (calls resolved through the
# block's imports), in inline code that spells a call (`Loop(counter=..., budget=...)`), and
# in a section's parameter list (a bullet starting `- **`name=`**`), which must name a keyword
# of a callable the section shows.

ROOT = DOCS.parent
DOCUMENTS = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
PUBLIC_MODULES = [
    "runcontext",
    "runcontext.adapters",
    "runcontext.adapters.replies",
    "runcontext.adapters.streams",
    "runcontext.budget",
    "runcontext.tokenizers",
    "runcontext.providers",
    "runcontext.transcript",
    "runcontext.transcript.store",
    "runcontext.loop",
    "runcontext.integrations",
    "runcontext.integrations.langchain",
    "runcontext.integrations.pydantic_ai",
    "runcontext.integrations.openai_agents",
    "runcontext.integrations.opentelemetry",
]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
CALL = re.compile(r"([A-Za-z_][\w.]*)\(([^()]*)\)")
STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
KEYWORD = re.compile(r"(?<![\w=!<>])(\w+)=(?!=)")
PARAMETER_LIST = re.compile(r"^\s*- \*\*((?:`\w+=`(?: / |, )?)+)\*\*", re.MULTILINE)


def _public_names() -> dict[str, object]:
    """The names a doc may use without importing them: every public module's ``__all__``."""
    names: dict[str, object] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            names.setdefault(name, getattr(module, name))
    return names


def _resolve(dotted: str) -> object | None:
    """The object ``dotted`` names (``runcontext.x.Y.z``), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute, None)
            if value is None:
                return None
        return value
    return None


def _ours(dotted: str, imported: dict[str, str], public: dict[str, object]) -> object | None:
    """The runcontext callable a call spells, or None for anyone else's (an SDK, a variable)."""
    root, _, rest = dotted.partition(".")
    if root in imported:
        if not imported[root].startswith("runcontext"):
            return None
        return _resolve(imported[root] + ("." + rest if rest else ""))
    if root == "runcontext":
        return _resolve(dotted)
    if root in public:
        value: object | None = public[root]
        for attribute in rest.split(".") if rest else ():
            value = getattr(value, attribute, None)
        return value
    return None


def _unknown(callable_: object, keywords: list[str]) -> list[str]:
    """The keywords ``callable_`` does not accept."""
    parameters = inspect.signature(callable_).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return []
    accepted = {p.name for p in parameters if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    return [keyword for keyword in keywords if keyword not in accepted]


def _calls(text: str, public: dict[str, object]) -> list[tuple[str, object, list[str]]]:
    """(spelling, callable, keywords) of every call to a runcontext callable in ``text``."""
    calls: list[tuple[str, object, list[str]]] = []
    for language, block in FENCE.findall(text):
        if language != "python":
            continue
        tree = ast.parse(block)
        imported = {
            alias.asname or alias.name: f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        } | {
            (alias.asname or alias.name).split(".")[0]: alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                spelled = ast.unparse(node.func)
                found = _ours(spelled, imported, public)
                keywords = [k.arg for k in node.keywords if k.arg is not None]
                if found is not None:
                    calls.append((spelled, found, keywords))
    for span in SPAN.findall(FENCE.sub("", text)):
        unquoted = STRING.sub('""', span.replace("…", "..."))  # `f("a?b=c")` passes no b=
        for spelled, arguments in CALL.findall(unquoted):
            found = _ours(spelled, {}, public)
            if found is not None:
                calls.append((spelled, found, KEYWORD.findall(arguments)))
    return calls


def _sections(text: str) -> list[str]:
    """``text`` cut at its headings (fenced blocks kept whole)."""
    sections: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("#") and not fenced and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    sections.append("".join(current))
    return sections


def keyword_errors(name: str, text: str) -> list[str]:
    """Every keyword argument ``text`` shows that its runcontext callable does not accept."""
    public = _public_names()
    errors: list[str] = []
    for section in _sections(text):
        heading = section.splitlines()[0] if section else ""
        calls = _calls(section, public)
        for spelled, callable_, keywords in calls:
            for keyword in _unknown(callable_, keywords):
                errors.append(
                    f"{name} ({heading}): {spelled}(... {keyword}=...) is not a parameter"
                )
        for listed in PARAMETER_LIST.findall(FENCE.sub("", section)):
            for keyword in re.findall(r"`(\w+)=`", listed):
                if not any(not _unknown(found, [keyword]) for _, found, _ in calls):
                    shown = sorted({spelled for spelled, _, _ in calls}) or ["none"]
                    errors.append(
                        f"{name} ({heading}): `{keyword}=` is a parameter of none of the "
                        f"section's callables ({', '.join(shown)})"
                    )
    return errors


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.name)
def test_every_keyword_the_docs_show_is_in_the_signature(path: Path) -> None:
    assert keyword_errors(path.name, path.read_text(encoding="utf-8")) == []


def test_a_keyword_the_signature_lacks_is_caught() -> None:
    text = (
        "## ContextBuilder\n\n```python\nbuilder = ContextBuilder(providers, head=[])\n```\n\n"
        "- **`tail=` / `deadline=`** are documented here.\n\n"
        "Counted by `Loop(counter=..., budgets=...)`.\n\n"
        "```python\nfrom pydantic_ai import Agent\nAgent('openai:gpt-6-luna', nonsense=1)\n```\n"
    )
    assert keyword_errors("x.md", text) == [
        "x.md (## ContextBuilder): ContextBuilder(... head=...) is not a parameter",
        "x.md (## ContextBuilder): Loop(... budgets=...) is not a parameter",
        "x.md (## ContextBuilder): `tail=` is a parameter of none of the section's callables "
        "(ContextBuilder, Loop)",
    ]
