"""A cheap deterministic stand-in for the embedding model, for building large indexes fast.

The vectors come from the model-free embedder the tests use too
(``tests/hashing_embedder.py``); the model id, dimension, token window, token counts
and coverage are the real model's, so chunking is exactly what the real model would get and
the index it builds is one the real model can search (meaningless for quality).
"""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_core.ports import Embedder
from tests.hashing_embedder import HashingEmbedder


class HashEmbedder(HashingEmbedder):
    """Embedder port: the real tokenizer, hashed vectors of the real dimension."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(model_id=real.model_id, dimension=real.dimension,
                         max_tokens=real.max_tokens)
        self._real = real

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._real.count_tokens(texts)

    def coverage(self, text: str) -> float:
        return self._real.coverage(text)
