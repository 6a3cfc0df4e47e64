"""The search use-case: validated request, two legs, fusion, per-document limit, offer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Literal, cast

from kbmcp_core.context import Context, ContextKind
from kbmcp_core.errors import InvalidQuery, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.fusion import Fusion, fuse
from kbmcp_core.index_run import META_IN_PROGRESS
from kbmcp_core.models import DATE_PATTERN, DocumentFilter, StoredChunk, StoredDocument
from kbmcp_core.offer import ServableRules, doc_uri
from kbmcp_core.ports import Embedder, IndexReader, Reranker, VectorStore
from kbmcp_core.rerank import RerankOutcome
from kbmcp_core.shaping import ShapeOptions, check_options, contexts_for, reorder, spans_for
from kbmcp_core.spans import Span

Mode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")

MAX_QUERY_CHARS = 2000
MAX_FILTER_ITEMS = 64
_DATE = re.compile(DATE_PATTERN)
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: NUL, the other C0 controls and DEL: no tag, category, topic or served path holds one
_CONTROL = re.compile("[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 5
    path_globs: tuple[str, ...] | None = None
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    category: str | None = None
    topic: str | None = None
    chunks_per_document: int | None = None
    mode: Mode = "hybrid"
    #: MMR λ in [0, 1] (1 = off), ``none``/``adjacent``/``section``, neighbours per side
    #: for ``adjacent``, cross-encoder reranking; None = the searcher's default
    diversity: float | None = None
    context: str | None = None
    context_chunks: int | None = None
    rerank: bool | None = None

    def filters(self) -> dict[str, object]:
        """The filters that apply, echoed back in the response."""
        out: dict[str, object] = {}
        if self.path_globs is not None:
            out["path_globs"] = list(self.path_globs)
        if self.tags_any:
            out["tags_any"] = list(self.tags_any)
        if self.tags_all:
            out["tags_all"] = list(self.tags_all)
        for key in ("date_from", "date_to", "category", "topic"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


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
        else:
            out["start_line"] = self.start_line
            out["end_line"] = self.end_line
        if self.uri is not None:
            out["uri"] = self.uri
        out["matches"] = [list(m) for m in self.matches]
        if self.context is not None:
            out["context"] = self.context.as_dict()
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        return out


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: tuple[SearchHit, ...]
    low_confidence: bool
    filter_applied: dict[str, object] = field(default_factory=dict)
    mode: Mode = "hybrid"
    notice: str | None = None
    rerank: RerankOutcome | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "results": [h.as_dict() for h in self.results],
            "low_confidence": self.low_confidence,
            "filter_applied": self.filter_applied,
        }
        if self.rerank is not None:
            out["rerank"] = self.rerank.as_dict()
        if self.notice:
            out["notice"] = self.notice
        return out


def validate(req: SearchRequest, max_limit: int) -> SearchRequest:
    """Reject malformed requests with a message that says what to fix."""
    if not isinstance(req.query, str) or not req.query.strip():
        raise InvalidQuery("query must be a non-empty string")
    # NUL and lone surrogates (a JSON "\\ud800" escape decodes to one) are not text any
    # tokenizer or database can take: they become spaces.
    query = _NOT_TEXT.sub(" ", req.query)
    if len(req.query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query is {len(req.query)} characters; the limit is {MAX_QUERY_CHARS}")
    if req.mode not in MODES:
        raise InvalidQuery(f"mode must be one of {', '.join(MODES)}")
    if req.path_globs is not None and not req.path_globs:
        raise InvalidQuery("path_globs is empty; omit it to search everything")
    for name in ("path_globs", "tags_any", "tags_all"):
        items = getattr(req, name) or ()
        if len(items) > MAX_FILTER_ITEMS:
            raise InvalidQuery(f"{name} has more than {MAX_FILTER_ITEMS} items")
        if any(not isinstance(i, str) or not i.strip() for i in items):
            raise InvalidQuery(f"{name} items must be non-empty strings")
        if any(_SURROGATE.search(i) for i in items):
            raise InvalidQuery(f"{name} items must be valid Unicode text (no lone surrogates)")
        for item in items:
            check_filter_text(f"{name} items", item)
    for name in ("category", "topic"):
        value = getattr(req, name)
        if value is not None and not isinstance(value, str):
            raise InvalidQuery(f"{name} must be a string")
        if value is not None and _SURROGATE.search(value):
            raise InvalidQuery(f"{name} must be valid Unicode text (no lone surrogates)")
        if value is not None:
            check_filter_text(name, value)
    for name in ("date_from", "date_to"):
        _check_date(name, getattr(req, name))
    if req.date_from and req.date_to and req.date_from > req.date_to:
        raise InvalidQuery("date_from is after date_to")
    limit = max(1, min(int(req.limit), max_limit))
    per_doc = req.chunks_per_document
    if per_doc is not None and per_doc < 1:
        raise InvalidQuery("chunks_per_document must be at least 1")
    check_options(req.diversity, req.context, req.context_chunks, req.rerank)
    return replace(req, query=query, limit=limit, chunks_per_document=per_doc)


def check_filter_text(name: str, value: str) -> None:
    """Refuse a value that names what documents to look at (a filter, the graph's start
    document) when it holds NUL or another control character: no stored document can
    match it, and the refusal is the same whichever store holds the index."""
    if _SURROGATE.search(value):
        raise InvalidQuery(f"{name} must be valid Unicode text (no lone surrogates)")
    if found := _CONTROL.search(value):
        raise InvalidQuery(f"{name} must not contain NUL or other control characters "
                           f"(found U+{ord(found.group()):04X})")


def _check_date(name: str, value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not _DATE.match(value):
        raise InvalidQuery(f"{name} must be a date as YYYY-MM-DD, got {str(value)[:40]!r}")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise InvalidQuery(f"{name} is not a real date: {value!r}") from None


def document_filter(req: SearchRequest) -> DocumentFilter:
    """The request's document-level filters, for the store to apply."""
    return DocumentFilter(
        path_globs=req.path_globs, tags_any=req.tags_any, tags_all=req.tags_all,
        date_from=req.date_from, date_to=req.date_to, category=req.category, topic=req.topic)


