"""A model-free Embedder: deterministic feature-hashed bag-of-words vectors.

Not a retrieval model, and not shipped in the wheel: it lives with the tests so that tests
(``tests/fakes.py``) and benchmarks (``benchmarks/standin.py``, run from the checkout) share
one stand-in that needs no model files, no numpy and no network, and gives the same vector
for the same words on every machine: each lower-cased word adds 1 to dimension
``md5(word) mod dimension``, and the sum is scaled to unit length.
Texts that share words get similar vectors, so simple search behaviour can be asserted.
Nothing in kb-mcp builds it unless a caller passes it in (``bootstrap(embedder=...)``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from kbmcp_core.models import Vector

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Embedder port; token counts are whitespace words plus the two special tokens a
    BERT-style model adds, and any non-ASCII text counts as unreadable (``coverage`` 0),
    like an English-only vocabulary."""

    def __init__(self, model_id: str = "hashing", dimension: int = 16,
                 max_tokens: int = 64) -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.max_tokens = max_tokens
        self._slots: dict[str, int] = {}

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) + 2 for t in texts]

    def coverage(self, text: str) -> float:
        return 1.0 if text.isascii() else 0.0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> Vector:
        return self.vector(text)

    def vector(self, text: str) -> Vector:
        v = [0.0] * self.dimension
        for word in _WORD.findall(text.lower()):
            slot = self._slots.get(word)
            if slot is None:
                slot = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension
                self._slots[word] = slot
            v[slot] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]


__all__ = ["HashingEmbedder"]
