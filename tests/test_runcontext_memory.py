"""A RunContext holds the caller's strings, not copies of them."""

from __future__ import annotations

import gc
import tracemalloc

from runcontext import RunContext, digest


def test_the_callers_str_is_kept_not_copied() -> None:
    text = "rule: keep functions small.\n" * 40_000  # ~1.1 MB, trailing newline to drop
    clean = text.rstrip("\n")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    rc = RunContext(head_sections=[("a", text), ("b", clean)], facts=[("date", "x")])
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert held < 2048, f"a context of two 1 MB texts holds {held} B of its own"
    # The normalised text is what every property shows, and a text that needed no
    # normalisation is the caller's own object.
    assert rc.head_sections == (("a", clean), ("b", clean))
    assert rc.head_sections[1][1] is clean
    assert rc.sections[0].text == clean
    assert rc.head_text == clean + "\n\n" + clean
    assert rc.sections[0].digest == digest({"name": "a", "text": clean})


def test_rendered_texts_are_equal_on_every_access() -> None:
    rc = RunContext(head_sections=[("a", "x" * 5000), ("b", "y\u00e9")], tail_sections=[("t", "z")])
    assert rc.head_text == rc.head_text == "x" * 5000 + "\n\n" + "y\u00e9"
    assert rc.tail_text == rc.tail_text
    assert rc.sections == rc.sections and rc.section_digests == rc.section_digests


def test_a_str_subclass_is_held_as_a_plain_str() -> None:
    class Text(str):
        pass

    rc = RunContext(head_sections=[(Text("n"), Text("text  "))])
    ((name, text),) = rc.head_sections
    assert type(name) is str and type(text) is str and text == "text"
    assert type(rc.head_text) is str
