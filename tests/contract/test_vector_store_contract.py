"""The VectorStore contract: the same assertions over the fake and LanceDB."""

from __future__ import annotations

import math

import pytest

from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter
from kbmcp_core.models import Vector
from kbmcp_core.ports import VectorStore
from tests.contract.conftest import DIM, JointUnderTest


def axis(i: int, tilt: float = 0.0) -> Vector:
    """A unit vector near axis ``i``; ``tilt`` leans it towards the next axis."""
    v = [0.0] * DIM
    v[i % DIM] = math.cos(tilt)
    v[(i + 1) % DIM] = math.sin(tilt)
    return v


def close(a: Vector, b: Vector) -> bool:
    return a == pytest.approx(b, abs=1e-6)


def test_added_vectors_read_back_and_unknown_ids_are_skipped(vectors: VectorStore) -> None:
    vectors.add([10, 11, 12], [axis(0), axis(1, 0.3), axis(2)])
    got = vectors.get({11, 12, 999})
    assert set(got) == {11, 12}
    assert close(got[11], axis(1, 0.3)) and close(got[12], axis(2))
    assert vectors.ids() == {10, 11, 12}
    assert vectors.count() == 3
    assert vectors.get(set()) == {}


def test_an_empty_store_has_nothing(vectors: VectorStore) -> None:
    assert vectors.ids() == set()
    assert vectors.count() == 0
    assert vectors.get({1}) == {}
    assert vectors.search(axis(0), 5) == []


def test_adding_an_existing_id_replaces_its_vector(vectors: VectorStore) -> None:
    vectors.add([1, 2], [axis(0), axis(1)])
    vectors.add([1], [axis(3)])
    assert vectors.count() == 2
    assert close(vectors.get({1})[1], axis(3))


def test_appended_vectors_read_back_and_are_found_like_added_ones(vectors: VectorStore
                                                                   ) -> None:
    vectors.append([1, 2], [axis(0), axis(1)])  # the first write creates the store
    vectors.append([3, 4, 3], [axis(2), axis(0, 0.2), axis(2, 0.5)])  # the last 3 wins
    vectors.add([1], [axis(0, 0.9)])  # an upsert after appends still replaces
    vectors.append([], [])
    assert vectors.ids() == {1, 2, 3, 4} and vectors.count() == 4
    assert close(vectors.get({3})[3], axis(2, 0.5)) and close(vectors.get({1})[1], axis(0, 0.9))
    assert [cid for cid, _ in vectors.search(axis(0), 2)] == [4, 1]


def test_an_id_appended_while_held_is_stored_twice(vectors: VectorStore) -> None:
    # the reason ``append`` is only for ids the store does not hold: the fake does what
    # LanceDB does, so an index run that appends a held id fails its tests on either
    vectors.append([1, 2], [axis(0), axis(1)])
    vectors.append([1], [axis(0)])
    assert vectors.ids() == {1, 2} and vectors.count() == 3
    vectors.delete({1})  # deleting the id removes both rows
    assert vectors.ids() == {2} and vectors.count() == 1


def test_deleted_vectors_are_gone_and_unknown_ids_are_ignored(vectors: VectorStore) -> None:
    vectors.add([1, 2, 3], [axis(0), axis(1), axis(2)])
    vectors.delete({2, 404})
    assert vectors.ids() == {1, 3}
    assert vectors.get({2}) == {}
    assert 2 not in {cid for cid, _ in vectors.search(axis(1), 5)}
    vectors.delete(set())
    assert vectors.count() == 2


def test_search_is_nearest_first_by_cosine_similarity(vectors: VectorStore) -> None:
    vectors.add([1, 2, 3, 4], [axis(0), axis(0, 0.2), axis(0, 0.9), axis(4)])
    hits = vectors.search(axis(0), 3)
    assert [cid for cid, _ in hits] == [1, 2, 3]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert hits[1][1] == pytest.approx(math.cos(0.2), abs=1e-5)
    assert hits[2][1] == pytest.approx(math.cos(0.9), abs=1e-5)
    assert vectors.search(axis(0), 0) == []


