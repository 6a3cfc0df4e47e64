"""The search use-case: one resolved request through named stages (allowed set, legs,
shaping, dressing); the mode chooses only the leg strategy (``search_legs``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from kbmcp_core.answer_lines import chunk_answer
from kbmcp_core.chunk_labels import label_filter
from kbmcp_core.confidence import CONFIDENCE_DEPTH, Evidence, evidence, is_low
from kbmcp_core.context import Context
from kbmcp_core.errors import EmbeddingUnreachable, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.explain import HitExplain, SearchExplain, explain_hits, filter_effects
from kbmcp_core.fusion import Fusion, leg_weights
from kbmcp_core.inside_documents import inside_documents
from kbmcp_core.meta_keys import META_IN_PROGRESS
from kbmcp_core.models import StoredChunk
from kbmcp_core.offer import OfferRules
from kbmcp_core.passages import PASSAGE_CANDIDATES
from kbmcp_core.ports import Embedder, IndexReader, Reranker, SideBySide, VectorReader
from kbmcp_core.questions import is_question
from kbmcp_core.releases import announced_release_first, named_release_first
from kbmcp_core.rerank import RerankOutcome
from kbmcp_core.search_legs import LEGS, Allowed, InTurn, LegFailure, Legs, Ranking
from kbmcp_core.search_request import (
    Mode,
    ResolvedSearch,
    SearchDefaults,
    SearchRequest,
    resolve,
)
from kbmcp_core.shaping import apply_rerank, contexts_for, diversify, spans_for
from kbmcp_core.spans import Span, query_terms
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
    #: the hit's own fused score when ``score`` is another: the reranker read the hit
    #: (``score`` is then the blend the results are ordered by; decision 0056), or the hit
    #: took another place of its document (``inside_documents``: the place's score)
    fused_score: float | None = None
    #: the lines inside ``start_line``..``end_line`` that answer the query (decision 0056)
    answer_lines: tuple[int, int] | None = None

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
        if self.answer_lines is not None:
            out["answer_lines"] = list(self.answer_lines)
        if self.uri is not None:
            out["uri"] = self.uri
        out["matches"] = [list(m) for m in self.matches]
        if self.context is not None:
            out["context"] = self.context.as_dict()
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        if self.fused_score is not None:
            out["fused_score"] = round(self.fused_score, 6)
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
    #: what ``low_confidence`` was decided from (not part of ``as_dict``)
    evidence: Evidence | None = None

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
        vectors: VectorReader,
        embedder: Embedder,
        rules: OfferRules,
        *,
        defaults: SearchDefaults | None = None,
        reranker: Reranker | None = None,
        fusion: Fusion | None = None,
        passages: int | None = PASSAGE_CANDIDATES,
        beside: SideBySide | None = None,
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
        #: how a hybrid search's two legs run: at once when the bootstrap gives a
        #: ``SideBySide`` on threads (decision 0058), else one after the other
        self.beside: SideBySide = beside or InTurn()

    def search(self, request: SearchRequest) -> SearchResponse:
        """The request resolved once, then the stages: allowed set, legs (the mode's
        strategy: fusion and re-scoring), shaping, dressing."""
        req = resolve(request, self.defaults)
        allowed, explained = self._allowed(req)
        if allowed.paths is not None and not allowed.paths:
            return SearchResponse((), True, dict(req.filters), req.mode,
                                  query_applied=req.applied, explain=explained)
        pool = max(CONFIDENCE_DEPTH, req.limit * req.chunks_per_document * 5)
        legs = LEGS[req.mode](self, req, allowed, pool)
        picked, reranked, fused_order = self._shape(req, legs)
        found = self._evidence(req, legs, allowed, pool, len(picked))
        return self._dress(req, legs, picked, reranked, fused_order, explained, found)

    def _evidence(self, req: ResolvedSearch, legs: Legs, allowed: Allowed, pool: int,
                  hits: int) -> Evidence:
        """What ``low_confidence`` is decided from: the legs' first ``CONFIDENCE_DEPTH``
        candidates, whatever the limit (a larger pool asks the keyword leg once more at
        that depth: its coverage re-ordering makes a deeper pool's best differ), and the
        index's counts of the query's terms when the keyword leg ran (the words no chunk
        holds)."""
        lexical = legs.lexical
        if lexical is not None and pool > CONFIDENCE_DEPTH:
            lexical = self.store.lexical_search(req.text, CONFIDENCE_DEPTH, allowed.paths)
        # only which words no chunk holds is asked: not how many chunks hold the others
        statistics = (self.store.keyword_statistics(req.text, presence=True)
                      if lexical is not None else None)
        return evidence(hits=hits, vector=legs.vector, chunks=legs.chunks, lexical=lexical,
                        readable=legs.readable, statistics=statistics)

    def _allowed(self, req: ResolvedSearch) -> tuple[Allowed, SearchExplain | None]:
        """Stage 1: the documents the filters keep, less those holding an excluded term
        (both legs then search only those), and what each filter removed (``explain``)."""
        paths = self.store.matching_paths(req.documents) if req.filters else None
        excluded = (self.store.paths_containing(req.parsed.excluded) if req.parsed.excluded
                    else set())
        if excluded:
            paths = (set(self.store.document_paths()) if paths is None else paths) - excluded
        explained = (filter_effects(self.store, req.documents, list(req.filters), excluded,
                                    paths) if req.explain else None)
        where = label_filter(req.documents) if paths and not excluded else None
        if where is not None:
            # the vector store filters by its chunks' labels: no list of ids (0058)
            return Allowed(paths, None, where), explained
        ids = self.store.chunk_ids_for(paths) if paths else None
        return Allowed(paths, ids), explained

    def _shape(self, req: ResolvedSearch, legs: Legs
               ) -> tuple[Ranking, RerankOutcome | None, Ranking]:
        """Stage 3: the notes of a release announced by the notes above them moved ahead
        (``announced_release_first``), those of a release the query names first,
        a question's sections inside each document ordered by meaning, rerank,
        diversify, then the per-document cap and the limit. The fused order is returned
        too (each chunk's own fused score: explain, ``fused_score``)."""
        chunks = legs.chunks
        fused_order = [(cid, s) for cid, s in legs.fused if cid in chunks]
        paths = {cid: chunk.document_path for cid, chunk in chunks.items()}
        ordered = named_release_first(
            announced_release_first(fused_order, paths,
                                    {cid: chunk.content for cid, chunk in chunks.items()}),
            paths, req.text)
        if legs.fusion is not None and legs.vector is not None and is_question(req.text):
            ordered = inside_documents(ordered, paths, lexical=legs.lexical or [],
                                       vector=legs.vector, paragraphs=legs.paragraphs,
                                       headings={cid: chunk.heading
                                                 for cid, chunk in chunks.items()},
                                       terms=query_terms(req.text))
        ranked, reranked = apply_rerank(req.text, ordered, chunks, req.shape,
                                        self.reranker)
        ranked = diversify(ranked, chunks, req.shape, limit=req.limit,
                           vectors=self.vectors if legs.vector is not None else None)
        picked = _per_document(ranked, chunks, req.chunks_per_document, req.limit)
        return picked, reranked, fused_order

    def _dress(self, req: ResolvedSearch, legs: Legs, picked: Ranking,
               reranked: RerankOutcome | None, fused_order: Ranking,
               explained: SearchExplain | None, found: Evidence) -> SearchResponse:
        """Stage 4: each hit with its URI, match spans, context, explanation and
        ``answer_lines``; the response with its notice and ``low_confidence`` (decided from
        ``found``)."""
        chunks, ids = legs.chunks, [cid for cid, _ in picked]
        offered = self.rules.offered({chunks[cid].document_path for cid in ids})
        spans = spans_for(req.text, [chunks[cid].content for cid in ids])
        contexts = contexts_for(self.store, ids, req.shape)
        scores = reranked.scores if reranked else {}
        fused = dict(fused_order)
        terms = query_terms(req.text)
        answers = [chunk_answer(chunks[cid], terms, legs.paragraphs.get(cid)) for cid in ids]
        explains: list[HitExplain | None] = [None] * len(picked)
        if req.explain:
            explains[:] = explain_hits(
                ids, mode=req.mode, lexical=legs.lexical or [], vector=legs.rescored,
                weights=(leg_weights(legs.rescored, legs.lexical or [], legs.readable,
                                     legs.fusion) if legs.fusion is not None else None),
                fused=fused_order, reranked=reranked)
        hits = tuple(replace(_hit(chunks[cid], score, offered), matches=m, context=ctx,
                             rerank_score=scores.get(cid), explain=why,
                             fused_score=(fused.get(cid) if cid in scores
                                          or fused.get(cid) != score else None),
                             answer_lines=lines)
                     for (cid, score), m, ctx, why, lines in zip(picked, spans, contexts,
                                                                 explains, answers,
                                                                 strict=True))
        keywords = legs.lexical is not None
        notice = (_unreadable_notice(legs.failure, keywords) if legs.failure is not None
                  else self._indexing_notice(legs.semantic, keywords))
        return SearchResponse(hits, is_low(found), dict(req.filters), req.mode, notice,
                              reranked, req.applied, explained, found)

    def _indexing_notice(self, semantic: bool, keywords: bool) -> str | None:
        """While an index run is writing, some chunks may have text but no vector yet."""
        if not semantic or not self.store.get_meta(META_IN_PROGRESS):
            return None
        try:
            pending = self.store.stats().chunks - self.vectors.count()
        except VectorsUnreadable as exc:
            return _unreadable_notice(exc, keywords)
        if pending <= 0:
            return None
        return (f"indexing in progress: {pending} chunks are searchable by keywords only "
                "until their embeddings are stored")


def _unreadable_notice(exc: LegFailure, keywords: bool) -> str:
    """Why semantic search did not answer, and what answered instead (``keywords``: the
    keyword leg ran)."""
    found = "results from keyword search only" if keywords else "no results"
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
