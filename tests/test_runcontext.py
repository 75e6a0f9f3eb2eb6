"""RunContext: the conformance vectors, agreement with the reference, and the Python face."""

from __future__ import annotations

import collections
import json
import os
import pickle
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runcontext import RunContext, RunContextError, digest
from runcontext.conformance import observe_runcontext, verify
from runcontext.errors import RunContextTypeError, RunContextValueError
from runcontext.section import Section

from conftest import VECTORS
from reference import runcontext as reference
from strategies import names, unique_pairs, values

CASES: list[dict[str, Any]] = json.loads((VECTORS / "runcontext-v1.json").read_text())["cases"]

# --- conformance vectors ----------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    observed = observe_runcontext(case)
    if "error" in case:
        assert observed.get("error") == case["error"]
    else:
        assert observed.get("expect") == case["expect"]


def test_vectors_cover_every_rule() -> None:
    assert len(CASES) >= 60
    kinds = {c["error"]["kind"] for c in CASES if "error" in c}
    assert kinds == {
        "mapping",
        "bare-pair",
        "not-a-sequence",
        "not-a-pair",
        "name-type",
        "value-type",
        "empty-name",
        "name-control",
        "name-whitespace",
        "duplicate-name",
        "not-text",
        "too-many-entries",
    }
    assert verify(VECTORS / "runcontext-v1.json").ok


# --- agreement with the independent reference -------------------------------------------


def _same(rc: RunContext, ref: reference.RunContext) -> None:
    assert rc.head_text == ref.head_text
    assert rc.tail_text == ref.tail_text
    assert rc.digest == ref.digest
    assert list(rc.facts) == ref.facts
    assert list(rc.head_sections) == ref.head_sections
    assert list(rc.tail_sections) == ref.tail_sections
    assert [(s.position, s.name, s.text, s.digest) for s in rc.sections] == ref.sections
    assert list(rc.section_digests) == ref.section_digests
    assert rc.is_empty == ref.is_empty


sections_and_facts = st.tuples(unique_pairs(), unique_pairs(), unique_pairs()).filter(
    lambda t: not {n for n, _ in t[0]} & {n for n, _ in t[2]}
)


@given(sections_and_facts)
def test_rust_agrees_with_the_reference(args: tuple[Any, Any, Any]) -> None:
    head, facts, tail = args
    rc = RunContext(head_sections=head, facts=facts, tail_sections=tail)
    _same(rc, reference.RunContext(head_sections=head, facts=facts, tail_sections=tail))
    rebuilt = RunContext(
        head_sections=rc.head_sections, facts=rc.facts, tail_sections=rc.tail_sections
    )
    assert rebuilt.digest == rc.digest


# Arbitrary, often invalid, arguments: both implementations must refuse the same rule at the
# same place.
_any_name = st.one_of(
    names,
    st.sampled_from(
        ["", " x", "x ", "a\nb", "\t", "x\u2028", "\u00a0y", "dup", 7, None, "\ud800", " \udc00"]
    ),
)
_any_value = st.one_of(
    values, st.sampled_from([3, 1.5, b"x", ["list"], {"d": 1}, "\udfff", "x\ud800 "])
)
_any_entry = st.one_of(
    st.tuples(_any_name, _any_value),
    st.sampled_from(["ab", ("a",), ("a", "b", "c"), 5, None]),
)
_any_arg = st.one_of(
    st.none(),
    st.lists(_any_entry, max_size=4),
    # Bare pairs: a (name, value) where a sequence of pairs belongs, with each kind of value.
    st.sampled_from([{"a": "b"}, ("date", "x"), ("date", None), ["a", ""], ("n", 3), "text", 42]),
)


@given(_any_arg, _any_arg, _any_arg)
def test_errors_agree_with_the_reference(head: Any, facts: Any, tail: Any) -> None:
    try:
        ref = reference.RunContext(head_sections=head, facts=facts, tail_sections=tail)
    except reference.RunContextRefError as expected:
        with pytest.raises(RunContextError) as info:
            RunContext(head_sections=head, facts=facts, tail_sections=tail)
        got = info.value
        assert (got.kind, got.argument, got.index) == (expected.kind, expected.arg, expected.index)
        assert isinstance(got, TypeError) == expected.is_type_error
        assert isinstance(got, ValueError) == (not expected.is_type_error)
    else:
        _same(RunContext(head_sections=head, facts=facts, tail_sections=tail), ref)


_SEED_SCRIPT = """
import json, runcontext
items = json.loads(input())
rc = runcontext.RunContext(head_sections=items[0], facts=items[1], tail_sections=items[2])
print(json.dumps([rc.digest, [s.digest for s in rc.sections], rc.tail_text]))
"""


