"""``compact`` rewrites the vector table only when it pays: an incremental run's few rows
(deleted and appended) leave every stored data file as it is, run after run, and are
found at once; many rows, many runs' fragments or many deletions are compacted and folded
into the approximate index as before (decision 0058's addendum "PostgreSQL's first
index")."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from kbmcp_adapters.vectors.compaction import LOOSE_FRAGMENTS
from kbmcp_adapters.vectors.lance_store import LanceVectorStore

DIM = 16
THRESHOLD = 600
ROWS = 1000


def _vectors(n: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, DIM))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _data_files(root: Path) -> dict[str, int]:
    folder = root / "chunks.lance" / "data"
    return {p.name: p.stat().st_size for p in folder.iterdir()}


def _unindexed(root: Path) -> int:
    import lancedb

    table = lancedb.connect(str(root)).open_table("chunks")
    name = next(i.name for i in table.list_indices() if i.name.startswith("vector_ann_"))
    stats = table.index_stats(name)
    assert stats is not None
    return int(stats.num_unindexed_rows)


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[LanceVectorStore, Path]:
    """A table of 1,000 rows compacted once: one fragment under an approximate index."""
    root = tmp_path / "vectors"
    store = LanceVectorStore(root, DIM, ann_min_rows=THRESHOLD)
    store.add(list(range(1, ROWS + 1)), _vectors(ROWS, seed=1).tolist())
    store.compact(keep_versions_for=timedelta(0))
    assert store.ann_state() == (ROWS, ROWS)
    return store, root


def _run(store: LanceVectorStore, first: int, n: int, seed: int) -> list[list[float]]:
    """What an incremental run does to the vectors: ``n`` of the table's first rows
    deleted (from id ``first - 20_000 + 1``), ``n`` appended (ids from ``first``), then
    ``compact``."""
    store.delete(range(first - 20_000 + 1, first - 20_000 + 1 + n))
    vectors = _vectors(n, seed).tolist()
    store.append(list(range(first, first + n)), vectors)
    store.compact()
    return vectors


def test_small_runs_rewrite_nothing_and_their_rows_are_found(
        indexed: tuple[LanceVectorStore, Path]) -> None:
    store, root = indexed
    for run in range(3):  # compacting used to merge the table every other run
        before = _data_files(root)
        first = 20_000 + 10 * run
        appended = _run(store, first, 10, seed=10 + run)
        after = _data_files(root)
        assert {k: v for k, v in after.items() if k in before} == before  # none rewritten
        assert len(after) == len(before) + 1  # the run's own append, nothing else
        for cid, vector in enumerate(appended, start=first):
            assert store.search(vector, 1)[0][0] == cid
    assert store.count() == ROWS
    assert _unindexed(root) == 30


def test_many_rows_are_compacted_and_indexed(indexed: tuple[LanceVectorStore, Path]) -> None:
    store, root = indexed
    _run(store, 20_000, 20, seed=10)
    assert _unindexed(root) == 20  # left loose
    _run(store, 20_020, 80, seed=11)  # 100 rows loose: past 5 % of the table
    assert _unindexed(root) == 0


def test_many_small_runs_are_compacted(indexed: tuple[LanceVectorStore, Path]) -> None:
    store, root = indexed
    for run in range(LOOSE_FRAGMENTS - 1):  # each run appends a fragment
        _run(store, 20_000 + 2 * run, 2, seed=20 + run)
    assert _unindexed(root) == 2 * (LOOSE_FRAGMENTS - 1)
    _run(store, 20_100, 2, seed=50)  # one fragment too many
    assert _unindexed(root) == 0
