"""What search does after fusion: rerank, diversify, and dress each hit (spans, context).

The steps, in order, on the fused candidates:

1. **rerank** (optional): a ``Reranker`` reorders the best ``RERANK_CANDIDATES``;
2. **diversity** (MMR, ``λ < 1``): the first picks trade relevance for novelty;
3. then search applies the per-document cap and the limit as before;
4. each hit gets its match spans, and its context when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbmcp_core.context import CONTEXT_KINDS, Context, ContextKind, build_context, radius_for
from kbmcp_core.diversity import cosine_similarity, mmr, word_similarity
from kbmcp_core.errors import InvalidQuery, VectorsUnreadable
from kbmcp_core.models import StoredChunk
from kbmcp_core.ports import IndexReader, Reranker, VectorStore
from kbmcp_core.rerank import RERANK_CANDIDATES, RerankOutcome, rerank
from kbmcp_core.spans import Span, match_spans, query_terms

#: MMR λ when neither the call nor ``[search].diversity`` says: measured on the dev sets,
#: docs/decisions/0016-mmr-context-spans-rerank.md.
DEFAULT_DIVERSITY = 1.0
#: MMR looks at this many times ``limit`` candidates (the per-document cap needs spares).
MMR_POOL_FACTOR = 4
MAX_CONTEXT_CHUNKS = 5


@dataclass(frozen=True, slots=True)
class ShapeOptions:
    """The knobs of one search after validation: every one has a value."""

    diversity: float = DEFAULT_DIVERSITY
    context: ContextKind = "none"
    context_chunks: int = 1
    rerank: bool = False
    #: how many of the best fused candidates the reranker reads (``[search]``; 0016)
    rerank_candidates: int = RERANK_CANDIDATES


def check_options(diversity: object, context: object, context_chunks: object,
                  rerank: object) -> None:
    """Refuse values no search can use, naming the parameter and what it takes."""
    if diversity is not None and (isinstance(diversity, bool)
                                  or not isinstance(diversity, int | float)
                                  or not 0.0 <= float(diversity) <= 1.0):
        raise InvalidQuery("diversity must be a number from 0 to 1 (1 = no diversification), "
                           f"got {str(diversity)[:40]!r}")
    if context is not None and context not in CONTEXT_KINDS:
        raise InvalidQuery(f"context must be one of {', '.join(CONTEXT_KINDS)}, "
                           f"got {str(context)[:40]!r}")
    if context_chunks is not None and (isinstance(context_chunks, bool)
                                       or not isinstance(context_chunks, int)
                                       or not 1 <= context_chunks <= MAX_CONTEXT_CHUNKS):
        raise InvalidQuery(f"context_chunks must be an integer from 1 to {MAX_CONTEXT_CHUNKS}, "
                           f"got {str(context_chunks)[:40]!r}")
    if rerank is not None and not isinstance(rerank, bool):
        raise InvalidQuery("rerank must be true or false")


def reorder(
    query: str,
    fused: Sequence[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    options: ShapeOptions,
    *,
    limit: int,
    reranker: Reranker | None,
    vectors: VectorStore | None,
) -> tuple[list[tuple[int, float]], RerankOutcome | None]:
    """Steps 1 and 2: the candidates in their final order, and what reranking did."""
    ranked = [(cid, s) for cid, s in fused if cid in chunks]
    outcome: RerankOutcome | None = None
    if options.rerank:
        if reranker is None:
            raise InvalidQuery("rerank was asked for but this searcher was given no "
                               "reranker; search without rerank")
        outcome = rerank(query, ranked, chunks, reranker, options.rerank_candidates)
        ranked = outcome.ranked
    if options.diversity < 1.0 and len(ranked) > 1:
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
        ranked = mmr(pool, similarity, options.diversity, len(pool)) + ranked[len(pool):]
    return ranked, outcome


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
