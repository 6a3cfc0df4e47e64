"""One search over several collections: their indexes seen as one by ``Searcher``.

``joint_view`` wraps the stores, vector stores, embedders and offer rules of several
collections into one of each, so the unchanged search use-case runs once over all of
them: both legs gather candidates from every collection and are fused together, and the
per-document limit, reranking, diversity, ``limit``, ``explain`` and ``low_confidence``
apply to the joint ranking exactly as to one index (decision 0041).

Inside the joint view a document's path is ``<collection>/<path>`` (a collection name
holds no ``/``) and a chunk's id is ``local id × n + i`` for the i-th of n collections,
so two collections' ``README.md`` or chunk 7 never meet. Each leg asks the collections'
stores at once from a small thread pool the view owns (``Fanout``: closed with the
view). The scores are made comparable so:

- vector leg: a cosine similarity is a property of the model, not of the index, so the
  candidates of collections embedded with the same model are merged on their cosines as
  they are; collections with different models run the leg each with its own model, and
  each model's similarities count relative to its own best;
- keyword leg: the stores' keyword statistics are pooled (``keyword_pool``, decision
  0052): each collection counts its chunks and the chunks holding each query term, the
  counts are summed, each store scores its candidates' BM25 and coverage on the sums, and
  the scores are made relative to the best over all collections at once, so a folder
  split into collections ranks as the one folder does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

from kbmcp_core.chunk_labels import LabelFilter
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics, pooled_relevance
from kbmcp_core.models import DocumentFilter, IndexStats, StoredChunk, StoredDocument, Vector
from kbmcp_core.offer import OfferRules
from kbmcp_core.ports import (
    ConvertedText,
    Embedder,
    IndexReader,
    SpanEmbedder,
    SpanGroup,
    VectorReader,
)

#: Between a collection's name and a document's path in the joint view.
SEP = "/"
#: Threads asking the collections' stores at once (their waits are I/O and native code).
WORKERS = 4

T = TypeVar("T")
R = TypeVar("R")


class Fanout:
    """Asks the collections' stores at once: a small thread pool, started on first use
    and shut down by ``close`` (its owner: the ``JointView`` of one search)."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def each(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``fn`` of every item, in order; an error of one is raised as it is."""
        todo = list(items)
        if len(todo) < 2:
            return [fn(item) for item in todo]
        with self._lock:
            if self._closed:
                raise RuntimeError("this joint view of the collections is closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers,
                                                thread_name_prefix="kb-mcp-collections")
            pool = self._pool
        return list(pool.map(fn, todo))

    def close(self) -> None:
        """Stop the threads (waiting for the asks under way); ``each`` is refused after."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True, slots=True)
class Part:
    """One collection as the joint search reads it. ``model``: the embedding set-up's
    identity (equal models share a joint vector leg)."""

    name: str
    store: IndexReader
    vectors: VectorReader
    embedder: Embedder
    rules: OfferRules
    model: str


def qualify(name: str, path: str) -> str:
    return f"{name}{SEP}{path}"


def split(qualified: str) -> tuple[str, str]:
    """(collection, path) of a joint path."""
    name, _, path = qualified.partition(SEP)
    return name, path


class _Ids:
    """The joint chunk ids: ``local × n + i``."""

    def __init__(self, parts: Sequence[Part], fanout: Fanout) -> None:
        self.parts = parts
        self.fanout = fanout
        self.n = len(parts)
        self.index = {p.name: i for i, p in enumerate(parts)}

    def joint(self, i: int, local: int) -> int:
        return local * self.n + i

    def local(self, gid: int) -> tuple[int, int]:
        return gid % self.n, gid // self.n

    def by_part(self, gids: Iterable[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for gid in gids:
            i, local = self.local(gid)
            out.setdefault(i, []).append(local)
        return out

    def paths_by_part(self, paths: Iterable[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for qualified in paths:
            name, path = split(qualified)
            if name in self.index:
                out.setdefault(self.index[name], []).append(path)
        return out


class JointStore:
    """``IndexReader`` over several collections' stores (paths and ids made joint)."""

    def __init__(self, ids: _Ids) -> None:
        self._ids = ids
        self._parts = ids.parts

    def _doc(self, p: Part, doc: StoredDocument) -> StoredDocument:
        return replace(doc, path=qualify(p.name, doc.path))

    def _chunk(self, i: int, chunk: StoredChunk) -> StoredChunk:
        return replace(chunk, id=self._ids.joint(i, chunk.id),
                       document_path=qualify(self._parts[i].name, chunk.document_path))

    def get_document(self, path: str) -> StoredDocument | None:
        name, local = split(path)
        i = self._ids.index.get(name)
        if i is None:
            return None
        doc = self._parts[i].store.get_document(local)
        return None if doc is None else self._doc(self._parts[i], doc)

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        out: list[StoredDocument] = []
        wanted = None if paths is None else self._ids.paths_by_part(paths)
        for i, p in enumerate(self._parts):
            if wanted is not None and i not in wanted:
                continue
            rows = p.store.documents(None if wanted is None else wanted[i])
            out += [self._doc(p, d) for d in rows]
        return sorted(out, key=lambda d: d.path)

    def document_paths(self) -> list[str]:
        return [qualify(p.name, path) for p in self._parts for path in p.store.document_paths()]

    def sizes_over(self, min_bytes: int) -> list[tuple[str, int]]:
        return [(qualify(p.name, path), size) for p in self._parts
                for path, size in p.store.sizes_over(min_bytes)]

    def converted_text(self, content_hash: str) -> ConvertedText | None:
        for p in self._parts:
            found = p.store.converted_text(content_hash)
            if found is not None:
                return found
        return None

    def get_meta(self, key: str) -> str | None:
        """The first collection's value that is set (``in progress`` in any of them)."""
        for p in self._parts:
            value = p.store.get_meta(key)
            if value:
                return value
        return None

    def stats(self) -> IndexStats:
        each = [p.store.stats() for p in self._parts]
        return IndexStats(documents=sum(s.documents for s in each),
                          chunks=sum(s.chunks for s in each), model_id=each[0].model_id,
                          dimension=each[0].dimension, last_run=None,
                          schema_revision=each[0].schema_revision)

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]:
        wanted = list(self._ids.by_part(ids).items())
        found = self._ids.fanout.each(
            lambda item: self._parts[item[0]].store.get_chunks(item[1]), wanted)
        out: dict[int, StoredChunk] = {}
        for (i, _), chunks in zip(wanted, found, strict=True):
            for chunk in chunks.values():
                joint = self._chunk(i, chunk)
                out[joint.id] = joint
        return out

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        return [self._ids.joint(i, cid)
                for i, local in self._ids.paths_by_part(paths).items()
                for cid in self._parts[i].store.chunk_ids_for(local)]

    def matching_paths(self, spec: DocumentFilter) -> set[str]:
        return {qualify(p.name, path) for p in self._parts
                for path in p.store.matching_paths(spec)}

    def lexical_search(self, query: str, limit: int,
                       document_paths: Collection[str] | None = None
                       ) -> list[tuple[int, float]]:
        """The keyword leg as one store holding every collection's chunks ranks it: each
        collection's candidates scored on the statistics of all of them (the module
        docstring; decision 0052)."""
        allowed = None if document_paths is None else self._ids.paths_by_part(document_paths)
        # a collection none of whose documents passed the filters is not asked
        asked = [i for i in range(len(self._parts)) if allowed is None or i in allowed]

        def paths(i: int) -> list[str] | None:
            return None if allowed is None else allowed[i]

        def counts(i: int) -> KeywordStatistics:
            # every collection's counts, asked or not: one index over all of them has them
            return self._parts[i].store.keyword_statistics(
                query, None if allowed is None or i in allowed else [])

        each = self._ids.fanout.each(counts, range(len(self._parts)))
        pooled = sum(each[1:], each[0])
        found = self._ids.fanout.each(
            lambda i: self._parts[i].store.keyword_hits(query, limit, paths(i), pooled), asked)
        return pooled_relevance(((self._ids.joint(i, hit.chunk_id), hit)
                                 for i, hits in zip(asked, found, strict=True)
                                 for hit in hits), limit)

    def keyword_statistics(self, query: str, document_paths: Collection[str] | None = None,
                           *, presence: bool = False) -> KeywordStatistics:
        allowed = None if document_paths is None else self._ids.paths_by_part(document_paths)
        each = [p.store.keyword_statistics(
            query, None if allowed is None else allowed.get(i, []), presence=presence)
            for i, p in enumerate(self._parts)]
        return sum(each[1:], each[0])

    def keyword_hits(self, query: str, limit: int, document_paths: Collection[str] | None,
                     statistics: KeywordStatistics) -> list[KeywordHit]:
        allowed = None if document_paths is None else self._ids.paths_by_part(document_paths)
        return [replace(hit, chunk_id=self._ids.joint(i, hit.chunk_id))
                for i, p in enumerate(self._parts) if allowed is None or i in allowed
                for hit in p.store.keyword_hits(
                    query, limit, None if allowed is None else allowed[i], statistics)]

    def paths_containing(self, terms: Collection[str]) -> set[str]:
        return {qualify(p.name, path) for p in self._parts
                for path in p.store.paths_containing(terms)}

    def chunk_windows(self, ids: Collection[int], radius: int
                      ) -> dict[int, list[StoredChunk]]:
        out: dict[int, list[StoredChunk]] = {}
        for i, local in self._ids.by_part(ids).items():
            for cid, window in self._parts[i].store.chunk_windows(local, radius).items():
                out[self._ids.joint(i, cid)] = [self._chunk(i, c) for c in window]
        return out