def document_matches(doc: StoredDocument, req: SearchRequest) -> bool:
    """The document-level filters; a search never returns a chunk whose document fails."""
    return document_filter(req).matches(doc)


class Searcher:
    """Hybrid retrieval over the ports. Construct once; ``search`` is cheap to call."""

    def __init__(
        self,
        store: IndexReader,
        vectors: VectorStore,
        embedder: Embedder,
        rules: ServableRules,
        *,
        max_limit: int = 50,
        chunks_per_document: int = 2,
        shape: ShapeOptions | None = None,
        reranker: Reranker | None = None,
        fusion: Fusion | None = None,
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.rules = rules
        self.max_limit = max_limit
        self.chunks_per_document = chunks_per_document
        self.shape = shape or ShapeOptions()
        self.reranker = reranker
        self.fusion = fusion or Fusion()

    def search(self, request: SearchRequest) -> SearchResponse:
        req = validate(request, self.max_limit)
        filters = req.filters()
        allowed_paths: set[str] | None = None
        allowed_ids: list[int] | None = None
        if filters:
            allowed_paths = self.store.matching_paths(document_filter(req))
            if not allowed_paths:
                return SearchResponse((), True, filters, req.mode)
            allowed_ids = self.store.chunk_ids_for(allowed_paths)
        per_doc = req.chunks_per_document or self.chunks_per_document
        pool = max(50, req.limit * per_doc * 5)
        lexical: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        unreadable: VectorsUnreadable | None = None
        if req.mode in ("hybrid", "lexical"):
            lexical = self.store.lexical_search(req.query, pool, allowed_paths)
        if req.mode in ("hybrid", "vector"):
            qv = self.embedder.embed_query(req.query)
            try:
                vector = self.vectors.search(qv, pool, allowed_ids)
            except VectorsUnreadable as exc:  # damaged vector files: keywords still answer
                unreadable = exc
        if req.mode == "hybrid":
            fused = fuse(vector, lexical, coverage=self.embedder.coverage(req.query),
                         fusion=self.fusion)
        else:
            fused = list(vector or lexical)
        chunks = self.store.get_chunks([cid for cid, _ in fused])
        options = self._options(req)
        ranked, reranked = reorder(
            req.query, fused, chunks, options, limit=req.limit, reranker=self.reranker,
            vectors=None if req.mode == "lexical" or unreadable else self.vectors)
        picked = _per_document(ranked, chunks, per_doc, req.limit)
        offered = self.rules.servable({chunks[cid].document_path for cid, _ in picked})
        spans = spans_for(req.query, [chunks[cid].content for cid, _ in picked])
        contexts = contexts_for(self.store, [cid for cid, _ in picked], options)
        scores = reranked.scores if reranked else {}
        hits = tuple(replace(_hit(chunks[cid], score, offered), matches=m, context=ctx,
                             rerank_score=scores.get(cid))
                     for (cid, score), m, ctx in zip(picked, spans, contexts, strict=True))
        notice = (_unreadable_notice(unreadable, req.mode) if unreadable is not None
                  else self._indexing_notice(req.mode))
        return SearchResponse(hits, _low_confidence(vector, lexical, hits), filters, req.mode,
                              notice, reranked)

    def _options(self, req: SearchRequest) -> ShapeOptions:
        """The request's shaping options, the searcher's defaults where it says nothing."""
        d = self.shape
        return ShapeOptions(
            diversity=d.diversity if req.diversity is None else float(req.diversity),
            context=d.context if req.context is None else cast(ContextKind, req.context),
            context_chunks=req.context_chunks or d.context_chunks,
            rerank=d.rerank if req.rerank is None else req.rerank,
            rerank_candidates=d.rerank_candidates,
        )

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


def _unreadable_notice(exc: VectorsUnreadable, mode: Mode) -> str:
    found = "no results" if mode == "vector" else "results from keyword search only"
    if isinstance(exc, VectorsUnreachable):
        return f"semantic search is unavailable: {exc.detail}; {found}"
    return (f"semantic search is unavailable: {exc.detail}; {found}. Run `kb-mcp index` "
            "to rebuild the vectors")


_CJK = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"
)


def readable_share(text: str) -> float:
    """Share of the letters and digits of ``text`` that are not Chinese, Japanese or
    Korean: what an English-only embedding model can make sense of."""
    chars = [c for c in text if c.isalnum()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if not _CJK.match(c)) / len(chars)


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


def _low_confidence(
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    hits: Sequence[SearchHit],
) -> bool:
    """No clear winner: nothing found, or no lexical match and weak semantic similarity."""
    if not hits:
        return True
    best_similarity = vector[0][1] if vector else 0.0
    return not lexical and best_similarity < 0.35
