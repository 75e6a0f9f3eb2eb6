"""``tiktoken_counter`` offline: one clear error naming the cache, and a loaded encoding."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

from runcontext.tokenizers import tiktoken_counter

tiktoken = pytest.importorskip("tiktoken")
requests = pytest.importorskip("requests")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No network and an empty cache; no encoding loaded in this process yet."""

    def refuse(url: str, *args: Any, **kwargs: Any) -> Any:
        raise requests.exceptions.ConnectionError(
            f"HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', port=443): Max "
            f"retries exceeded with url: {url} (Caused by NameResolutionError(...))" * 3
        )

    monkeypatch.setattr(requests, "get", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return tmp_path


def test_an_encoding_that_cannot_be_downloaded_is_one_short_error(offline: Path) -> None:
    with pytest.raises(OSError) as caught:
        tiktoken_counter("o200k_base")
    message = str(caught.value)
    assert message.startswith("tiktoken_counter: cannot load the tiktoken encoding 'o200k_base'")
    assert "TIKTOKEN_CACHE_DIR" in message and str(offline) in message
    assert "ConnectionError: HTTPSConnectionPool" in message
    assert "tiktoken_counter(tiktoken.get_encoding('o200k_base'))" in message
    assert "\n" not in message and len(message) < 700
    # tiktoken's and requests' frames are not chained on: the traceback is this call's.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    shown = "".join(traceback.format_exception(caught.value))
    assert "During handling" not in shown and "direct cause" not in shown


def test_a_loaded_encoding_needs_no_download(offline: Path) -> None:
    ranks = {bytes([b]): b for b in range(256)}
    encoding = tiktoken.Encoding(
        name="bytes", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )
    count = tiktoken_counter(encoding)
    assert count("abc d") == 5
    assert count.__name__ == "tiktoken_counter[bytes]"
    assert list(offline.iterdir()) == []  # nothing fetched or cached