def test_digests_identical_across_processes_with_different_hash_seeds() -> None:
    args = [
        [["identity", "You are a careful agent."], ["agents", "# AGENTS\nUse tabs.\n"]],
        [["date", "2026-11-30"], ["cwd", "/work/ünïcode"], ["git", "main @ 1a2b3c4"]],
        [["todo", "1. read\n2. write"]],
    ]
    outputs = set()
    for seed in ("0", "1", "4242", "random"):
        result = subprocess.run(
            [sys.executable, "-c", _SEED_SCRIPT],
            input=json.dumps(args),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1
    expected = reference.RunContext(head_sections=args[0], facts=args[1], tail_sections=args[2])
    assert json.loads(outputs.pop())[0] == expected.digest


# --- refusals and their messages ---------------------------------------------------------


def test_mapping_is_refused_with_the_reason_and_the_fix() -> None:
    with pytest.raises(RunContextTypeError) as info:
        RunContext(facts={"date": "2026-11-30"})  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith("facts: a mapping is refused because the render order")
    assert "canonical digest stays the same" in message
    assert "list(d.items())" in message
    assert (info.value.kind, info.value.argument, info.value.index) == ("mapping", "facts", None)
    with pytest.raises(RunContextTypeError, match="head_sections: a mapping"):
        RunContext(head_sections=collections.OrderedDict(a="b"))  # type: ignore[arg-type]


@pytest.mark.parametrize("unordered", [{("a", "b")}, frozenset({("a", "b")}), {"a": "b"}.items()])
def test_unordered_collections_are_refused(unordered: Any) -> None:
    with pytest.raises(RunContextTypeError, match="has no order") as info:
        RunContext(tail_sections=unordered)
    assert info.value.kind == "unordered"


def test_bare_pair_is_told_what_it_is() -> None:
    with pytest.raises(RunContextTypeError) as info:
        RunContext(facts=("date", "2026-11-30"))  # type: ignore[arg-type]
    assert str(info.value) == (
        'facts: got one bare pair ("date", ...), not a sequence of pairs; '
        'wrap it in a list: [("date", ...)]'
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"facts": [("date", {"y": 2026})]},
            RunContextTypeError,
            'facts[0] ("date"): the value must be a str or None, got dict',
        ),
        (
            {"head_sections": [("id", 5)]},
            RunContextTypeError,
            'head_sections[0] ("id"): the text must be a str or None, got int',
        ),
        (
            {"facts": [("a", "1"), (2, "2")]},
            RunContextTypeError,
            "facts[1]: the name must be a str, got int",
        ),
        (
            {"facts": [("a", "1", "x")]},
            RunContextTypeError,
            "facts[0]: expected a (name, value) pair, got a tuple of 3 items",
        ),
        (
            {"facts": "date"},
            RunContextTypeError,
            "facts: expected a sequence of (name, value) pairs, got str",
        ),
        (
            {"facts": (pair for pair in [("a", "b")])},
            RunContextTypeError,
            "facts: expected a sequence of (name, value) pairs, got generator",
        ),
        ({"facts": [("", "x")]}, RunContextValueError, "facts[0]: the name is empty"),
        (
            {"facts": [("a\nb", "x")]},
            RunContextValueError,
            'facts[0] ("a\\nb"): a name may not hold control characters or line breaks',
        ),
        (
            {"tail_sections": [("x", None), ("x\u3000", "y")]},
            RunContextValueError,
            'tail_sections[1] ("x\u3000"): a name may not begin or end with whitespace',
        ),
        (
            {"facts": [("date", None), ("date", "x")]},
            RunContextValueError,
            'facts[1] ("date"): duplicate name, already used by facts[0]',
        ),
        (
            {"head_sections": [("s", "")], "tail_sections": [("s", "t")]},
            RunContextValueError,
            'tail_sections[0] ("s"): duplicate name, already used by head_sections[0]',
        ),
        (
            {"facts": [("bad", "\ud800")]},
            RunContextValueError,
            'facts[0] ("bad"): the value is not valid Unicode text',
        ),
    ],
)
def test_refusals_name_argument_index_and_name(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        RunContext(**kwargs)
    assert str(info.value).startswith(message)


def test_keyword_only() -> None:
    with pytest.raises(TypeError):
        RunContext([("a", "b")])  # type: ignore[misc]


# --- the Python face --------------------------------------------------------------------


def _sample() -> RunContext:
    return RunContext(
        head_sections=[("identity", "You are careful."), ("agents", "Use tabs.  \n")],
        facts=[("date", "2026-11-30"), ("branch", None), ("note", "")],
        tail_sections=[("todo", "- write tests")],
    )


def test_rendering() -> None:
    rc = _sample()
    assert rc.head_text == "You are careful.\n\nUse tabs."
    assert rc.tail_text is not None
    assert rc.tail_text.startswith(
        "## Current context\n\n- date: 2026-11-30\n- note:\n\n- write tests\n\n"
    )
    assert rc.tail_text.endswith("do not acknowledge it, and do not\nreply to it.")
    assert rc.facts == (("date", "2026-11-30"), ("note", ""))
    assert rc.sections[1] == Section(
        "head", "agents", "Use tabs.", digest({"name": "agents", "text": "Use tabs."})
    )
    assert [s.position for s in rc.sections] == ["head", "head", "tail"]


def test_messages_are_fresh_dicts_around_the_same_text() -> None:
    rc = _sample()
    first, second = rc.head_message, rc.head_message
    assert first == {"role": "system", "content": rc.head_text}
    assert first is not second
    assert first is not None and second is not None
    # head_text of several sections is rendered on each access (a context keeps no copy).
    assert first["content"] == second["content"] == rc.head_text
    assert RunContext().head_message is None and RunContext().tail_message is None


def test_immutable_hashable_equal_by_digest() -> None:
    rc, same = _sample(), _sample()
    assert rc == same and hash(rc) == hash(same) and rc is not same
    assert len({rc, same}) == 1
    assert rc != RunContext(facts=[("date", "2026-12-01")])
    assert rc != rc.digest
    with pytest.raises(AttributeError):
        rc.digest = "x"  # type: ignore[misc]


def test_repr_is_short() -> None:
    rc = RunContext(head_sections=[("agents", "x" * 10_000)], facts=[("date", "d")])
    text = repr(rc)
    assert (
        text == f"RunContext(digest='{rc.digest[:19]}…', head_sections=1, facts=1, tail_sections=0)"
    )


def test_pickle_round_trip() -> None:
    rc = _sample()
    clone = pickle.loads(pickle.dumps(rc))
    assert clone == rc and clone.tail_text == rc.tail_text and clone.sections == rc.sections


def test_empty_context() -> None:
    rc = RunContext()
    assert (rc.head_text, rc.tail_text, rc.sections) == (None, None, ())
    assert rc.digest == digest({"v": 1, "head": [], "facts": [], "tail": []})


def test_any_sequence_is_accepted() -> None:
    deque = collections.deque([("date", "d")])
    assert (
        RunContext(facts=deque)
        == RunContext(facts=[["date", "d"]])
        == RunContext(facts=(("date", "d"),))
    )


_IMPORT_SCRIPT = """
import sys, runcontext
assert "asyncio" not in sys.modules, "import runcontext imported asyncio"
missing = [name for name in runcontext.__all__ if name not in dir(runcontext)]
assert not missing, missing
for name in runcontext.__all__:
    getattr(runcontext, name)
assert "runcontext.providers.builder" in sys.modules  # loaded on first use
assert "asyncio" not in sys.modules  # and asyncio only by what runs async code
try:
    runcontext.NoSuchName
except AttributeError as error:
    assert "NoSuchName" in str(error)
else:
    raise AssertionError("runcontext.NoSuchName resolved")
namespace = {}
exec("from runcontext import *", namespace)
assert set(runcontext.__all__) <= set(namespace)
print("ok")
"""


def test_import_is_lazy_and_every_exported_name_resolves() -> None:
    # A fresh interpreter: this one has long since imported everything.
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_SCRIPT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_lazy_names_are_the_defining_modules_objects() -> None:
    import runcontext
    from runcontext import transcript
    from runcontext.providers import builder

    assert runcontext.ContextBuilder is builder.ContextBuilder
    assert runcontext.TranscriptError is transcript.TranscriptError
    assert runcontext.adapters.__name__ == "runcontext.adapters"


_DIR_SCRIPT = """
import runcontext
before = dir(runcontext)
for name in runcontext.__all__:
    getattr(runcontext, name)
import runcontext.section, runcontext.keyed  # submodules become attributes of the package
print(before == dir(runcontext))
print([name for name in before if not name.startswith("__")])
"""


def test_dir_lists_the_public_names_only() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _DIR_SCRIPT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    import runcontext

    public = sorted(name for name in runcontext.__all__ if not name.startswith("__"))
    assert result.stdout == f"True\n{public}\n"
    assert "__version__" in dir(runcontext) and "TYPE_CHECKING" not in dir(runcontext)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import runcontext

    with pytest.raises(AttributeError, match=r"^module 'runcontext' has no attribute 'Run'$"):
        runcontext.Run  # noqa: B018


def test_a_bare_pair_with_a_wrong_value_is_told_the_fix() -> None:
    with pytest.raises(RunContextTypeError) as info:
        RunContext(facts=("n", 3))  # type: ignore[arg-type]
    assert info.value.kind == "not-a-pair"
    assert str(info.value) == (
        'facts[0]: expected a (name, value) pair, got str; if ("n", ...) is meant as one pair, '
        'wrap it in a list: [("n", ...)]'
    )
