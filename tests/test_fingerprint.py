"""request_fingerprint: what changes it, what does not, and what it refuses."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import blake3
import pytest

from runcontext import CanonicalJSONError, RunContext, canonical_json
from runcontext.fingerprint import request_fingerprint
from runcontext.providers import Contribution
from runcontext.providers.builder import ContextBuilder

CONTEXT = RunContext(head_sections=[("s", "stable")], facts=[("date", "2025-01-01")])
TOOL = {
    "type": "function",
    "function": {"name": "read", "parameters": {"type": "object", "properties": {}}},
}


def fp(**overrides: Any) -> str:
    arguments: dict[str, Any] = {
        "model": "gpt-x",
        "context": CONTEXT,
        "revision": "blake3:" + "0" * 64,
        "tools": [TOOL],
    }
    arguments.update(overrides)
    return request_fingerprint(**arguments)


def test_matches_an_independent_blake3_of_the_canonical_document() -> None:
    document = {
        "fingerprint": 1,
        "model": "gpt-x",
        "context": CONTEXT.digest,
        "revision": "blake3:" + "0" * 64,
        "tools": [TOOL],
    }
    assert fp() == "blake3:" + blake3.blake3(canonical_json(document)).hexdigest()


def test_each_input_changes_it() -> None:
    base = fp()
    other_context = RunContext(head_sections=[("s", "stable")], facts=[("date", "2025-01-02")])
    changed = {
        fp(model="gpt-y"),
        fp(context=other_context),
        fp(revision="blake3:" + "1" * 64),
        fp(tools=[TOOL, {"type": "function", "function": {"name": "write"}}]),
        fp(tools=None),
    }
    assert base not in changed and len(changed) == 5


def test_tool_order_matters_key_order_does_not() -> None:
    a = {"type": "function", "function": {"name": "a"}}
    b = {"type": "function", "function": {"name": "b"}}
    assert fp(tools=[a, b]) != fp(tools=[b, a])
    parameters = {"properties": {}, "type": "object"}
    reordered = {"function": {"parameters": parameters, "name": "read"}, "type": "function"}
    assert fp(tools=[reordered]) == fp()
    assert fp(tools=[{"n": 1.0}]) == fp(tools=[{"n": 1}])  # canonical number form


def test_no_tools_and_empty_tools_are_the_same() -> None:
    assert fp(tools=None) == fp(tools=[]) == fp(tools=())


def test_a_changed_provider_revision_changes_the_fingerprint() -> None:
    class Fixed:
        name = "fixed"

        def __init__(self, revision: str) -> None:
            self.revision = revision

        def collect(self, deadline: float) -> Contribution:
            return Contribution(facts=[("fixed", "same output")])

    old, new = ContextBuilder([Fixed("fixed/1")]), ContextBuilder([Fixed("fixed/2")])
    (old_context, _), (new_context, _) = old.build(), new.build()
    assert old_context == new_context  # the same output on this run ...
    assert request_fingerprint(
        model="m", context=old_context, revision=old.revision
    ) != request_fingerprint(model="m", context=new_context, revision=new.revision)


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"model": ""}, TypeError, "model: expected a non-empty model name"),
        ({"model": None}, TypeError, "model"),
        ({"context": "text"}, TypeError, "context: expected a runcontext.RunContext, got str"),
        ({"revision": ""}, TypeError, "revision: expected a non-empty string"),
        ({"tools": {"name": "x"}}, TypeError, "tools: expected a sequence"),
        ({"tools": "tools"}, TypeError, "tools: expected a sequence"),
        ({"tools": [TOOL, "x"]}, TypeError, r"tools\[1\]: expected a tool declaration"),
    ],
)
def test_refusals(overrides: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fp(**overrides)


def test_a_tool_without_a_json_form_names_its_path() -> None:
    with pytest.raises(CanonicalJSONError) as caught:
        fp(tools=[TOOL, {"parameters": {"default": float("nan")}}])
    assert caught.value.path == "$.tools[1].parameters.default"


def test_any_mapping_is_a_tool_declaration() -> None:
    frozen = MappingProxyType(TOOL)  # e.g. a tool catalogue kept read-only
    assert fp(tools=[frozen]) == fp()


def test_a_mapping_nested_in_a_tool_names_its_path() -> None:
    nested = {"type": "function", "function": MappingProxyType({"name": "read"})}
    with pytest.raises(CanonicalJSONError) as caught:
        fp(tools=[nested])
    assert caught.value.path == "$.tools[0].function"
    assert "convert it to a dict" in str(caught.value)


def test_basis_and_sampling_key_one_request_and_leave_the_shape_fingerprint_alone() -> None:
    from runcontext import RunContext, digest, request_fingerprint

    context = RunContext(facts=[("date", "2026-12-01")])
    shape = request_fingerprint(model="m", context=context, revision="r1")
    # Without them, the document is the five members it always was.
    assert shape == digest(
        {"fingerprint": 1, "model": "m", "context": context.digest, "revision": "r1", "tools": []}
    )
    last = digest({"role": "user", "content": "hi"})
    keyed = request_fingerprint(
        model="m", context=context, revision="r1", basis=last, sampling={"temperature": 0.0}
    )
    assert keyed == digest(
        {
            "fingerprint": 1,
            "model": "m",
            "context": context.digest,
            "revision": "r1",
            "tools": [],
            "basis": last,
            "sampling": {"temperature": 0},
        }
    )
    assert keyed != request_fingerprint(
        model="m", context=context, revision="r1", basis=last, sampling={"temperature": 0.5}
    )
    import pytest

    with pytest.raises(TypeError, match="sampling: expected a mapping"):
        request_fingerprint(model="m", context=context, revision="r1", sampling=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="basis: expected a digest string"):
        request_fingerprint(model="m", context=context, revision="r1", basis="")
