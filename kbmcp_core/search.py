"""The search use-case: resolved request, two legs, fusion, shaping, per-document limit, offer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from kbmcp_core.confidence import best_per_document, low_confidence
from kbmcp_core.context import Context
from kbmcp_core.errors import EmbeddingUnreachable, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.explain import HitExplain, SearchExplain, explain_hits, filter_effects
from kbmcp_core.fusion import Fusion, fuse, leg_weights
from kbmcp_core.meta_keys import META_IN_PROGRESS
from kbmcp_core.models import StoredChunk
from kbmcp_core.offer import OfferRules
from kbmcp_core.passages import PASSAGE_CANDIDATES, candidates_for, passage_similarities
from kbmcp_core.ports import Embedder, IndexReader, Reranker, VectorStore
from kbmcp_core.query_syntax import parse_query
from kbmcp_core.questions import fusion_for
from kbmcp_core.rerank import RerankOutcome
from kbmcp_core.search_request import (
    Mode,
    SearchDefaults,
    SearchRequest,
    document_filter,
    resolve,
)
from kbmcp_core.shaping import apply_rerank, contexts_for, diversify, spans_for
from kbmcp_core.spans import Span
from kbmcp_core.uris import doc_uri


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk_id: int
    path: str
    title: str
    heading: str
    heading_path: tuple[str, ...]
    content: str
    score: float
    start_line: int | None
    end_line: int | None
    page: int | None
    tags: tuple[str, ...]
    date: str | None
    uri: str | None
    #: [start, end) character offsets in ``content`` where the query matched
    matches: tuple[Span, ...] = ()
    context: Context | None = None
    rerank_score: float | None = None
    #: the numbers behind ``score`` (only when the request asked: ``explain``)
    explain: HitExplain | None = None
    #: the collection the hit is from (set by ``search_collections``; decision 0041)
    collection: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": self.path,
            "title": self.title,
            "heading": self.heading,
            "heading_path": list(self.heading_path),
            "content": self.content,
            "score": round(self.score, 6),
            "tags": list(self.tags),
            "date": self.date,
        }
        if self.page is not None:
            out["page"] = self.page
        if self.page is None or self.start_line is not None:  # a slide hit carries both
            out["start_line"] = self.start_line
            out["end_line"] = self.end_line
        if self.uri is not None:
            out["uri"] = self.uri
        out["matches"] = [list(m) for m in self.matches]
        if self.context is not None:
            out["context"] = self.context.as_dict()
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        if self.explain is not None:
            out["explain"] = self.explain.as_dict()
        if self.collection is not None:
            out["collection"] = self.collection
        return out


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: tuple[SearchHit, ...]
    low_confidence: bool
    filter_applied: dict[str, object] = field(default_factory=dict)
    mode: Mode = "hybrid"
    notice: str | None = None
    rerank: RerankOutcome | None = None
    #: the query's phrases and exclusions as applied (only when it used them)
    query_applied: dict[str, list[str]] | None = None
    #: what each filter removed (only when the request asked: ``explain``)
    explain: SearchExplain | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "results": [h.as_dict() for h in self.results],
            "low_confidence": self.low_confidence,
            "filter_applied": self.filter_applied,
        }
        if self.query_applied is not None:
            out["query_applied"] = self.query_applied
        if self.explain is not None:
            out["explain"] = self.explain.as_dict()
        if self.rerank is not None:
            out["rerank"] = self.rerank.as_dict()
        if self.notice:
            out["notice"] = self.notice
        return out


class Searcher:
    """Hybrid retrieval over the ports. Construct once; ``search`` is cheap to call."""

    def __init__(
        self,
        store: IndexReader,
        vectors: VectorStore,
        embedder: Embedder,
        rules: OfferRules,
        *,
        defaults: SearchDefaults | None = None,
        reranker: Reranker | None = None,
        fusion: Fusion | None = None,
        passages: int | None = PASSAGE_CANDIDATES,
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.rules = rules
        #: what a request leaves out, and the largest limit (``resolve``)
        self.defaults = defaults or SearchDefaults()
        self.reranker = reranker
        self.fusion = fusion or Fusion()
        #: candidates re-scored by their nearest paragraph (``passages``; 0 = off, None =
        #: as many as ``passages.candidates_for`` gives this embedder)
        self.passages = passages

    def search(self, request: SearchRequest) -> SearchResponse:
        req = resolve(request, self.defaults)
        parsed = parse_query(req.query)  # "a phrase", -term (0035); plain text unchanged
        query = parsed.text
        limit, per_doc = cast(int, req.limit), cast(int, req.chunks_per_document)
        filters = req.filters()
        allowed_paths: set[str] | None = None
        allowed_ids: list[int] | None = None
        if filters:
            allowed_paths = self.store.matching_paths(document_filter(req))
        excluded = self.store.paths_containing(parsed.excluded) if parsed.excluded else set()
        if excluded:  # both legs search only the documents without an excluded term
            allowed_paths = (set(self.store.document_paths()) if allowed_paths is None
                             else allowed_paths) - excluded
        applied = parsed.applied() if parsed.has_syntax else None
        explained = (filter_effects(self.store, req, list(filters), excluded, allowed_paths)
                     if req.explain else None)
        if allowed_paths is not None:
            if not allowed_paths:
                return SearchResponse((), True, filters, req.mode, query_applied=applied,
                                      explain=explained)
            allowed_ids = self.store.chunk_ids_for(allowed_paths)
        pool = max(50, limit * per_doc * 5)
        lexical: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        unreadable: VectorsUnreadable | EmbeddingUnreachable | None = None
        qv: list[float] | None = None
        if req.mode in ("hybrid", "lexical"):
            lexical = self.store.lexical_search(query, pool, allowed_paths)
        if req.mode in ("hybrid", "vector"):
            try:
                qv = self.embedder.embed_query(query)
                vector = self.vectors.search(qv, pool, allowed_ids)
            except VectorsUnreadable as exc:  # damaged vector files: keywords still answer
                unreadable = exc
            except EmbeddingUnreachable as exc:  # the embedding service is down (0037)
                unreadable = exc
        readable = self.embedder.coverage(query) if req.mode != "lexical" else 0.0
        fusion = fusion_for(query, self.fusion)  # a question leans on the vector leg (0028)
        if req.mode == "hybrid":
            fused = fuse(vector, lexical, coverage=readable, fusion=fusion)
        else:
            fused = list(vector or lexical)
        chunks = self.store.get_chunks([cid for cid, _ in fused])
        legs = vector  # as fused: its best candidates re-scored by paragraph (passages)
        candidates = candidates_for(self.passages, self.embedder)
        if (req.mode == "hybrid" and qv is not None and unreadable is None and candidates
                and readable > 0):
            try:
                legs = passage_similarities(qv, fused, vector, chunks, self.embedder,
                                            candidates, separately=self.passages is not None)
                fused = fuse(legs, lexical, coverage=readable, fusion=fusion)
            except EmbeddingUnreachable:  # the service went away: the chunks' scores stand
                legs = vector
        options = req.shape(self.defaults)
        ranked = fused_order = [(cid, s) for cid, s in fused if cid in chunks]
        ranked, reranked = apply_rerank(query, ranked, chunks, options, self.reranker)
        ranked = diversify(ranked, chunks, options, limit=limit,
                           vectors=None if req.mode == "lexical" or unreadable else self.vectors)
        picked = _per_document(ranked, chunks, per_doc, limit)
        offered = self.rules.offered({chunks[cid].document_path for cid, _ in picked})
        spans = spans_for(query, [chunks[cid].content for cid, _ in picked])
        contexts = contexts_for(self.store, [cid for cid, _ in picked], options)
        scores = reranked.scores if reranked else {}
        explains: list[HitExplain | None] = [None] * len(picked)
        if req.explain:
            explains[:] = explain_hits(
                [cid for cid, _ in picked], mode=req.mode, lexical=lexical, vector=legs,
                weights=(leg_weights(legs, lexical, readable, fusion)
                         if req.mode == "hybrid" else None),
                fused=fused_order, reranked=reranked)
        hits = tuple(replace(_hit(chunks[cid], score, offered), matches=m, context=ctx,
                             rerank_score=scores.get(cid), explain=why)
                     for (cid, score), m, ctx, why in zip(picked, spans, contexts, explains,
                                                          strict=True))
        notice = (_unreadable_notice(unreadable, req.mode) if unreadable is not None
                  else self._indexing_notice(req.mode))
        low = low_confidence(
            hits=len(hits),
            similarities=(best_per_document(vector, chunks)
                          if req.mode != "lexical" and unreadable is None else None),
            best_lexical=(max((rel for _, rel in lexical), default=0.0)
                          if req.mode != "vector" else None),
            readable=readable)
        return SearchResponse(hits, low, filters, req.mode, notice, reranked, applied, explained)

    def _indexing_notice(self, mode: Mode) -> str | None:
        """While an index run is writing, some chunks may have text but no vector yet."""
        if mode == "lexical" or not self.store.get_meta(META_IN_PROGRESS):
            return None
        try:
            pending = self.store.stats().chunks - self.vectors.count()
        except VectorsUnreadable as exc:
            return _unreadable_notice(exc, mode)
        if pending <= 0:
            return None
        return (f"indexing in progress: {pending} chunks are searchable by keywords only "
                "until their embeddings are stored")


def _unreadable_notice(exc: VectorsUnreadable | EmbeddingUnreachable, mode: Mode) -> str:
    found = "no results" if mode == "vector" else "results from keyword search only"
    if isinstance(exc, EmbeddingUnreachable):
        return f"semantic search is unavailable (embedding service: {exc.detail}); {found}"
    if isinstance(exc, VectorsUnreachable):
        return f"semantic search is unavailable: {exc.detail}; {found}"
    return (f"semantic search is unavailable: {exc.detail}; {found}. Run `kb-mcp index` "
            "to rebuild the vectors")


def _per_document(
    ranked: Sequence[tuple[int, float]],
    chunks: dict[int, StoredChunk],
    per_doc: int,
    limit: int,
) -> list[tuple[int, float]]:
    counts: dict[str, int] = {}
    out: list[tuple[int, float]] = []
    for cid, score in ranked:
        chunk = chunks.get(cid)
        if chunk is None:  # a vector whose chunk is gone is never returned
            continue
        if counts.get(chunk.document_path, 0) >= per_doc:
            continue
        counts[chunk.document_path] = counts.get(chunk.document_path, 0) + 1
        out.append((cid, score))
        if len(out) >= limit:
            break
    return out


def _hit(c: StoredChunk, score: float, offered: set[str]) -> SearchHit:
    return SearchHit(
        chunk_id=c.id, path=c.document_path, title=c.title, heading=c.heading,
        heading_path=c.heading_path, content=c.content, score=score,
        start_line=c.start_line, end_line=c.end_line, page=c.page, tags=c.tags, date=c.date,
        uri=doc_uri(c.document_path) if c.document_path in offered else None,
    )
