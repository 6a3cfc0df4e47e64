"""LanceDB's caches answer to kb-mcp's budget (issue 29.3, decision 0039): every vector
store of a process opens its tables through one ``lancedb.Session`` sized by
``lance_cache``, not LanceDB's default (6 GiB of index cache, 1 GiB of metadata), and
what it caches stays within that budget while searches stay right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbmcp_adapters.vectors import lance_cache
from kbmcp_adapters.vectors.lance_store import LanceVectorStore

DIM = 16
THRESHOLD = 600


def _indexed_store(folder: Path, rows: int = 800) -> tuple[LanceVectorStore, np.ndarray]:
    """A table past the (lowered) ANN threshold, with its IVF_PQ index built."""
    rng = np.random.default_rng(3)
    m = rng.normal(size=(rows, DIM))
    m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    store = LanceVectorStore(folder, DIM, ann_min_rows=THRESHOLD)
    store.add(list(range(1, rows + 1)), m.tolist())
    store.compact()
    assert store.ann_state() == (rows, rows)
    return store, m


def test_searches_cache_in_the_budgeted_session(tmp_path: Path) -> None:
    session = lance_cache.session()
    before = session.approx_num_items
    store, m = _indexed_store(tmp_path / "vectors")
    for q in m[:5]:
        assert store.search(q.tolist(), 5)[0][0] > 0
    # the index and metadata a search opened went into kb-mcp's session: the connection
    # was made with it (with LanceDB's default session this one would stay empty)
    assert session.approx_num_items > before
    assert 0 < session.size_bytes <= (lance_cache.INDEX_CACHE_BYTES
                                      + lance_cache.METADATA_CACHE_BYTES)
    assert lance_cache.session() is session  # one per process, shared by every store


def test_a_small_budget_bounds_the_caches_and_searches_stay_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 256 * 1024
    monkeypatch.setattr(lance_cache, "INDEX_CACHE_BYTES", budget)
    monkeypatch.setattr(lance_cache, "METADATA_CACHE_BYTES", budget)
    monkeypatch.setattr(lance_cache, "_session", None)  # a fresh session for this test
    store, m = _indexed_store(tmp_path / "vectors")
    fresh = LanceVectorStore(tmp_path / "vectors", DIM)  # a searching process's store
    for i, q in enumerate(m[:40]):
        hits = fresh.search(q.tolist(), 5)
        assert hits[0][0] == i + 1  # each stored vector is its own nearest neighbour
        assert lance_cache.session().size_bytes <= 2 * budget
    assert lance_cache.session().approx_num_items > 0  # it is the session the store used
