"""Gemini's billed usage (``usage_metadata``) read by ``gemini_usage`` and ``read_usage``: the
google-genai SDK's response object (from a real client against a local server), its
``model_dump()``, the API's JSON, and Google ADK's ``LlmResponse``."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google import genai
from google.adk.models.llm_response import LlmResponse
from pytest_httpserver import HTTPServer

from runcontext.budget import Usage, gemini_usage, read_usage

GEMINI = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
    ],
    "usageMetadata": {
        "promptTokenCount": 1200,
        "cachedContentTokenCount": 1024,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 3,
        "totalTokenCount": 1210,
    },
    "modelVersion": "gemini-3-flash",
}
BILLED = Usage(input=1200, output=10, cache_read=1024, cache_write=0)


def client(httpserver: HTTPServer) -> Any:
    return genai.Client(api_key="fake", http_options={"base_url": httpserver.url_for("")})


def test_sdk_response_dump_and_json(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1beta/models/gemini-3-flash:generateContent").respond_with_json(
        GEMINI
    )
    sdk = client(httpserver)  # kept: the client closes its connection when collected
    response = sdk.models.generate_content(model="gemini-3-flash", contents="hi")
    assert type(response).__name__ == "GenerateContentResponse"
    assert gemini_usage(response) == BILLED
    assert gemini_usage(response.model_dump()) == BILLED  # snake_case keys
    assert gemini_usage(GEMINI) == BILLED  # the API's JSON, camelCase keys
    assert read_usage(response) == read_usage(response.model_dump()) == read_usage(GEMINI)


def test_sdk_stream_last_chunk(httpserver: HTTPServer) -> None:
    first = {**GEMINI, "usageMetadata": None}
    del first["usageMetadata"]
    events = "".join(f"data: {json.dumps(body)}\r\n\r\n" for body in (first, GEMINI))
    httpserver.expect_request(
        "/v1beta/models/gemini-3-flash:streamGenerateContent"
    ).respond_with_data(events, content_type="text/event-stream")
    sdk = client(httpserver)
    chunks = list(sdk.models.generate_content_stream(model="gemini-3-flash", contents="hi"))
    assert len(chunks) == 2
    assert gemini_usage(chunks[0]) is None
    with pytest.raises(ValueError, match=r"^response: this Gemini response carries no usage"):
        read_usage(chunks[0])
    assert read_usage(chunks[-1]) == BILLED


def test_adk_llm_response() -> None:
    response = genai.types.GenerateContentResponse.model_validate(GEMINI)
    assert read_usage(LlmResponse.create(response)) == BILLED


def test_without_cache_or_thoughts() -> None:
    usage = {"promptTokenCount": 40, "candidatesTokenCount": 2, "totalTokenCount": 42}
    assert read_usage({"usageMetadata": usage}) == Usage(input=40, output=2)
    assert read_usage({"usageMetadata": {"promptTokenCount": 40}}) == Usage(input=40)


def broken(member: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(GEMINI)
    body["usageMetadata"][member] = value
    return body


@pytest.mark.parametrize(
    ("member", "name"),
    [
        ("promptTokenCount", "prompt_token_count"),
        ("cachedContentTokenCount", "cached_content_token_count"),
        ("candidatesTokenCount", "candidates_token_count"),
        ("thoughtsTokenCount", "thoughts_token_count"),
    ],
)
@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), ("10", TypeError)])
def test_malformed_counts_name_the_member(
    member: str, name: str, value: Any, error: type[Exception]
) -> None:
    shown = repr(value) if error is TypeError else str(value)
    with pytest.raises(
        error,
        match=rf"^response\.usage_metadata\.{name}: expected a token count \(int >= 0\), "
        rf"got {shown}$",
    ):
        read_usage(broken(member, value))


def test_missing_prompt_count_and_inconsistent_cache() -> None:
    with pytest.raises(
        ValueError, match=r"^response\.usage_metadata\.prompt_token_count: missing; expected"
    ):
        gemini_usage(broken("promptTokenCount", None))
    with pytest.raises(
        ValueError,
        match=r"^response\.usage_metadata: the cached tokens \(1300 read, 0 written\) exceed "
        r"the prompt's 1200 tokens",
    ):
        gemini_usage(broken("cachedContentTokenCount", 1300))
    with pytest.raises(
        TypeError, match=r"^response\.usage_metadata: expected an object or a dict, got list"
    ):
        gemini_usage({"usageMetadata": [1200]})
