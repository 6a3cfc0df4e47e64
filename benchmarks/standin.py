"""A cheap deterministic stand-in for the embedding model, for building large indexes fast.

It answers to the default model id and dimension, counts tokens with the real tokenizer (so
chunking is exactly what the real model would get), and returns a hash-seeded unit vector
per text instead of running the network.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
    from kbmcp_core.models import Vector


class HashEmbedder:
    """Embedder port: the real tokenizer, fake vectors (meaningless for quality)."""

    def __init__(self, real: FastEmbedEmbedder) -> None:
        self._real = real

    @property
    def model_id(self) -> str:
        return self._real.model_id

    @property
    def dimension(self) -> int:
        return self._real.dimension

    @property
    def max_tokens(self) -> int:
        return self._real.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._real.count_tokens(texts)

    def __getattr__(self, name: str) -> Any:
        """Any other part of the port (e.g. ``coverage``) is the real embedder's."""
        return getattr(self._real, name)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> Vector:
        return self._vector(text)

    def _vector(self, text: str) -> Vector:
        import numpy as np

        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest())
        v = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
        v /= np.linalg.norm(v)
        return [float(x) for x in v]
