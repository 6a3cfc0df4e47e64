"""The Embedder port on an OpenAI-compatible embedding service the user runs (decision 0037).

Texts go out in batches of ``batch_size``, each with its prefix and cut to
``max_input_chars``; vectors come back checked (count, dimension) and scaled to unit length.
A batch the service refuses (400, 413, 422) is split in halves until the one text it refuses
is alone: that text gets no vector (``EmbeddingRejected`` carries the others). Chunks are
measured with the default model's tokenizer (the service's is not known here), so an index
is cut as the in-process default cuts it. Nothing is sent before the first embedding call.

A search waits for its query's vector at most ``QUERY_TIMEOUT_S`` in all, and at most
``MAX_WAITING_QUERIES`` searches of the process wait at once (``QUERY_GATE``, shared by every
service embedder): the others answer from keywords at once, so a slow service never holds
every worker thread of the server and reads and listings keep answering.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence

from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_adapters.embedding.service_http import Refused, Sleep, post_embeddings
from kbmcp_core.cjk import readable_share
from kbmcp_core.errors import EmbeddingRejected, EmbeddingUnreachable
from kbmcp_core.models import Vector
from kbmcp_core.ports import Embedder

log = logging.getLogger(__name__)

#: The longest a search waits for the service to embed its query.
QUERY_TIMEOUT_S = 10.0
#: The most searches of one process waiting for the service at once (the server's worker
#: threads are 40: the rest stay free for reads, listings and other searches).
MAX_WAITING_QUERIES = 8
#: The slots of those waiting searches, one set per process.
QUERY_GATE = threading.BoundedSemaphore(MAX_WAITING_QUERIES)


class ServiceEmbedder:
    """Embeds through ``POST {base_url}/embeddings``; ``counter`` counts tokens for the
    chunker (the default model, whose tokenizer alone it loads)."""

    def __init__(self, config: ServiceConfig, counter: Embedder,
                 sleep: Sleep = time.sleep, gate: threading.Semaphore = QUERY_GATE) -> None:
        self._config = config
        self._counter = counter
        self._sleep = sleep
        self._gate = gate

    @property
    def config(self) -> ServiceConfig:
        return self._config

    # -- identity: answered without a request ---------------------------------------------
    @property
    def model_id(self) -> str:
        return self._config.identity

    @property
    def dimension(self) -> int:
        return self._config.dimension

    @property
    def max_tokens(self) -> int:
        return self._config.window

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counter.count_tokens(texts)

    def coverage(self, text: str) -> float:
        """The service's model is not known here: unless ``[embedding].multilingual``
        says it reads them, Chinese, Japanese and Korean count as unread, as for the
        default model (search then leans on keywords for such queries)."""
        return 1.0 if self._config.multilingual else readable_share(text)

    # -- the port ---------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        c = self._config
        prepared = [_cut(c.document_prefix + t, c.max_input_chars) for t in texts]
        vectors: list[list[float] | None] = [None] * len(prepared)
        reasons: dict[int, str] = {}
        for start in range(0, len(prepared), c.batch_size):
            self._embed(prepared, list(range(start, min(start + c.batch_size, len(prepared)))),
                        vectors, reasons)
        if reasons:
            raise EmbeddingRejected(vectors, reasons)
        return [v for v in vectors if v is not None]

    def embed_query(self, text: str) -> Vector:
        """One try of at most ``QUERY_TIMEOUT_S`` in all, if a waiting slot is free: a
        search must not wait on a service that is down or slow (it answers from keywords
        instead, ``EmbeddingUnreachable``)."""
        c = self._config
        if not self._gate.acquire(blocking=False):
            raise EmbeddingUnreachable(f"{MAX_WAITING_QUERIES} searches are already waiting "
                                       "for it")
        try:
            rows = post_embeddings(c, c.query_model, [_cut(c.query_prefix + text,
                                                           c.max_input_chars)],
                                   retries=0, sleep=self._sleep,
                                   timeout=min(c.timeout_s, QUERY_TIMEOUT_S))
        except Refused as exc:
            raise EmbeddingUnreachable(f"{c.endpoint} refused the query: {exc}") from None
        finally:
            self._gate.release()
        return _unit(rows[0])

    def _embed(self, prepared: list[str], indexes: list[int],
               vectors: list[list[float] | None], reasons: dict[int, str]) -> None:
        c = self._config
        try:
            rows = post_embeddings(c, c.document_model, [prepared[i] for i in indexes],
                                   retries=c.retries, sleep=self._sleep)
        except Refused as exc:
            if len(indexes) == 1:
                reasons[indexes[0]] = str(exc)
                return
            log.info("embedding service refused a batch of %d texts (%s); splitting it",
                     len(indexes), exc)
            half = len(indexes) // 2
            self._embed(prepared, indexes[:half], vectors, reasons)
            self._embed(prepared, indexes[half:], vectors, reasons)
            return
        for i, row in zip(indexes, rows, strict=True):
            vectors[i] = _unit(row)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def _unit(row: list[float]) -> Vector:
    norm = math.sqrt(sum(x * x for x in row))
    return [x / norm for x in row] if norm > 1e-12 else list(row)


__all__ = ["MAX_WAITING_QUERIES", "QUERY_GATE", "QUERY_TIMEOUT_S", "ServiceEmbedder"]