class QueryVectors(list[float]):
    """A query's vector from the first model, with the vector of every model kept by
    model identity (``JointVectors.search`` picks each collection's)."""

    def __init__(self, first: Vector, by_model: dict[str, Vector]) -> None:
        super().__init__(first)
        self.by_model = by_model


class JointEmbedder:
    """The collections' embedders as one: a query is embedded once per distinct model."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self._models: dict[str, Embedder] = {}
        for p in parts:
            self._models.setdefault(p.model, p.embedder)
        self._first = parts[0].embedder

    @property
    def model_id(self) -> str:
        return self._first.model_id

    @property
    def dimension(self) -> int:
        return self._first.dimension

    @property
    def max_tokens(self) -> int:
        return self._first.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._first.count_tokens(texts)

    def coverage(self, text: str) -> float:
        """The share of the query the weakest reader of it can read."""
        return min(e.coverage(text) for e in self._models.values())

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return self._first.embed_documents(texts)

    def embed_spans(self, items: Sequence[tuple[str, Sequence[SpanGroup]]],
                    ) -> list[list[Vector | None]] | None:
        """Parts read in context by the one model all collections share; None with several
        (a paragraph's vector must come from the model its query vector came from)."""
        if len(self._models) != 1 or not isinstance(self._first, SpanEmbedder):
            return None
        return self._first.embed_spans(items)

    def embed_query(self, text: str) -> Vector:
        by_model = {model: e.embed_query(text) for model, e in self._models.items()}
        return QueryVectors(next(iter(by_model.values())), by_model)


class JointVectors:
    """``VectorReader`` over several collections' vector stores (no writing half: each
    collection's vectors are written through its own knowledge base)."""

    def __init__(self, ids: _Ids) -> None:
        self._ids = ids
        self._parts = ids.parts
        self._one_model = len({p.model for p in self._parts}) == 1

    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        """The stored vectors; none when the collections have different models (vectors
        of two models cannot be compared: diversity then compares words)."""
        if not self._one_model:
            return {}
        out: dict[int, Vector] = {}
        for i, local in self._ids.by_part(ids).items():
            for cid, v in self._parts[i].vectors.get(local).items():
                out[self._ids.joint(i, cid)] = v
        return out

    def count(self) -> int:
        return sum(p.vectors.count() for p in self._parts)

    def labelled(self) -> bool:
        """Never: a joint search filters each collection by its allowed chunk ids (the
        joint paths are not the collections' own)."""
        return False

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        """None: the view is not ``labelled`` (the searcher filters by ids)."""
        return None

    def search(self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
               ) -> list[tuple[int, float]]:
        """Each collection's nearest chunks, merged on cosine similarity when one model
        embedded them all, else on each model's similarity relative to its best."""
        allowed = None if allowed_ids is None else self._ids.by_part(allowed_ids)
        by_model = vector.by_model if isinstance(vector, QueryVectors) else {}
        asked = [i for i in range(len(self._parts)) if allowed is None or i in allowed]

        def leg(i: int) -> list[tuple[int, float]]:
            p = self._parts[i]
            return p.vectors.search(by_model.get(p.model, vector), limit,
                                    None if allowed is None else allowed[i])

        found: dict[str, list[tuple[int, float]]] = {}
        for i, hits in zip(asked, self._ids.fanout.each(leg, asked), strict=True):
            found.setdefault(self._parts[i].model, []).extend(
                (self._ids.joint(i, c), s) for c, s in hits)
        merged: list[tuple[int, float]] = []
        for hits in found.values():
            best = max((s for _, s in hits), default=0.0)
            scale = 1.0 if self._one_model or best <= 0 else 1.0 / best
            merged += [(cid, s * scale) for cid, s in hits]
        return sorted(merged, key=lambda x: (-x[1], x[0]))[:limit]

    def ids(self) -> set[int]:
        return {self._ids.joint(i, c) for i, p in enumerate(self._parts)
                for c in p.vectors.ids()}

    def fingerprint(self) -> str | None:
        """The collections' fingerprints together; None when one cannot tell."""
        each = [p.vectors.fingerprint() for p in self._parts]
        return None if any(f is None for f in each) else "|".join(map(str, each))


class JointOffer(OfferRules):
    """What the collections offer, each by its own rules (joint paths in and out)."""

    def __init__(self, store: JointStore, ids: _Ids) -> None:
        super().__init__(store, ids.parts[0].rules.registry)
        self._ids = ids

    def offered(self, paths: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for i, local in self._ids.paths_by_part(paths).items():
            p = self._ids.parts[i]
            out |= {qualify(p.name, path) for path in p.rules.offered(local)}
        return out


@dataclass(frozen=True, slots=True)
class JointView:
    """The store, vectors, embedder and offer rules ``Searcher`` searches several
    collections through, read-only (each collection's index is written through its own
    knowledge base), and the fan-out they share: ``close`` (or ``with``) stops it."""

    store: JointStore
    vectors: JointVectors
    embedder: JointEmbedder
    rules: JointOffer
    fanout: Fanout

    def close(self) -> None:
        self.fanout.close()

    def __enter__(self) -> JointView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def joint_view(parts: Sequence[Part]) -> JointView:
    """The joint view of ``parts`` (at least two); close it when the search is done."""
    if len(parts) < 2:
        raise ValueError("a joint search needs at least two collections")
    ids = _Ids(parts, Fanout())
    store = JointStore(ids)
    return JointView(store, JointVectors(ids), JointEmbedder(parts), JointOffer(store, ids),
                     ids.fanout)


def local_id(gid: int, n: int) -> int:
    """A joint chunk id's id in its own collection's index."""
    return gid // n
