"""One bounded ``GET`` of a JSON document (an identity provider's metadata or keys) for the
driving adapters: ``embedding.service_wire.exchange`` with one deadline, a byte cap, no
redirect and no proxy (decisions 0037, 0054)."""

from __future__ import annotations

import json
import time
from typing import Any

from kbmcp_adapters.embedding.service_wire import exchange


class FetchFailed(Exception):
    """The document could not be fetched or read (one line: why)."""


def fetch_json(url: str, *, deadline_s: float, cap: int) -> dict[str, Any]:
    """``GET url`` as a JSON object: 200, at most ``cap`` bytes, within ``deadline_s``."""
    try:
        answer = exchange(url, None, {"Accept": "application/json"}, method="GET",
                          deadline=time.monotonic() + deadline_s, cap=cap)
    except Exception as exc:  # OSError, TimeoutError, AnswerTooLarge, HTTPException
        raise FetchFailed(f"cannot fetch {url}: {exc}") from None
    if answer.status != 200:
        raise FetchFailed(f"cannot fetch {url}: HTTP {answer.status}")
    try:
        data = json.loads(answer.body)
    except ValueError:
        raise FetchFailed(f"{url} did not answer JSON") from None
    if not isinstance(data, dict):
        raise FetchFailed(f"{url} did not answer a JSON object")
    return data


__all__ = ["FetchFailed", "fetch_json"]
