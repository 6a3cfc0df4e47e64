"""A vector search is one trip to LanceDB's event loop (decision 0057's addenda, "a search
under fifty clients" and "filtered searches in one trip"): the same hits and similarities
as LanceDB's synchronous query, with and without the approximate index, unfiltered and
filtered (by labels or by ids, exact or approximate, a filter keeping nothing), from many
threads at once as from one."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest

from kbmcp_adapters.vectors import ann_policy
from kbmcp_adapters.vectors import labels as label_columns
from kbmcp_adapters.vectors.exact import SAME_SIMILARITY, in_order
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter

if TYPE_CHECKING:
    from lancedb.query import LanceVectorQueryBuilder

DIM = 16
THRESHOLD = 600
#: a filter keeping more rows than this is searched by LanceDB (approximate on the index)
EXACT_MAX = 60
CENTRES = np.random.default_rng(5).normal(size=(12, DIM))
ROWS = 800


def _vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 12 centres (neighbours exist, as among chunks of a few topics)."""
    rng = np.random.default_rng(seed)
    m = CENTRES[rng.integers(0, 12, size=n)] + 0.35 * rng.normal(size=(n, DIM))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _labels(i: int) -> ChunkLabels:
    """Row ``i``'s labels: a folder of three (``a`` a third of the rows), a tag of every
    tenth row (80: above ``EXACT_MAX``) or 25th (32: below it), a day in 2023 or 2024."""
    tags = tuple(t for t, every in (("ten", 10), ("rare", 25)) if i % every == 0)
    return ChunkLabels(folders=("abc"[i % 3],), tags=tags,
                       day=f"{2023 + i % 2}-0{1 + i % 9}-1{i % 10}")


@pytest.fixture(params=["exact", "approximate"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LanceVectorStore]:
    """800 labelled vectors; ``approximate``: with the IVF_PQ index ``compact`` trains
    past 600. A filter keeping more than ``EXACT_MAX`` rows is LanceDB's to search."""
    store = LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=THRESHOLD,
                             prefilter_max_ids=EXACT_MAX)
    m = _vectors(ROWS, seed=1)
    ids = list(range(1, len(m) + 1))
    store.add(ids, m.tolist(), [_labels(i) for i in ids])
    if request.param == "approximate":
        store.compact()
        assert store.ann_state() is not None
    else:
        assert store.ann_state() is None
    yield store


def _queries(n: int) -> list[list[float]]:
    return [q.tolist() for q in _vectors(n, seed=9)]


def _synchronous(store: LanceVectorStore, query: list[float], k: int, where: str | None = None,
                 passing: int | None = None, refine: int = ann_policy.ANN_REFINE
                 ) -> list[tuple[int, float]]:
    """LanceDB's synchronous query, as every search ran it before (``where``: LanceDB's
    prefilter, which ``passing`` rows pass)."""
    table = store._existing()
    assert table is not None
    search = cast("LanceVectorQueryBuilder", table.search(
        np.asarray(query, dtype=np.float32), vector_column_name="vector"))
    search = search.distance_type("cosine").limit(k).select(["chunk_id", "_distance"])
    if where is not None:
        search = search.where(where, prefilter=True)
    trained = ann_policy.trained_rows(table)
    if trained is not None:
        wide = (ann_policy.probes(trained) if passing is None
                else ann_policy.filtered_probes(trained, passing))
        search = search.nprobes(wide).refine_factor(refine)
    got = search.to_arrow()
    return in_order([(i, min(1.0, max(-1.0, 1.0 - d))) for i, d in
                     zip(got["chunk_id"].to_pylist(), got["_distance"].to_pylist(),
                         strict=True)])


def _exactly(query: list[float], k: int, passes: set[int]) -> list[tuple[int, float]]:
    """The ``k`` rows of ``passes`` nearest ``query`` by exact cosine similarity."""
    m = _vectors(ROWS, seed=1)
    q = np.asarray(query) / np.linalg.norm(query)
    sims = {i: float(m[i - 1] @ q) for i in passes}
    return sorted(sims.items(), key=lambda hit: (-hit[1], hit[0]))[:k]


def _same(got: list[tuple[int, float]], wanted: list[tuple[int, float]]) -> bool:
    return ([i for i, _ in got] == [i for i, _ in wanted]
            and all(abs(a - b) <= SAME_SIMILARITY for (_, a), (_, b) in zip(got, wanted,
                                                                           strict=True)))


#: label filters: more rows than ``EXACT_MAX`` pass (LanceDB's prefiltered search), fewer
#: (exact over their vectors), none
WIDE = [LabelFilter(folders_any=("a",)), LabelFilter(tags_any=("ten",)),
        LabelFilter(day_from="2024-01-01", day_to="2024-12-31"),
        LabelFilter(folders_any=("b",), day_from="2023-01-01", day_to="2023-12-31")]
