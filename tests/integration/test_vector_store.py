"""LanceVectorStore against a real LanceDB directory in tmp_path."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.errors import StoreError

DIM = 32


def unit_vectors(count: int, dim: int = DIM, seed: int = 0) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def as_lists(matrix: npt.NDArray[np.float32]) -> list[list[float]]:
    return [[float(x) for x in row] for row in matrix]


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@pytest.fixture
def store(tmp_path: Path) -> LanceVectorStore:
    return LanceVectorStore(tmp_path / "vectors", DIM)


def test_search_returns_nearest_first_with_similarity_one_for_the_same_vector(
    store: LanceVectorStore,
) -> None:
    vectors = unit_vectors(100)
    store.add(list(range(100)), as_lists(vectors))

    hits = store.search(as_lists(vectors[42:43])[0], limit=5)

    assert len(hits) == 5
    assert hits[0][0] == 42
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    expected = np.argsort(-(vectors @ vectors[42]))[:5].tolist()
    assert [chunk_id for chunk_id, _ in hits] == expected
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[1] < 0.99


def test_get_returns_the_exact_vectors_and_skips_unknown_ids(store: LanceVectorStore) -> None:
    vectors = as_lists(unit_vectors(30))
    store.add(list(range(100, 130)), vectors)

    got = store.get({100, 117, 129, 999})

    assert set(got) == {100, 117, 129}
    assert got[117] == vectors[17]
    assert got[129] == vectors[29]
    assert all(isinstance(x, float) for x in got[100])


def test_ids_and_count_cover_every_row(store: LanceVectorStore) -> None:
    store.add(list(range(250)), as_lists(unit_vectors(250)))

    assert store.ids() == set(range(250))
    assert store.count() == 250


def test_deleted_vectors_are_never_found_again(store: LanceVectorStore) -> None:
    vectors = unit_vectors(50)
    store.add(list(range(50)), as_lists(vectors))

    store.delete({7, 8, 12345})

    hits = store.search(as_lists(vectors[7:8])[0], limit=50)
    assert 7 not in {chunk_id for chunk_id, _ in hits}
    assert 8 not in store.ids()
    assert store.get({7, 8}) == {}
    assert store.count() == 48


def test_adding_an_existing_id_replaces_it(store: LanceVectorStore) -> None:
    old, new = as_lists(unit_vectors(2, seed=3))
    store.add([1, 2], [old, old])

    store.add([1, 3], [new, new])

    assert store.count() == 3
    assert store.get({1})[1] == new
    assert [chunk_id for chunk_id, _ in store.search(old, limit=3)].count(1) == 1


def test_a_repeated_id_in_one_batch_keeps_the_last_vector(store: LanceVectorStore) -> None:
    first, second = as_lists(unit_vectors(2, seed=4))

    store.add([5, 5], [first, second])
    store.add([6, 6], [first, second])

    assert store.count() == 2
    assert store.get({5, 6}) == {5: second, 6: second}


@pytest.mark.parametrize("prefilter_max_ids", [10_000, 0], ids=["prefilter", "post-filter"])
def test_filtered_search_fills_the_limit_when_the_nearest_rows_are_excluded(
    tmp_path: Path, prefilter_max_ids: int
) -> None:
    store = LanceVectorStore(tmp_path / "vectors", DIM, prefilter_max_ids=prefilter_max_ids)
    vectors = unit_vectors(2000, seed=7)
    store.add(list(range(2000)), as_lists(vectors))
    query = vectors[0]
    ranking = np.argsort(-(vectors @ query)).tolist()
    allowed = set(ranking[50:])

    hits = store.search([float(x) for x in query], limit=10, allowed_ids=allowed)

    assert [chunk_id for chunk_id, _ in hits] == ranking[50:60]


def test_filtered_search_returns_what_exists_when_fewer_rows_are_allowed(
    tmp_path: Path,
) -> None:
    store = LanceVectorStore(tmp_path / "vectors", DIM, prefilter_max_ids=0)
    vectors = unit_vectors(300, seed=8)
    store.add(list(range(300)), as_lists(vectors))

    hits = store.search(as_lists(vectors[:1])[0], limit=10, allowed_ids={3, 4, 5000})

    assert sorted(chunk_id for chunk_id, _ in hits) == [3, 4]
    assert store.search(as_lists(vectors[:1])[0], limit=10, allowed_ids=set()) == []


def test_reset_empties_the_store_and_it_can_be_filled_again(store: LanceVectorStore) -> None:
    vectors = as_lists(unit_vectors(20))
    store.add(list(range(20)), vectors)

    store.reset()

    assert store.count() == 0
    assert store.ids() == set()
    assert store.search(vectors[0], limit=5) == []
    store.add([99], [vectors[0]])
    assert store.ids() == {99}


def test_a_missing_store_reads_as_empty_and_creates_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "not-yet"
    store = LanceVectorStore(directory, DIM)
    query = as_lists(unit_vectors(1))[0]

    assert store.ids() == set()
    assert store.count() == 0
    assert store.search(query, limit=5) == []
    assert store.search(query, limit=5, allowed_ids={1, 2}) == []
    assert store.get({1}) == {}
    store.delete({1})
    store.reset()
    store.compact()
    assert not directory.exists()


def test_compact_keeps_every_vector_and_reclaims_old_versions(tmp_path: Path) -> None:
    directory = tmp_path / "vectors"
    store = LanceVectorStore(directory, DIM)
    vectors = as_lists(unit_vectors(500))
    for _ in range(8):
        store.add(list(range(500)), vectors)
    grown = dir_bytes(directory)

    store.compact(keep_versions_for=timedelta(milliseconds=1))

    assert dir_bytes(directory) < grown / 3
    assert store.ids() == set(range(500))
    assert store.get({123})[123] == vectors[123]
    assert store.search(vectors[321], limit=1)[0][0] == 321


def test_wrong_dimension_is_a_store_error(store: LanceVectorStore) -> None:
    with pytest.raises(StoreError, match="32 dimensions"):
        store.add([1], [[0.5] * 16])
    with pytest.raises(StoreError, match="32 dimensions"):
        store.add([1, 2], [[0.5] * 32, [0.5] * 31])
    store.add([1], as_lists(unit_vectors(1)))
    with pytest.raises(StoreError, match="32 dimensions"):
        store.search([1.0] * 8, limit=3)
    assert store.ids() == {1}


def test_a_table_of_another_dimension_asks_for_a_rebuild(tmp_path: Path) -> None:
    LanceVectorStore(tmp_path / "vectors", DIM).add([1], as_lists(unit_vectors(1)))
    other = LanceVectorStore(tmp_path / "vectors", 8)

    with pytest.raises(StoreError, match="--force"):
        other.search(as_lists(unit_vectors(1, dim=8))[0], limit=1)

    other.reset()
    other.add([2], as_lists(unit_vectors(1, dim=8)))
    assert other.ids() == {2}


def test_a_reader_sees_another_writers_changes(tmp_path: Path) -> None:
    reader = LanceVectorStore(tmp_path / "vectors", DIM)
    writer = LanceVectorStore(tmp_path / "vectors", DIM)
    vectors = as_lists(unit_vectors(10))
    assert reader.count() == 0

    writer.add(list(range(10)), vectors)
    assert reader.search(vectors[3], limit=1)[0][0] == 3

    writer.reset()
    writer.add([77], [vectors[3]])
    assert reader.ids() == {77}
