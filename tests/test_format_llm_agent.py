"""FORMAT.md § 3.7 states each difference from LLM::Agent with the bytes on both sides; every
example's runcontext side is what the real RunContext gives, so the doc cannot drift from the
code. LLM::Agent's side is not run here (it is Raku); it is checked only to differ from ours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from runcontext import RunContext
from runcontext.errors import RunContextValueError

FORMAT = Path(__file__).resolve().parent.parent / "docs" / "FORMAT.md"
OURS = ("tail_text", "refused", "section_names")


def _section_37() -> str:
    text = FORMAT.read_text(encoding="utf-8")
    start = text.index("### 3.7 Differences from LLM::Agent")
    return text[start : text.index("\n## ", start)]


def _examples() -> list[dict[str, Any]]:
    """Every Python block of § 3.7, run in order in one namespace (later blocks use the
    closing texts the first defines); each block's own names, as it left them."""
    shared: dict[str, Any] = {"__builtins__": {"range": range}}
    examples = []
    for block in re.findall(r"```python\n(.*?)```", _section_37(), re.DOTALL):
        for name in ("arguments", "llm_agent", *OURS):
            shared.pop(name, None)
        exec(compile(block, "FORMAT.md § 3.7", "exec"), shared)
        examples.append({k: v for k, v in shared.items() if k != "__builtins__"})
    return examples


EXAMPLES = _examples()


def _id(example: dict[str, Any]) -> str:
    ours = next(name for name in OURS if name in example)
    return f"{ours}:{str(example['arguments'])[:40]}"


def test_section_37_has_an_example_of_each_kind() -> None:
    kinds = [next(name for name in OURS if name in example) for example in EXAMPLES]
    assert kinds.count("tail_text") == 3
    assert kinds.count("refused") == 6
    assert kinds.count("section_names") == 1


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_runcontext_gives_the_bytes_the_doc_states(example: dict[str, Any]) -> None:
    assert "llm_agent" in example, "each example states LLM::Agent's side"
    ours = [name for name in OURS if name in example]
    assert len(ours) == 1, f"one runcontext side per example, got {ours}"
    arguments = example["arguments"]
    if "refused" in example:
        with pytest.raises(RunContextValueError) as raised:
            RunContext(**arguments)
        assert str(raised.value) == example["refused"]
        return
    context = RunContext(**arguments)
    if "tail_text" in example:
        assert context.tail_text == example["tail_text"]
        assert context.tail_text != example["llm_agent"]
    else:
        names = [section.name for section in context.sections]
        assert names == example["section_names"]
        assert names != example["llm_agent"]


def test_the_closing_texts_differ_only_in_where_the_lines_break() -> None:
    # Difference 1 says the two closings are the same statements, one wrapped.
    closings = EXAMPLES[0]
    ours, theirs = closings["CLOSING"], closings["LLM_AGENT_CLOSING"]
    assert ours != theirs
    assert ours.replace("\n", " ").replace("authoritative. This", "authoritative.\nThis") == (
        theirs
    )


def test_an_emptied_section_has_the_digest_of_one_never_passed() -> None:
    # Difference 5 and § 3.6: "" and None both drop the section from the digest.
    kept = [("identity", "You are terse.")]
    never = RunContext(head_sections=kept)
    for dropped in ("", "  \n", None):
        emptied = RunContext(head_sections=[*kept, ("instructions", dropped)])
        assert emptied.digest == never.digest
        assert emptied.section_digests == never.section_digests