def test_search_keeps_to_the_allowed_ids_before_the_limit(vectors: VectorStore) -> None:
    vectors.add([1, 2, 3, 4], [axis(0), axis(0, 0.2), axis(0, 0.9), axis(4)])
    assert [cid for cid, _ in vectors.search(axis(0), 1, allowed_ids={3, 4})] == [3]
    assert vectors.search(axis(0), 5, allowed_ids=set()) == []


def test_reset_empties_the_store_and_it_fills_again(vectors: VectorStore) -> None:
    vectors.add([1, 2], [axis(0), axis(1)])
    vectors.reset()
    assert vectors.ids() == set() and vectors.count() == 0
    vectors.add([5], [axis(5)])
    assert vectors.ids() == {5}
    assert close(vectors.get({5})[5], axis(5))


def test_the_fingerprint_changes_when_the_vectors_change(vectors: VectorStore) -> None:
    empty = vectors.fingerprint()
    vectors.add([1, 2], [axis(0), axis(1)])
    filled = vectors.fingerprint()
    assert filled is not None and filled != empty
    assert vectors.fingerprint() == filled  # reading does not change it
    vectors.delete({1})
    assert vectors.fingerprint() not in (filled, None)


def test_compact_keeps_every_vector(vectors: VectorStore) -> None:
    for i in range(5):
        vectors.add([i], [axis(i)])
    vectors.delete({0})
    vectors.compact()
    assert vectors.ids() == {1, 2, 3, 4}
    assert close(vectors.get({4})[4], axis(4))


def _by_labels(vectors: VectorStore, query: Vector, limit: int, where: LabelFilter
               ) -> list[tuple[int, float]]:
    found = vectors.search_labelled(query, limit, where)
    assert found is not None, "the store is labelled"
    return found


def _labelled_kind(vectors: VectorStore) -> None:
    if isinstance(vectors, JointUnderTest):
        pytest.skip("a joint view filters each collection by ids: never labelled")


def test_labels_filter_the_search_and_follow_each_write(vectors: VectorStore) -> None:
    _labelled_kind(vectors)
    notes, ops = ChunkLabels(("notes",), ("ops",), "2024-03-01"), ChunkLabels(("misc",))
    vectors.add([1, 2, 3], [axis(0), axis(0, 0.2), axis(0, 0.4)], [notes, ops, notes])
    vectors.append([4], [axis(0, 0.6)], [ops])
    assert vectors.labelled()
    in_notes = LabelFilter(folders_any=("notes",))
    assert [cid for cid, _ in _by_labels(vectors, axis(0), 5, in_notes)] == [1, 3]
    assert [cid for cid, _ in _by_labels(vectors, axis(0), 1, in_notes)] == [1]
    dated = LabelFilter(tags_all=("ops",), day_from="2024-01-01", day_to="2024-12-31")
    assert [cid for cid, _ in _by_labels(vectors, axis(0), 5, dated)] == [1, 3]
    assert _by_labels(vectors, axis(0), 5, LabelFilter(folders_any=("nowhere",))) == []
    # only the labels change: the vector stays, the chunk moves in and out of the filter
    vectors.relabel({2: notes, 3: ops, 99: notes})
    assert [cid for cid, _ in _by_labels(vectors, axis(0), 5, in_notes)] == [1, 2]
    assert close(vectors.get({2})[2], axis(0, 0.2)) and vectors.count() == 4
    vectors.delete({1})
    assert [cid for cid, _ in _by_labels(vectors, axis(0), 5, in_notes)] == [2]


def test_vectors_written_without_labels_leave_the_store_unlabelled(vectors: VectorStore
                                                                    ) -> None:
    _labelled_kind(vectors)
    assert vectors.labelled()  # nothing stored lacks labels
    vectors.add([1, 2], [axis(0), axis(1)], [ChunkLabels(("a",)), ChunkLabels()])
    vectors.append([3], [axis(2)])
    assert not vectors.labelled()
    assert vectors.search_labelled(axis(2), 5, LabelFilter(folders_any=("a",))) is None
    vectors.relabel({3: ChunkLabels(("a",))})
    assert vectors.labelled()
    assert [cid for cid, _ in _by_labels(vectors,
        axis(2), 5, LabelFilter(folders_any=("a",)))] == [3, 1]
