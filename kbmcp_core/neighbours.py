"""Nearest-neighbour documents from the vector store, for the connection graph (kbmcp_core.graph).

Two documents are neighbours when a chunk of one is among the nearest chunks of the other;
their similarity is the best cosine similarity of such a pair. Only chunks of offered
documents are ever searched, so a document the offer excludes can never appear.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kbmcp_core.ports import IndexReader, VectorReader

#: Chunks of one document whose neighbours are looked up (the first ones, in reading order).
CHUNKS_PER_DOCUMENT = 8
#: Nearest chunks asked for per chunk: more than one document's worth, so several documents show.
CHUNK_NEIGHBOURS = 12


class ChunkNeighbours:
    """``Neighbours`` for ``build_graph``: offered documents nearest to one document."""

    def __init__(self, store: IndexReader, vectors: VectorReader, offered: Collection[str],
                 *, chunks_per_document: int = CHUNKS_PER_DOCUMENT,
                 chunk_neighbours: int = CHUNK_NEIGHBOURS) -> None:
        self.store = store
        self.vectors = vectors
        self.offered = frozenset(offered)
        self.chunks_per_document = chunks_per_document
        self.chunk_neighbours = chunk_neighbours
        self._owner: dict[int, str] = {}

    def __call__(self, path: str) -> Sequence[tuple[str, float]]:
        own = self.store.chunk_ids_for([path])[: self.chunks_per_document]
        if not own or path not in self.offered:
            return []
        others = set(self.store.chunk_ids_for(self.offered - {path}))
        if not others:
            return []
        best: dict[int, float] = {}
        for vector in self.vectors.get(own).values():
            for chunk_id, similarity in self.vectors.search(vector, self.chunk_neighbours,
                                                            allowed_ids=others):
                if chunk_id in others and similarity > best.get(chunk_id, -2.0):
                    best[chunk_id] = similarity
        owners = self._owners(best)
        by_document: dict[str, float] = {}
        for chunk_id, similarity in best.items():
            owner = owners.get(chunk_id)
            if owner is not None and owner in self.offered and owner != path:
                by_document[owner] = max(similarity, by_document.get(owner, -2.0))
        return sorted(by_document.items(), key=lambda item: (-item[1], item[0]))

    def _owners(self, ids: Collection[int]) -> dict[int, str]:
        missing = [i for i in ids if i not in self._owner]
        if missing:
            for chunk_id, chunk in self.store.get_chunks(missing).items():
                self._owner[chunk_id] = chunk.document_path
        return {i: self._owner[i] for i in ids if i in self._owner}


__all__ = ["CHUNKS_PER_DOCUMENT", "CHUNK_NEIGHBOURS", "ChunkNeighbours"]
