"""One ``POST /embeddings`` to an OpenAI-compatible service, with the standard library.

Retries what may pass (429 and 5xx, honouring ``Retry-After``; a refused connection or a
timeout) with exponential backoff, then raises ``EmbeddingUnreachable``; hands a refusal of
the texts themselves (400, 413, 422) back as ``Refused`` for the caller to split the batch;
anything else is ``EmbeddingUnavailable``. The API key is read from its environment variable
for each request and appears in no message, log line or exception (decision 0037).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_core.errors import EmbeddingUnavailable, EmbeddingUnreachable

log = logging.getLogger(__name__)

#: Status codes that say "these texts": the batch is split, a lone text skipped.
REFUSED = frozenset({400, 413, 422})
#: The first wait between two tries when the service gives no Retry-After; doubled each time.
BACKOFF_S = 0.5
#: The longest wait between two tries, Retry-After included.
MAX_WAIT_S = 60.0
#: The most of a service's error text a message quotes.
_QUOTE = 200

Sleep = Callable[[float], None]


class Refused(Exception):
    """The service refused the texts of this request (400, 413, 422)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status}: {reason}")
        self.status = status
        self.reason = reason


def api_key(config: ServiceConfig) -> str | None:
    """The key from the environment variable ``api_key_env`` names (read per request)."""
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env, "")
    if not key:
        raise EmbeddingUnavailable(
            f"[embedding].api_key_env names the environment variable {config.api_key_env}, "
            "which is not set: set it in the environment kb-mcp runs in")
    return key


def post_embeddings(config: ServiceConfig, model: str, texts: Sequence[str], *,
                    retries: int, sleep: Sleep = time.sleep,
                    timeout: float | None = None) -> list[list[float]]:
    """One vector per text, in order, each of ``config.dimension`` numbers; ``timeout``:
    the longest wait for an answer (default ``config.timeout_s``)."""
    wait_s = config.timeout_s if timeout is None else timeout
    key = api_key(config)
    body = json.dumps({"model": model, "input": list(texts)}).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "kb-mcp"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    where = config.endpoint
    for attempt in range(retries + 1):
        request = urllib.request.Request(where, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=wait_s) as response:
                payload = response.read()
            return _vectors(payload, len(texts), config, where)
        except urllib.error.HTTPError as exc:
            status = exc.code
            reason = _scrubbed(_error_text(exc), key)
            exc.close()
            if status in REFUSED:
                raise Refused(status, reason) from None
            if status != 429 and status < 500:
                hint = (f"; check the key in ${config.api_key_env}"
                        if status in (401, 403) and config.api_key_env else "")
                raise EmbeddingUnavailable(
                    f"the embedding service at {where} answered HTTP {status} for model "
                    f"{model!r}: {reason}{hint}") from None
            why = f"HTTP {status}: {reason}" if reason else f"HTTP {status}"
            wait = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            inner = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(inner, TimeoutError):
                why = f"no answer within {wait_s:g} s"
            else:
                why = _scrubbed(str(inner) or type(inner).__name__, key)
            wait = None
        if attempt == retries:
            tries = f" after {retries + 1} tries" if retries else ""
            raise EmbeddingUnreachable(f"{where}: {why}{tries}")
        delay = min(wait if wait is not None else BACKOFF_S * 2 ** attempt, MAX_WAIT_S)
        log.warning("embedding service %s: %s; trying again in %.1f s", where, why, delay)
        sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _vectors(payload: bytes, count: int, config: ServiceConfig,
             where: str) -> list[list[float]]:
    """The ``data`` of an answer, by ``index``, checked: count, dimension, finite numbers."""
    try:
        data = json.loads(payload)["data"]
        rows = sorted(data, key=lambda item: int(item.get("index", 0)))
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbeddingUnavailable(
            f"the embedding service at {where} gave an answer that is not an OpenAI "
            f"embeddings response ({type(exc).__name__})") from None
    if len(vectors) != count:
        raise EmbeddingUnavailable(f"the embedding service at {where} returned {len(vectors)} "
                                   f"vectors for {count} texts")
    for vector in vectors:
        if len(vector) != config.dimension:
            raise EmbeddingUnavailable(
                f"the embedding service at {where} returned vectors of {len(vector)} "
                f"dimensions but [embedding].dimension is {config.dimension}: set it to "
                f"{len(vector)} (and run `kb-mcp index --force`), or check the model")
        if not all(math.isfinite(x) for x in vector):
            raise EmbeddingUnavailable(f"the embedding service at {where} returned a vector "
                                       "that is not finite numbers")
    return vectors


def _error_text(exc: urllib.error.HTTPError) -> str:
    """What the service said: the ``error.message`` of a JSON body, else its first line."""
    try:
        raw = exc.read(4096).decode("utf-8", "replace")
    except Exception:  # the body could not be read: the status alone says enough
        return ""
    try:
        parsed = json.loads(raw)
        error = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
        text = error.get("message", error) if isinstance(error, dict) else error
        raw = str(text)
    except ValueError:
        pass
    lines = raw.strip().splitlines()
    return lines[0][:_QUOTE] if lines else ""


def _scrubbed(text: str, key: str | None) -> str:
    return text.replace(key, "[key]") if key else text


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


__all__ = ["BACKOFF_S", "MAX_WAIT_S", "REFUSED", "Refused", "api_key", "post_embeddings"]
