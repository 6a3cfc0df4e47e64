"""The vector store opened in a thread of its own while a search loads the model (decision 0057).

A fresh ``kb-mcp search`` pays twice before its vector leg: the embedding model (hashing its
file, opening an onnxruntime session, both outside the interpreter's lock) and LanceDB
(importing it, opening the table: Python work). Done one after the other they add up; here
the first search of a knowledge base that embeds its query starts opening the vectors at
once, in another thread, and its first use of them waits for that. Nothing is kept across
processes: the table is opened as any search opens it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection

from kbmcp_core.models import Vector
from kbmcp_core.ports import VectorReader

__all__ = ["VectorsOpenedAhead"]


class VectorsOpenedAhead:
    """A ``VectorReader`` whose store starts opening now (a cheap read: ``count``) in a
    thread; every call waits for that thread first. A failure there is left for the real
    call to meet again and report (through the adapter's own translation)."""

    def __init__(self, vectors: VectorReader) -> None:
        self._vectors = vectors
        self._thread = threading.Thread(target=self._open, name="kb-mcp-open-vectors")
        self._thread.start()

    def _open(self) -> None:
        # a failure is reported by the call that needs the vectors, which meets it again
        with contextlib.suppress(Exception):
            self._vectors.count()

    def opened(self) -> VectorReader:
        """The store, once the thread opening it has ended."""
        self._thread.join()
        return self._vectors

    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        return self.opened().get(ids)

    def ids(self) -> set[int]:
        return self.opened().ids()

    def count(self) -> int:
        return self.opened().count()

    def search(self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
               ) -> list[tuple[int, float]]:
        return self.opened().search(vector, limit, allowed_ids)

    def fingerprint(self) -> str | None:
        return self.opened().fingerprint()