NARROW = [LabelFilter(tags_any=("rare",)), LabelFilter(tags_all=("ten", "rare"))]
NOTHING = [LabelFilter(folders_any=("z",)), LabelFilter(day_from="2030-01-01")]


def _passing(where: LabelFilter) -> set[int]:
    return {i for i in range(1, ROWS + 1) if where.matches(_labels(i))}


def _counted_trips(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every crossing to LanceDB's event loop from now on."""
    from lancedb.background_loop import BackgroundEventLoop

    trips: list[object] = []
    run = BackgroundEventLoop.run

    def counted(loop: BackgroundEventLoop, future: object) -> object:
        trips.append(future)
        return run(loop, future)

    monkeypatch.setattr(BackgroundEventLoop, "run", counted)
    return trips


def test_a_search_finds_what_the_synchronous_query_finds(store: LanceVectorStore) -> None:
    for query in _queries(12):
        for k in (1, 10, 50):
            assert store.search(query, k) == _synchronous(store, query, k)


def test_a_search_crosses_to_lancedbs_event_loop_once(
    store: LanceVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.search(_queries(1)[0], 10)  # the connection opened
    trips = _counted_trips(monkeypatch)
    for query in _queries(3):
        assert len(store.search(query, 10)) == 10
    assert len(trips) == 3  # the code before: ten a search


def test_searches_at_once_find_what_they_find_one_by_one(store: LanceVectorStore) -> None:
    queries = _queries(24)
    alone = [store.search(q, 10) for q in queries]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: store.search(q, 10), queries * 3))
    assert together == alone * 3


def test_a_search_by_labels_finds_what_the_synchronous_query_finds(
    store: LanceVectorStore
) -> None:
    for query in _queries(6):
        for where in WIDE:
            passes = _passing(where)
            assert len(passes) > EXACT_MAX
            test = label_columns.predicate(where)
            for k in (1, 10):
                got = store.search_labelled(query, k, where)
                assert got == _synchronous(store, query, k, test, len(passes))
                assert got and {i for i, _ in got} <= passes


def test_a_search_by_labels_that_few_rows_pass_is_exact(store: LanceVectorStore) -> None:
    for query in _queries(6):
        for where in NARROW:
            passes = _passing(where)
            assert 0 < len(passes) <= EXACT_MAX
            for k in (1, 10, 50):
                got = store.search_labelled(query, k, where)
                assert got is not None and _same(got, _exactly(query, k, passes))


def test_a_filter_that_nothing_passes_finds_nothing(store: LanceVectorStore) -> None:
    query = _queries(1)[0]
    for where in NOTHING:
        assert store.search_labelled(query, 10, where) == []
    assert store.search(query, 10, allowed_ids=[ROWS + 1, ROWS + 7]) == []


def test_a_search_by_ids_finds_what_it_found_before(store: LanceVectorStore) -> None:
    few = sorted(_passing(NARROW[0]))
    many = list(range(1, ROWS + 1, 2))  # above ``EXACT_MAX``: searched wider, then filtered
    for query in _queries(6):
        for k in (1, 10):
            assert _same(store.search(query, k, allowed_ids=few), _exactly(query, k, set(few)))
            # as before: k widened to twice the limit over the share allowed, re-ranking
            # fewer candidates, and the allowed ones kept (enough of them here)
            wide = max(4 * k, 2 * k * ROWS // len(many))
            before = [hit for hit in _synchronous(store, query, wide, refine=max(1, min(
                ann_policy.ANN_REFINE, 4000 // wide))) if hit[0] % 2 == 1][:k]
            assert len(before) == k
            assert store.search(query, k, allowed_ids=many) == before


def test_a_filtered_search_crosses_to_lancedbs_event_loop_once(
    store: LanceVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = _queries(1)[0]
    store.search(query, 10)  # the connection opened
    trips = _counted_trips(monkeypatch)
    for where in [*WIDE, *NARROW, *NOTHING]:  # the first time: the passing rows counted
        store.search_labelled(query, 10, where)
    # the code before: 11-15 each the first time (5-12 for a filter seen before)
    assert len(trips) == len(WIDE) + len(NARROW) + len(NOTHING)
    for allowed in ([3, 5, 8], list(range(1, ROWS, 2))):
        trips.clear()
        store.search(query, 10, allowed_ids=allowed)
        assert len(trips) == 1  # the code before: 11 and 12 (5 and 12 again)
    trips.clear()
    assert len(store.get([1, 2, ROWS + 1])) == 2
    assert store.labelled()
    assert len(trips) == 2  # the code before: 9 and 5


def test_filtered_searches_at_once_find_what_they_find_one_by_one(
    store: LanceVectorStore
) -> None:
    queries = _queries(8)
    searches = [(q, where) for q in queries for where in [*WIDE, *NARROW]]
    alone = [store.search_labelled(q, 10, where) for q, where in searches]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda s: store.search_labelled(s[0], 10, s[1]),
                                 searches * 2))
    assert together == alone * 2
