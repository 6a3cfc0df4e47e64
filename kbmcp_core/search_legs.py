"""The legs stage of a search: each mode's strategy for running and fusing the legs.

A search's mode chooses its strategy here and nowhere else (``LEGS``): ``hybrid`` runs
the keyword and the vector leg, fuses them and re-scores the best candidates by their
nearest paragraph (``passages``); ``vector`` and ``lexical`` run one leg alone. Every
strategy returns the same ``Legs`` value, whose fields say what ran, so the stages after
it (shaping, dressing) read facts, never the mode. A vector leg that cannot answer
(damaged vector files, the embedding service down) leaves the keyword leg to answer and
is recorded as ``failure``. ``hybrid`` runs its two legs through the searcher's
``SideBySide`` (the bootstrap's runs them on two threads, so a search costs the slower leg,
not the sum: decision 0058; ``InTurn``, one after the other, where none is given).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kbmcp_core.chunk_labels import LabelFilter
from kbmcp_core.errors import EmbeddingUnreachable, VectorsUnreadable
from kbmcp_core.fusion import Fusion, fuse
from kbmcp_core.models import StoredChunk, Vector
from kbmcp_core.passages import candidates_for, passage_similarities
from kbmcp_core.ports import Embedder, IndexReader, SideBySide, VectorReader
from kbmcp_core.questions import fusion_for
from kbmcp_core.search_request import Mode, ResolvedSearch

Ranking = list[tuple[int, float]]
#: Why the vector leg could not answer.
LegFailure = VectorsUnreadable | EmbeddingUnreachable
A = TypeVar("A")
B = TypeVar("B")


class InTurn:
    """``SideBySide`` one call after the other, on the caller's thread."""

    def both(self, first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
        return first(), second()


class SearchPorts(Protocol):
    """What a leg strategy reads from the searcher."""

    store: IndexReader
    vectors: VectorReader
    embedder: Embedder
    fusion: Fusion
    passages: int | None
    beside: SideBySide


@dataclass(frozen=True, slots=True)
class Allowed:
    """The documents and chunks the legs may return (None: every one). The vector leg is
    filtered by ``where`` on the chunks' labels when it is given (a filter the vector
    store's labels express, ``chunk_labels``), else by the allowed chunk ``ids``."""

    paths: set[str] | None
    ids: list[int] | None
    where: LabelFilter | None = None

    def chunk_ids(self, store: IndexReader) -> list[int] | None:
        """The allowed chunk ids: ``ids``, or those of ``paths`` when only the label
        filter was made (a store that turns out not to be labelled)."""
        if self.ids is not None or self.where is None or self.paths is None:
            return self.ids
        return store.chunk_ids_for(self.paths)


@dataclass(frozen=True, slots=True)
class Legs:
    """What the legs found, fused, with the chunks of the fused candidates."""

    #: the keyword leg; None when it did not run
    lexical: Ranking | None
    #: the vector leg; None when it did not run or could not answer (``failure``)
    vector: Ranking | None
    #: the vector leg as fused (its best candidates re-scored by paragraph)
    rescored: Ranking
    fused: Ranking
    chunks: dict[int, StoredChunk]
    #: the share of the query the embedding model reads (0 when no vector leg was asked)
    readable: float
    #: the fusion the two legs were fused with; None for one leg alone
    fusion: Fusion | None
    #: whether the vector leg was asked for, and why it could not answer
    semantic: bool
    failure: LegFailure | None
    #: the paragraphs' similarities to the query of the candidates re-scored by them
    #: (``passages.paragraph_similarities``): what ``answer_lines`` reads meaning from
    paragraphs: Mapping[int, Sequence[float | None]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Semantic:
    query_vector: Vector | None
    found: Ranking | None
    failure: LegFailure | None


def _keywords(ports: SearchPorts, req: ResolvedSearch, allowed: Allowed, pool: int) -> Ranking:
    return ports.store.lexical_search(req.text, pool, allowed.paths)


def _semantic(ports: SearchPorts, req: ResolvedSearch, allowed: Allowed, pool: int
              ) -> _Semantic:
    query_vector: Vector | None = None
    try:
        query_vector = ports.embedder.embed_query(req.text)
        found = None
        if allowed.where is not None:
            found = ports.vectors.search_labelled(query_vector, pool, allowed.where)
        if found is None:  # no label filter, or vectors written without labels: the ids
            found = ports.vectors.search(query_vector, pool, allowed.chunk_ids(ports.store))
        return _Semantic(query_vector, found, None)
    except VectorsUnreadable as exc:  # damaged vector files: keywords still answer
        return _Semantic(query_vector, None, exc)
    except EmbeddingUnreachable as exc:  # the embedding service is down (0037)
        return _Semantic(query_vector, None, exc)


def hybrid(ports: SearchPorts, req: ResolvedSearch, allowed: Allowed, pool: int) -> Legs:
    """Both legs, fused; the best fused candidates re-scored by their nearest paragraph."""
    lexical, semantic = ports.beside.both(lambda: _keywords(ports, req, allowed, pool),
                                          lambda: _semantic(ports, req, allowed, pool))
    vector = semantic.found or []
    readable = ports.embedder.coverage(req.text)
    fusion = fusion_for(req.text, ports.fusion)  # a question leans on the vector leg (0028)
    fused = fuse(vector, lexical, coverage=readable, fusion=fusion)
    chunks = ports.store.get_chunks([cid for cid, _ in fused])
    rescored = vector
    paragraphs: dict[int, list[float | None]] = {}
    candidates = candidates_for(ports.passages, ports.embedder)
    qv = semantic.query_vector
    if qv is not None and semantic.failure is None and candidates and readable > 0:
        try:
            rescored = passage_similarities(qv, fused, vector, chunks, ports.embedder,
                                            candidates, separately=ports.passages is not None,
                                            read=paragraphs)
            fused = fuse(rescored, lexical, coverage=readable, fusion=fusion)
        except EmbeddingUnreachable:  # the service went away: the chunks' scores stand
            rescored, paragraphs = vector, {}
    return Legs(lexical, semantic.found, rescored, fused, chunks, readable, fusion, True,
                semantic.failure, paragraphs)


def vector_alone(ports: SearchPorts, req: ResolvedSearch, allowed: Allowed, pool: int
                 ) -> Legs:
    """The vector leg alone (nothing when it cannot answer)."""
    semantic = _semantic(ports, req, allowed, pool)
    vector = semantic.found or []
    readable = ports.embedder.coverage(req.text)
    chunks = ports.store.get_chunks([cid for cid, _ in vector])
    return Legs(None, semantic.found, vector, list(vector), chunks, readable, None, True,
                semantic.failure)


def lexical_alone(ports: SearchPorts, req: ResolvedSearch, allowed: Allowed, pool: int
                  ) -> Legs:
    """The keyword leg alone: no embedding model is asked anything."""
    lexical = _keywords(ports, req, allowed, pool)
    chunks = ports.store.get_chunks([cid for cid, _ in lexical])
    return Legs(lexical, None, [], list(lexical), chunks, 0.0, None, False, None)


LegStrategy = Callable[[SearchPorts, ResolvedSearch, Allowed, int], Legs]
#: The one place a search's mode decides anything.
LEGS: Mapping[Mode, LegStrategy] = {
    "hybrid": hybrid,
    "vector": vector_alone,
    "lexical": lexical_alone,
}
