"""The search use-case: validated request, two legs, fusion, per-document limit, offer."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from kbmcp_core.errors import InvalidQuery, VectorsUnreadable
from kbmcp_core.index_run import META_IN_PROGRESS
from kbmcp_core.models import DATE_PATTERN, StoredChunk, StoredDocument
from kbmcp_core.offer import ServableRules, doc_uri
from kbmcp_core.ports import Embedder, IndexReader, VectorStore

Mode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")

MAX_QUERY_CHARS = 2000
MAX_FILTER_ITEMS = 64
#: Weight of the lexical leg in the fused score; the vector leg gets the rest.
#: Chosen by measurement on the dev-eval corpora: docs/decisions/0007-search-fusion.md.
LEXICAL_WEIGHT = 0.55
_DATE = re.compile(DATE_PATTERN)
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


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
        return out


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: tuple[SearchHit, ...]
    low_confidence: bool
    filter_applied: dict[str, object] = field(default_factory=dict)
    mode: Mode = "hybrid"
    notice: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "results": [h.as_dict() for h in self.results],
            "low_confidence": self.low_confidence,
            "filter_applied": self.filter_applied,
        }
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
    for name in ("category", "topic"):
        value = getattr(req, name)
        if value is not None and not isinstance(value, str):
            raise InvalidQuery(f"{name} must be a string")
        if value is not None and _SURROGATE.search(value):
            raise InvalidQuery(f"{name} must be valid Unicode text (no lone surrogates)")
    for name in ("date_from", "date_to"):
        _check_date(name, getattr(req, name))
    if req.date_from and req.date_to and req.date_from > req.date_to:
        raise InvalidQuery("date_from is after date_to")
    limit = max(1, min(int(req.limit), max_limit))
    per_doc = req.chunks_per_document
    if per_doc is not None and per_doc < 1:
        raise InvalidQuery("chunks_per_document must be at least 1")
    return SearchRequest(
        query=query, limit=limit, path_globs=req.path_globs,
        tags_any=req.tags_any, tags_all=req.tags_all, date_from=req.date_from,
        date_to=req.date_to, category=req.category, topic=req.topic,
        chunks_per_document=per_doc, mode=req.mode,
    )


def _check_date(name: str, value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not _DATE.match(value):
        raise InvalidQuery(f"{name} must be a date as YYYY-MM-DD, got {str(value)[:40]!r}")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise InvalidQuery(f"{name} is not a real date: {value!r}") from None


def document_matches(doc: StoredDocument, req: SearchRequest) -> bool:
    """The document-level filters; a search never returns a chunk whose document fails."""
    if req.path_globs is not None:
        includes = [g for g in req.path_globs if not g.startswith("!")]
        excludes = [g[1:] for g in req.path_globs if g.startswith("!")]
        if includes and not any(fnmatch.fnmatchcase(doc.path, g) for g in includes):
            return False
        if any(fnmatch.fnmatchcase(doc.path, g) for g in excludes):
            return False
    tags = {t.lower() for t in doc.tags}
    if req.tags_any and not tags & {t.lower() for t in req.tags_any}:
        return False
    if req.tags_all and not {t.lower() for t in req.tags_all} <= tags:
        return False
    if req.date_from is not None and (doc.date is None or doc.date < req.date_from):
        return False
    if req.date_to is not None and (doc.date is None or doc.date > req.date_to):
        return False
    if req.category is not None and (doc.category or "").lower() != req.category.lower():
        return False
    return req.topic is None or (doc.topic or "").lower() == req.topic.lower()


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
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.rules = rules
        self.max_limit = max_limit
        self.chunks_per_document = chunks_per_document

    def search(self, request: SearchRequest) -> SearchResponse:
        req = validate(request, self.max_limit)
        filters = req.filters()
        allowed_paths: set[str] | None = None
        allowed_ids: list[int] | None = None
        if filters:
            allowed_paths = {d.path for d in self.store.documents() if document_matches(d, req)}
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
            fused = fuse(vector, lexical, coverage=self.embedder.coverage(req.query))
        else:
            fused = list(vector or lexical)
        chunks = self.store.get_chunks([cid for cid, _ in fused])
        picked = _per_document(fused, chunks, per_doc, req.limit)
        offered = self.rules.servable({chunks[cid].document_path for cid, _ in picked})
        hits = tuple(_hit(chunks[cid], score, offered) for cid, score in picked)
        notice = (_unreadable_notice(unreadable, req.mode) if unreadable is not None
                  else self._indexing_notice(req.mode))
        return SearchResponse(hits, _low_confidence(vector, lexical, hits), filters, req.mode,
                              notice)

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


def fuse(
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    lexical_weight: float = LEXICAL_WEIGHT,
    coverage: float = 1.0,
) -> list[tuple[int, float]]:
    """Weighted sum of the two legs' scores.

    The lexical leg contributes its relevance in [0, 1] (BM25 relative to the query's best,
    weighed by how much of the query the chunk contains), times ``lexical_weight``. The vector
    leg contributes its cosine similarity as is (comparable across queries), times the
    rest of the weight scaled by ``coverage``² — the share of the query the model can
    read — so an English model adds no noise to a Japanese query. A chunk found by one
    leg only gets that leg's share. Ties break by chunk id so results are stable.
    """
    scores: dict[int, float] = {cid: lexical_weight * min(s, 1.0) for cid, s in lexical}
    vector_weight = (1.0 - lexical_weight) * max(0.0, min(coverage, 1.0)) ** 2
    for cid, sim in vector:
        scores[cid] = scores.get(cid, 0.0) + vector_weight * max(sim, 0.0)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


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
