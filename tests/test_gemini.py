"""runcontext.adapters.gemini_contents with the official google-genai SDK, against the cache
simulator on 127.0.0.1 (tests/simulators/server.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types
from simulators.server import SimulatorServer

from runcontext import RunContext
from runcontext.adapters import gemini_contents

MODEL = "gemini-2.5-flash"


def context(turn: int) -> RunContext:
    head = [("instructions", "Prefer small diffs and say how you checked them. " * 200)]
    return RunContext(head_sections=head, facts=[("clock", f"09:{turn:02d}:00Z")])


@pytest.fixture
def simulator() -> Iterator[SimulatorServer]:
    with SimulatorServer() as running:
        yield running


def client(simulator: SimulatorServer) -> genai.Client:
    options = types.HttpOptions(base_url=simulator.url)
    return genai.Client(api_key="test-key", http_options=options)


def test_head_system_instruction_conversation_then_tail(simulator: SimulatorServer) -> None:
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Why does test_io fail? «é» 🚀"}]},
        {"role": "model", "parts": [{"text": "The fixture closes the file twice."}]},
        {"role": "user", "parts": [{"text": "Fix it."}]},
    ]
    before = copy.deepcopy(contents)
    body = gemini_contents(contents, context(1))
    assert body["contents"][:3] == contents
    assert all(a is b for a, b in zip(body["contents"], contents, strict=False))
    gemini = client(simulator)  # held: a collected Client closes its connection
    response = gemini.models.generate_content(model=MODEL, **body)
    assert response.text == "ok"
    assert contents == before
    wire = simulator.exchanges[-1].json
    assert wire["systemInstruction"] == {"parts": [{"text": context(1).head_text}]}
    assert wire["contents"][:3] == contents
    assert wire["contents"][3] == {"role": "user", "parts": [{"text": context(1).tail_text}]}
    assert len(wire["contents"]) == 4
    assert simulator.exchanges[-1].path.endswith(f"/models/{MODEL}:generateContent")


def test_the_tail_is_only_in_its_own_request_and_the_prefix_is_read(
    simulator: SimulatorServer,
) -> None:
    gemini = client(simulator)
    contents: list[Any] = []
    usages = []
    for turn in (1, 2, 3):
        contents.append(types.Content(role="user", parts=[types.Part(text=f"Question {turn}?")]))
        response = gemini.models.generate_content(
            model=MODEL, **gemini_contents(contents, context(turn))
        )
        usages.append(response.usage_metadata)
        contents.append({"role": "model", "parts": [{"text": f"Answer {turn}."}]})
    bodies = [exchange.json for exchange in simulator.exchanges]
    for turn, body in enumerate(bodies, start=1):
        tails = [c for c in body["contents"] if "Current context" in json.dumps(c)]
        assert tails == [{"role": "user", "parts": [{"text": context(turn).tail_text}]}]
        assert body["contents"][-1] == tails[0]
    assert usages[0] is not None and usages[1] is not None and usages[2] is not None
    assert not usages[0].cached_content_token_count
    # Turn 2 reads head and turn 1's question; turn 3 reads everything before its question.
    assert usages[1].cached_content_token_count == simulator.usages[1].read > 0
    assert usages[2].cached_content_token_count == simulator.usages[2].read
    assert simulator.usages[2].read > simulator.usages[1].read


def test_config_passes_through_and_own_system_instruction_follows_the_head(
    simulator: SimulatorServer,
) -> None:
    config = {"temperature": 0.0, "system_instruction": "Answer in French."}
    body = gemini_contents([{"role": "user", "parts": [{"text": "Hi"}]}], context(1), config=config)
    assert config == {"temperature": 0.0, "system_instruction": "Answer in French."}
    gemini = client(simulator)
    gemini.models.generate_content(model=MODEL, **body)
    wire = simulator.exchanges[-1].json
    assert wire["systemInstruction"]["parts"] == [
        {"text": context(1).head_text},
        {"text": "Answer in French."},
    ]
    assert wire["generationConfig"]["temperature"] == 0.0


def test_explicit_cache_leaves_the_head_to_the_cache() -> None:
    body = gemini_contents(
        [{"role": "user", "parts": [{"text": "Hi"}]}],
        context(1),
        config={"cached_content": "cachedContents/abc"},
    )
    assert body["config"] == {"cached_content": "cachedContents/abc"}
    assert body["contents"][-1]["parts"][0]["text"] == context(1).tail_text


def test_without_context_the_contents_are_the_callers() -> None:
    contents = [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert gemini_contents(contents, None) == {"contents": contents}


@pytest.mark.parametrize(
    ("contents", "kwargs", "error", "message"),
    [
        ("hi", {}, TypeError, "contents: expected a sequence of Content objects or dicts, got str"),
        ([{"parts": []}], {}, TypeError, r"contents\[0\]: the content has no 'role' key"),
        (
            [{"role": "assistant", "parts": []}],
            {},
            ValueError,
            r"contents\[0\].role: Gemini does not accept the role 'assistant'; "
            "expected one of model, user",
        ),
        ([42], {}, TypeError, r"contents\[0\]: expected a Content object or dict, got int"),
        ([], {"config": [1]}, TypeError, "config: expected a mapping"),
        (
            [{"role": "user", "parts": []}],
            {"config": {"system_instruction": {"parts": []}}},
            TypeError,
            r"config\['system_instruction'\]: expected a string to follow the head, got dict",
        ),
    ],
)
def test_errors(
    contents: Any, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        gemini_contents(contents, context(1), **kwargs)


def test_empty_without_tail_is_refused() -> None:
    with pytest.raises(
        ValueError, match="contents: the conversation is empty and the context has no tail"
    ):
        gemini_contents([], None)
