"""LanceDB's cache budget: one ``lancedb.Session`` per process, shared by every vector
store it opens, with index and metadata caches sized for a knowledge base instead of
LanceDB's defaults (6 GiB of index cache, 1 GiB of metadata cache; decision 0039)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lancedb import Session

__all__ = ["INDEX_CACHE_BYTES", "METADATA_CACHE_BYTES", "session"]

#: Opened vector indexes (the IVF centroids, and each probed partition's PQ codes and row
#: ids: about 6 MB at 100,000 chunks, 60 MB at a million) stay in memory up to this size.
INDEX_CACHE_BYTES = 256 * 1024 * 1024
#: Manifests, file footers and index metadata of the table's versions.
METADATA_CACHE_BYTES = 64 * 1024 * 1024

_lock = threading.Lock()
_session: Session | None = None


def session() -> Session:
    """This process's session (made on first use)."""
    global _session
    with _lock:
        if _session is None:
            from kbmcp_adapters.vectors.lance_import import import_lancedb

            # imported as every other caller does (0045), whichever is first
            _session = import_lancedb().Session(index_cache_size_bytes=INDEX_CACHE_BYTES,
                                                metadata_cache_size_bytes=METADATA_CACHE_BYTES)
        return _session
