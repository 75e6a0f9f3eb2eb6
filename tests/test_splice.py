"""The loop splice: ``[head, *messages, tail]`` by reference, the conversation untouched."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runcontext import RunContext
from runcontext._checks import check_context, check_messages
from runcontext._splice import splice

HEAD = [("instructions", "You are a careful assistant.")]
FACTS = [("clock", "2025-06-01T09:00:00Z"), ("branch", "main")]


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Where is the config?"},
        {"role": "assistant", "content": [{"type": "text", "text": "In etc/."}]},
        {"role": "user", "content": "Read it."},
    ]


def test_head_first_conversation_by_identity_tail_last() -> None:
    messages = conversation()
    before = copy.deepcopy(messages)
    context = RunContext(head_sections=HEAD, facts=FACTS)
    request = splice(messages, context)
    assert request[0] == {"role": "system", "content": "You are a careful assistant."}
    assert request[-1]["role"] == "system"
    assert "- clock: 2025-06-01T09:00:00Z" in request[-1]["content"]
    assert len(request) == len(messages) + 2
    assert all(got is sent for got, sent in zip(request[1:-1], messages, strict=True))
    assert messages == before
    assert request is not messages


def test_missing_head_or_tail_is_left_out() -> None:
    messages = conversation()
    head_only = splice(messages, RunContext(head_sections=HEAD))
    assert head_only[0]["content"] == "You are a careful assistant."
    assert head_only[1:] == messages
    assert all(a is b for a, b in zip(head_only[1:], messages, strict=True))
    tail_only = splice(messages, RunContext(facts=FACTS))
    assert tail_only[:-1] == messages
    assert tail_only[-1]["content"].startswith("## Current context")
    assert splice(messages, RunContext()) == messages


def test_no_context_returns_a_new_list_of_the_same_messages() -> None:
    messages = conversation()
    request = splice(messages, None)
    assert request is not messages
    assert all(a is b for a, b in zip(request, messages, strict=True))
    request.append({"role": "user", "content": "more"})
    assert len(messages) == 3


def test_empty_conversation() -> None:
    request = splice([], RunContext(head_sections=HEAD, facts=FACTS))
    assert [m["role"] for m in request] == ["system", "system"]
    assert splice([], None) == []


def test_tuples_and_other_sequences_are_accepted() -> None:
    class Conversation(Sequence[Mapping[str, Any]]):
        def __init__(self, items: list[dict[str, Any]]) -> None:
            self._items = items

        def __getitem__(self, index: Any) -> Any:
            return self._items[index]

        def __len__(self) -> int:
            return len(self._items)

    messages = conversation()
    for given_messages in (tuple(messages), Conversation(messages)):
        request = splice(given_messages, RunContext(facts=FACTS))
        assert all(a is b for a, b in zip(request[:-1], messages, strict=True))


def test_the_head_and_tail_are_fresh_dicts_each_call() -> None:
    context = RunContext(head_sections=HEAD, facts=FACTS)
    first, second = splice([], context), splice([], context)
    first[0]["content"] = "changed"
    assert second[0]["content"] == "You are a careful assistant."


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ("hello", "messages: expected a sequence of message mappings, got str"),
        (b"hello", "messages: expected a sequence of message mappings, got bytes"),
        ({"role": "user"}, "messages: expected a sequence of message mappings, got dict"),
        (None, "messages: expected a sequence of message mappings, got NoneType"),
        ([{"role": "user", "content": "a"}, "b"], "messages[1]: expected a message mapping"),
        ([{"role": "user"}, {"content": "x"}], "messages[1]: the message has no 'role' key"),
        ([("role", "user")], "messages[0]: expected a message mapping with a 'role', got tuple"),
    ],
)
def test_bad_input_names_the_index(messages: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        splice(messages, None)


def test_check_messages_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"^input\[0\]: the message has no 'role' key$"):
        check_messages([{}], argument="input")
    messages = conversation()
    assert check_messages(messages) is messages


@pytest.mark.parametrize(
    ("context", "kind"),
    [({"x": 1}, "dict"), ("facts", "str"), ([("h", "x")], "list"), (RunContext, "type")],
)
def test_a_context_that_is_not_a_runcontext_is_refused(context: Any, kind: str) -> None:
    message = rf"^context: expected a runcontext\.RunContext or None, got {kind}$"
    with pytest.raises(TypeError, match=message):
        splice(conversation(), context)
    with pytest.raises(TypeError, match=message):
        check_context(context)
    context = RunContext(facts=FACTS)
    assert check_context(context) is context
    assert check_context(None) is None


def test_iterators_are_refused_not_consumed() -> None:
    def generate() -> Iterator[dict[str, Any]]:
        yield {"role": "user", "content": "hi"}

    with pytest.raises(TypeError, match="got generator"):
        splice(generate(), None)  # type: ignore[arg-type]


messages_strategy = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=20)}
    ),
    max_size=20,
)
optional_text = st.one_of(st.none(), st.text(min_size=1, max_size=20))


@given(messages=messages_strategy, head=optional_text, fact=optional_text)
def test_property_splice_is_head_messages_tail(
    messages: list[dict[str, Any]], head: str | None, fact: str | None
) -> None:
    before = copy.deepcopy(messages)
    context = RunContext(head_sections=[("h", head)], facts=[("f", fact)])
    request = splice(messages, context)
    offset = 0 if context.head_message is None else 1
    middle = request[offset : offset + len(messages)]
    assert all(a is b for a, b in zip(middle, messages, strict=True))
    expected = [context.head_message, *messages, context.tail_message]
    assert request == [m for m in expected if m is not None]
    assert messages == before
