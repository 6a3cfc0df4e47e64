"""Why a hit ranked where it did: the numbers behind its score (``explain: true``, 0035).

Per hit: its rank and score in each leg, the weights fusion gave the legs and the share
each leg added, which sum to the hit's fused score exactly (``lexical_part + vector_part``:
its ``score``, or its ``fused_score`` when it shows one: reranked, or dealt into another
place of its document, ``inside_documents``); with reranking, the reranker's probability,
its logit and its say (trust) over the order, and where the fused ranking had put the hit.
Per response: how many documents and chunks each filter (and the query's ``-term``
exclusions) removed from what the legs search.

Nothing here runs unless a request asks for it: a search without ``explain`` does no
extra work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kbmcp_core.fusion import LegWeights
from kbmcp_core.models import DocumentFilter
from kbmcp_core.rerank import RerankOutcome, log_odds
from kbmcp_core.search_request import Mode

if TYPE_CHECKING:
    from kbmcp_core.ports import IndexReader

#: The filter entry that stands for the query's exclusions (``-term``).
EXCLUDED = "excluded"


@dataclass(frozen=True, slots=True)
class RerankExplain:
    probability: float
    logit: float
    trust: float
    #: the hit's place in the fused ranking the reranker reordered (from 1)
    fused_rank: int

    def as_dict(self) -> dict[str, object]:
        return {"probability": self.probability, "logit": self.logit, "trust": self.trust,
                "fused_rank": self.fused_rank}


@dataclass(frozen=True, slots=True)
class HitExplain:
    """One hit's fused score, taken apart: ``lexical_part + vector_part``."""

    #: ``weighted`` or ``rrf`` (both legs), ``lexical`` or ``vector`` (one leg alone)
    method: str
    lexical_rank: int | None
    lexical_score: float | None
    vector_rank: int | None
    vector_similarity: float | None
    lexical_weight: float
    vector_weight: float
    lexical_part: float
    vector_part: float
    rerank: RerankExplain | None = None

    def as_dict(self) -> dict[str, object]:
        """A leg that did not return the hit is left out (as every unknown field is)."""
        out: dict[str, object] = {}
        if self.lexical_rank is not None:
            out["lexical"] = {"rank": self.lexical_rank, "score": self.lexical_score}
        if self.vector_rank is not None:
            out["vector"] = {"rank": self.vector_rank, "similarity": self.vector_similarity}
        out["fusion"] = {"method": self.method, "lexical_weight": self.lexical_weight,
                         "vector_weight": self.vector_weight, "lexical_part": self.lexical_part,
                         "vector_part": self.vector_part}
        if self.rerank is not None:
            out["rerank"] = self.rerank.as_dict()
        return out


def _positions(leg: Sequence[tuple[int, float]]) -> dict[int, tuple[int, float]]:
    return {cid: (rank, score) for rank, (cid, score) in enumerate(leg, 1)}


def explain_hits(
    hit_ids: Sequence[int],
    *,
    mode: Mode,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    weights: LegWeights | None,
    fused: Sequence[tuple[int, float]],
    reranked: RerankOutcome | None,
) -> list[HitExplain]:
    """Each hit's explanation, from the legs, the weights and the fused order as the
    search used them (``weights`` None: one leg alone, whose score is the hit's)."""
    lex, vec = _positions(lexical), _positions(vector)
    fused_rank = {cid: rank for rank, (cid, _) in enumerate(fused, 1)}
    out: list[HitExplain] = []
    for cid in hit_ids:
        lr, ls = lex.get(cid, (None, None))
        vr, vs = vec.get(cid, (None, None))
        if weights is None:  # one leg alone: its score is the hit's, with weight 1
            lexical_alone = mode == "lexical"
            own = (ls if lexical_alone else vs) or 0.0
            explain = HitExplain(mode, lr, ls, vr, vs, float(lexical_alone),
                                 float(not lexical_alone), own if lexical_alone else 0.0,
                                 0.0 if lexical_alone else own)
        else:
            explain = HitExplain(
                weights.method, lr, ls, vr, vs, weights.lexical, weights.vector,
                0.0 if lr is None or ls is None else weights.lexical_part(ls, lr),
                0.0 if vr is None or vs is None else weights.vector_part(vs, vr))
        if reranked is not None and cid in reranked.scores:
            p = reranked.scores[cid]
            explain = replace(explain, rerank=RerankExplain(
                p, log_odds(p), reranked.trust, fused_rank.get(cid, 0)))
        out.append(explain)
    return out


@dataclass(frozen=True, slots=True)
class FilterEffect:
    """What one filter (alone) removed from the whole index."""

    name: str
    removed_documents: int
    removed_chunks: int

    def as_dict(self) -> dict[str, object]:
        return {"filter": self.name, "removed_documents": self.removed_documents,
                "removed_chunks": self.removed_chunks}


@dataclass(frozen=True, slots=True)
class SearchExplain:
    """The response's part of ``explain``: the index, each filter's effect, what was left."""

    documents: int
    chunks: int
    filters: tuple[FilterEffect, ...]
    searched_documents: int
    searched_chunks: int

    def as_dict(self) -> dict[str, object]:
        return {"documents": self.documents, "chunks": self.chunks,
                "filters": [f.as_dict() for f in self.filters],
                "searched_documents": self.searched_documents,
                "searched_chunks": self.searched_chunks}


def filter_effects(
    store: IndexReader,
    spec: DocumentFilter,
    filter_names: Sequence[str],
    excluded_paths: set[str],
    allowed_paths: set[str] | None,
) -> SearchExplain:
    """How many documents and chunks each of the request's filters removes on its own
    (each checked alone against the whole index), the exclusions' too, and how many the
    legs searched once all of them applied."""
    every = set(store.document_paths())
    chunks = len(store.chunk_ids_for(every))

    def removed(kept: set[str]) -> tuple[int, int]:
        return len(every - kept), chunks - len(store.chunk_ids_for(kept & every))

    effects: list[FilterEffect] = []
    for name in filter_names:
        alone = DocumentFilter(**{name: getattr(spec, name)})
        effects.append(FilterEffect(name, *removed(store.matching_paths(alone))))
    if excluded_paths:
        effects.append(FilterEffect(EXCLUDED, *removed(every - excluded_paths)))
    searched = every if allowed_paths is None else allowed_paths & every
    return SearchExplain(len(every), chunks, tuple(effects), len(searched),
                         len(store.chunk_ids_for(searched)) if searched else 0)

