"""The vector store opened in a thread of its own while a search loads the model (decision 0057).

A fresh ``kb-mcp search`` pays twice before its vector leg: the embedding model (hashing its
file, opening an onnxruntime session, both outside the interpreter's lock) and LanceDB
(importing it, opening the table: Python work). Done one after the other they add up; here
the first search of a knowledge base that embeds its query starts opening the vectors at
once, in another thread, and its first use of them waits for that. Nothing is kept across
processes: the table is opened as any search opens it.

Both threads import numpy (LanceDB through pyarrow, the model through onnxruntime), and two
threads importing it at once can meet it half initialised: pyarrow's C code imports numpy's
core extension module directly while the other thread holds numpy's package, and Python's
import-deadlock avoidance then hands one of them the partial module ("cannot import name
'__cpu_features__' from partially initialized module"), which fails the search. So the
modules both sides share (``SHARED_IMPORTS``) are imported before the thread starts: work
the search does anyway, on the lock either way.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Collection

from kbmcp_core.chunk_labels import LabelFilter
from kbmcp_core.models import Vector
from kbmcp_core.ports import VectorReader

__all__ = ["SHARED_IMPORTS", "VectorsOpenedAhead"]

#: Imported by both the vectors' thread and the model's loading: imported first, in turn.
SHARED_IMPORTS = ("numpy",)


class VectorsOpenedAhead:
    """A ``VectorReader`` whose store starts opening now (a cheap read: ``count``) in a
    thread; every call waits for that thread first. A failure there is left for the real
    call to meet again and report (through the adapter's own translation)."""

    def __init__(self, vectors: VectorReader) -> None:
        self._vectors = vectors
        for name in SHARED_IMPORTS:
            importlib.import_module(name)
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

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        return self.opened().search_labelled(vector, limit, where)

    def labelled(self) -> bool:
        return self.opened().labelled()

    def fingerprint(self) -> str | None:
        return self.opened().fingerprint()
