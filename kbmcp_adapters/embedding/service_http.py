"""One ``POST /embeddings`` to an OpenAI-compatible service, with the standard library.

Retries what may pass (429 and 5xx, honouring ``Retry-After``; a refused connection or a
timeout) with exponential backoff, then raises ``EmbeddingUnreachable``; hands a refusal of
the texts themselves (400, 413, 422) back as ``Refused`` for the caller to split the batch;
anything else is ``EmbeddingUnavailable``: a redirect (never followed, so the key stays with
the configured origin), an answer over its byte cap (``answer_cap``: batch size x dimension)
or nested deeper than ``MAX_DEPTH``. ``timeout_s`` bounds each try as a whole
(``service_wire``). The API key is read from its environment variable for each request and
appears in no message, log line or exception (decision 0037).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit

from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_adapters.embedding.service_wire import ERROR_BYTES, AnswerTooLarge, exchange
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
#: An answer's byte cap (``answer_cap``): per number (JSON's longest float, a separator,
#: indentation), per vector (its object and keys), per answer (model name, usage, ...).
BYTES_PER_NUMBER = 48
BYTES_PER_VECTOR = 4096
BYTES_PER_ANSWER = 64 * 1024
#: The deepest nesting an answer may have (an OpenAI answer has 4).
MAX_DEPTH = 32
#: A JSON string (skipped whole) or one bracket.
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*+"|[\[\]{}]')

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


def answer_cap(count: int, dimension: int) -> int:
    """The most bytes an answer of ``count`` vectors of ``dimension`` numbers may take."""
    return BYTES_PER_ANSWER + count * (BYTES_PER_VECTOR + dimension * BYTES_PER_NUMBER)


def post_embeddings(config: ServiceConfig, model: str, texts: Sequence[str], *,
                    retries: int, sleep: Sleep = time.sleep,
                    timeout: float | None = None) -> list[list[float]]:
    """One vector per text, in order, each of ``config.dimension`` numbers; ``timeout``:
    the longest one request may take, all of it (default ``config.timeout_s``)."""
    wait_s = config.timeout_s if timeout is None else timeout
    key = api_key(config)
    body = json.dumps({"model": model, "input": list(texts)}).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "kb-mcp", "Connection": "close"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    where = config.endpoint
    cap = answer_cap(len(texts), config.dimension)
    for attempt in range(retries + 1):
        try:
            answer = exchange(where, body, headers, deadline=time.monotonic() + wait_s,
                              cap=cap)
        except AnswerTooLarge:
            raise EmbeddingUnavailable(
                f"the embedding service at {where} sent more than {cap:,} bytes for "
                f"{len(texts)} vector{'' if len(texts) == 1 else 's'} of {config.dimension} "
                f"numbers; the answer was "
                "refused: check the model and [embedding].dimension") from None
        except TimeoutError:
            why, wait = f"no answer within {wait_s:g} s", None
        except http.client.IncompleteRead:
            why, wait = "the connection closed in the middle of the answer", None
        except (http.client.HTTPException, OSError) as exc:
            why, wait = _scrubbed(str(exc) or type(exc).__name__, key), None
        else:
            status = answer.status
            if 200 <= status < 300:
                return _vectors(answer.body, len(texts), config, where)
            if 300 <= status < 400:
                raise EmbeddingUnavailable(
                    f"the embedding service at {where} answered HTTP {status}, a redirect "
                    f"to {_scrubbed(_origin(answer.headers.get('Location')), key)}; "
                    "redirects are not followed (the key would go with them): set "
                    "[embedding].base_url to the address that answers")
            reason = _scrubbed(_error_text(answer.body), key)
            if status in REFUSED:
                raise Refused(status, reason)
            if status != 429 and status < 500:
                hint = (f"; check the key in ${config.api_key_env}"
                        if status in (401, 403) and config.api_key_env else "")
                raise EmbeddingUnavailable(
                    f"the embedding service at {where} answered HTTP {status} for model "
                    f"{model!r}: {reason}{hint}")
            why = f"HTTP {status}: {reason}" if reason else f"HTTP {status}"
            wait = _retry_after(answer.headers.get("Retry-After"))
        if attempt == retries:
            tries = f" after {retries + 1} tries" if retries else ""
            raise EmbeddingUnreachable(f"{where}: {why}{tries}")
        delay = min(wait if wait is not None else BACKOFF_S * 2 ** attempt, MAX_WAIT_S)
        log.warning("embedding service %s: %s; trying again in %.1f s", where, why, delay)
        sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _origin(location: str | None) -> str:
    """Where a redirect points, as ``scheme://host[:port]`` (never its path or query)."""
    if not location:
        return "no Location"
    try:
        parts = urlsplit(location.strip())
        port = parts.port
    except ValueError:
        return "an address that is not a URL"
    if not parts.hostname:
        return "another path on the same host"
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    origin = f"{parts.scheme or 'http'}://{host}" + (f":{port}" if port is not None else "")
    return origin[:_QUOTE]


def _vectors(payload: bytes, count: int, config: ServiceConfig,
             where: str) -> list[list[float]]:
    """The ``data`` of an answer, by ``index``, checked: count, dimension, finite numbers."""
    if _depth(payload) > MAX_DEPTH:
        raise EmbeddingUnavailable(
            f"the embedding service at {where} gave an answer nested deeper than "
            f"{MAX_DEPTH} levels; it is not an OpenAI embeddings response")
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


def _error_text(body: bytes) -> str:
    """What the service said: the ``error.message`` of a JSON body, else its first line."""
    raw = body[:ERROR_BYTES].decode("utf-8", "replace")
    if _depth(body[:ERROR_BYTES]) <= MAX_DEPTH:
        try:
            parsed = json.loads(raw)
            error = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
            text = error.get("message", error) if isinstance(error, dict) else error
            raw = str(text)
        except ValueError:
            pass
    lines = raw.strip().splitlines()
    return lines[0][:_QUOTE] if lines else ""


def _depth(payload: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped), counted
    without parsing it, so a hostile nesting never reaches the recursive parser."""
    depth = deepest = 0
    for token in _BRACKETS.finditer(payload):
        mark = token.group()
        if mark in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif mark in (b"]", b"}"):
            depth -= 1
    return deepest


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


__all__ = ["BACKOFF_S", "MAX_DEPTH", "MAX_WAIT_S", "REFUSED", "Refused", "answer_cap", "api_key",
           "post_embeddings"]
