"""What search does after fusion: rerank, diversify, and dress each hit (spans, context).

The steps, in order, on the fused candidates:

1. **rerank** (``apply_rerank``, optional): a ``Reranker`` reorders the best
   ``RERANK_CANDIDATES``;
2. **diversify** (MMR, ``λ < 1``): the first picks trade relevance for novelty;
3. then search applies the per-document cap and the limit as before;
4. each hit gets its match spans, and its context when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbmcp_core.context import Context, ContextKind, build_context, radius_for
from kbmcp_core.diversity import cosine_similarity, mmr, word_similarity
from kbmcp_core.errors import InvalidQuery, VectorsUnreadable
from kbmcp_core.models import StoredChunk
from kbmcp_core.ports import IndexReader, Reranker, VectorReader
from kbmcp_core.rerank import RerankOutcome, rerank
from kbmcp_core.settings_keys import default
from kbmcp_core.spans import Span, match_spans, query_terms

#: MMR λ when neither the call nor ``[search].diversity`` says: measured on the dev sets,
#: docs/decisions/0016-mmr-context-spans-rerank.md.
DEFAULT_DIVERSITY: float = default("search_diversity")
#: MMR looks at this many times ``limit`` candidates (the per-document cap needs spares).
MMR_POOL_FACTOR = 4


@dataclass(frozen=True, slots=True)
class ShapeOptions:
    """The knobs of one search once resolved (``search_request``): every one has a value."""

    diversity: float = DEFAULT_DIVERSITY
    context: ContextKind = default("search_context")
    context_chunks: int = default("search_context_chunks")
    rerank: bool = default("search_rerank")
    #: how many of the best fused candidates the reranker reads (``[search]``; 0016)
    rerank_candidates: int = default("search_rerank_candidates")


def apply_rerank(
    query: str,
    ranked: list[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    options: ShapeOptions,
    reranker: Reranker | None,
) -> tuple[list[tuple[int, float]], RerankOutcome | None]:
    """Step 1: the candidates reordered by the reranker when ``options.rerank`` asks for
    it (else as they are), and what reranking did."""
    if not options.rerank:
        return ranked, None
    if reranker is None:
        raise InvalidQuery("rerank was asked for but this searcher was given no "
                           "reranker; search without rerank")
    outcome = rerank(query, ranked, chunks, reranker, options.rerank_candidates)
    return outcome.ranked, outcome


def diversify(
    ranked: list[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    options: ShapeOptions,
    *,
    limit: int,
    vectors: VectorReader | None,
) -> list[tuple[int, float]]:
    """Step 2: MMR over the first candidates when ``options.diversity`` is below 1,
    comparing stored vectors (words when ``vectors`` is None or lacks some)."""
    if options.diversity >= 1.0 or len(ranked) <= 1:
        return ranked
    pool = ranked[: max(limit * MMR_POOL_FACTOR, 2)]
    similarity = None
    if vectors is not None:
        try:
            stored = vectors.get([cid for cid, _ in pool])
        except VectorsUnreadable:
            stored = {}
        if len(stored) == len(pool):
            similarity = cosine_similarity(stored)
    if similarity is None:
        similarity = word_similarity({cid: chunks[cid].content for cid, _ in pool})
    return mmr(pool, similarity, options.diversity, len(pool)) + ranked[len(pool):]


def spans_for(query: str, contents: Sequence[str]) -> list[tuple[Span, ...]]:
    """Step 4a: the match spans of each hit's content."""
    terms = query_terms(query)
    return [tuple(match_spans(text, terms)) for text in contents]


def contexts_for(store: IndexReader, hit_ids: Sequence[int],
                 options: ShapeOptions) -> list[Context | None]:
    """Step 4b: each hit's context (None everywhere when ``context`` is ``none``)."""
    if options.context == "none" or not hit_ids:
        return [None] * len(hit_ids)
    windows = store.chunk_windows(hit_ids, radius_for(options.context, options.context_chunks))
    return [build_context(cid, windows.get(cid, []), options.context, options.context_chunks)
            for cid in hit_ids]
