"""A vector search is one trip to LanceDB's event loop (decision 0057's addendum, "a search
under fifty clients"): the same hits and similarities as LanceDB's synchronous query, with
and without the approximate index, from many threads at once as from one."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from kbmcp_adapters.vectors.exact import in_order
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_adapters.vectors.nearest import nearest

DIM = 16
THRESHOLD = 600
CENTRES = np.random.default_rng(5).normal(size=(12, DIM))


def _vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 12 centres (neighbours exist, as among chunks of a few topics)."""
    rng = np.random.default_rng(seed)
    m = CENTRES[rng.integers(0, 12, size=n)] + 0.35 * rng.normal(size=(n, DIM))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(params=["exact", "approximate"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LanceVectorStore]:
    """800 vectors; ``approximate``: with the IVF_PQ index ``compact`` trains past 600."""
    store = LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=THRESHOLD)
    m = _vectors(800, seed=1)
    store.add(list(range(1, len(m) + 1)), m.tolist())
    if request.param == "approximate":
        store.compact()
        assert store.ann_state() is not None
    else:
        assert store.ann_state() is None
    yield store


def _queries(n: int) -> list[list[float]]:
    return [q.tolist() for q in _vectors(n, seed=9)]


def _synchronous(store: LanceVectorStore, query: list[float], k: int
                 ) -> list[tuple[int, float]]:
    """LanceDB's synchronous query, as every search ran it before."""
    table = store._existing()
    assert table is not None
    return in_order(nearest(table, np.asarray(query, dtype=np.float32), k))


def test_a_search_finds_what_the_synchronous_query_finds(store: LanceVectorStore) -> None:
    for query in _queries(12):
        for k in (1, 10, 50):
            assert store.search(query, k) == _synchronous(store, query, k)


def test_a_search_crosses_to_lancedbs_event_loop_once(
    store: LanceVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lancedb.background_loop import BackgroundEventLoop

    store.search(_queries(1)[0], 10)  # the connection opened
    trips: list[object] = []
    run = BackgroundEventLoop.run

    def counted(loop: BackgroundEventLoop, future: object) -> object:
        trips.append(future)
        return run(loop, future)

    monkeypatch.setattr(BackgroundEventLoop, "run", counted)
    for query in _queries(3):
        assert len(store.search(query, 10)) == 10
    assert len(trips) == 3  # the code before: ten a search


def test_searches_at_once_find_what_they_find_one_by_one(store: LanceVectorStore) -> None:
    queries = _queries(24)
    alone = [store.search(q, 10) for q in queries]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: store.search(q, 10), queries * 3))
    assert together == alone * 3
