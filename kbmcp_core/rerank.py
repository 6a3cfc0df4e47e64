"""Reranking: a second opinion on the best fused candidates from a ``Reranker`` port.

A cross-encoder reads the query and a passage together and scores the pair; that is
more accurate than comparing two separately embedded texts, and far slower, so it only
reorders the top ``RERANK_CANDIDATES`` of the fused ranking. The rest keep their order
after them. kb-mcp ships no reranker model (decision 0016): this is the seam one plugs
into, with the time it took measured so its cost is visible.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbmcp_core.models import StoredChunk, embed_text_of
from kbmcp_core.ports import Reranker

#: How many of the best fused candidates the reranker reads.
RERANK_CANDIDATES = 20


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    ranked: list[tuple[int, float]]
    scores: dict[int, float]
    model_id: str
    candidates: int
    ms: float

    def as_dict(self) -> dict[str, object]:
        return {"model": self.model_id, "candidates": self.candidates, "ms": round(self.ms, 1)}


def rerank(
    query: str,
    ranked: Sequence[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    reranker: Reranker,
    candidates: int = RERANK_CANDIDATES,
) -> RerankOutcome:
    """``ranked`` with its first ``candidates`` existing chunks reordered by the
    reranker's score (ties keep the fused order); scores are returned per chunk id."""
    known = [(cid, s) for cid, s in ranked if cid in chunks]
    head, tail = known[:candidates], known[candidates:]
    started = time.perf_counter()
    passages = [embed_text_of(chunks[cid].heading_path, chunks[cid].content) for cid, _ in head]
    scores = reranker.score(query, passages) if head else []
    ms = (time.perf_counter() - started) * 1000.0
    if len(scores) != len(head):
        raise ValueError(f"the reranker returned {len(scores)} scores for {len(head)} passages")
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    return RerankOutcome(
        ranked=[head[i] for i in order] + tail,
        scores={head[i][0]: float(scores[i]) for i in range(len(head))},
        model_id=reranker.model_id,
        candidates=len(head),
        ms=ms,
    )
