"""The approximate (IVF_PQ) vector index (issue 14, item 4), at a small threshold: built by
``compact`` once the table passes it, results stay right as rows are added and deleted,
trained again when the table has doubled, dropped when it has shrunk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbmcp_adapters.vectors.lance_store import LanceVectorStore

DIM = 16
THRESHOLD = 600


CENTRES = np.random.default_rng(0).normal(size=(12, DIM))


def _vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 12 centres: neighbours exist, like chunks of a few topics."""
    rng = np.random.default_rng(seed)
    centres = CENTRES
    m = centres[rng.integers(0, 12, size=n)] + 0.35 * rng.normal(size=(n, DIM))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _exact(rows: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[int]:
    ids = sorted(rows)
    matrix = np.stack([rows[i] for i in ids])
    sims = matrix @ query / np.linalg.norm(query)
    order = sorted(range(len(ids)), key=lambda j: (-sims[j], ids[j]))
    return [ids[j] for j in order[:k]]


def _recall(store: LanceVectorStore, rows: dict[int, np.ndarray], queries: np.ndarray) -> float:
    found = [len({cid for cid, _ in store.search(q.tolist(), 10)} & set(_exact(rows, q, 10)))
             for q in queries]
    return sum(found) / (10 * len(queries))


@pytest.fixture
def store(tmp_path: Path) -> LanceVectorStore:
    return LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=THRESHOLD)


def test_below_the_threshold_searches_stay_exact(store: LanceVectorStore) -> None:
    m = _vectors(THRESHOLD - 1, seed=1)
    store.add(list(range(1, len(m) + 1)), m.tolist())
    store.compact()
    assert store.ann_state() is None


def test_the_index_is_built_kept_right_through_changes_and_retrained(
    store: LanceVectorStore,
) -> None:
    m = _vectors(800, seed=2)
    rows = {i + 1: v for i, v in enumerate(m)}
    store.add(list(rows), [v.tolist() for v in rows.values()])
    assert store.ann_state() is None  # adding alone builds nothing: compact does
    store.compact()
    assert store.ann_state() == (800, 800)
    queries = _vectors(40, seed=3)
    assert _recall(store, rows, queries) >= 0.95

    # rows added after training are found at once, before any compaction
    fresh = _vectors(60, seed=4)
    new_ids = list(range(10_001, 10_061))
    store.add(new_ids, fresh.tolist())
    rows.update(zip(new_ids, fresh, strict=True))
    for cid, v in zip(new_ids[:20], fresh[:20], strict=True):
        assert store.search(v.tolist(), 1)[0][0] == cid
    # deleted rows are never returned, though the index still holds them
    gone = list(range(1, 301))
    store.delete(gone)
    for cid in gone:
        rows.pop(cid)
    for v in m[:20]:
        assert not {cid for cid, _ in store.search(v.tolist(), 10)} & set(gone)
    assert _recall(store, rows, queries) >= 0.95
    store.compact()  # 60 new rows (< 10 %) and 560 in all: folded in, not trained again
    assert store.ann_state() == (800, 560)
    assert _recall(store, rows, queries) >= 0.95

    # doubled since training: trained again on what is there now
    more = _vectors(1100, seed=5)
    more_ids = list(range(20_001, 21_101))
    store.add(more_ids, more.tolist())
    rows.update(zip(more_ids, more, strict=True))
    store.compact()
    assert store.ann_state() == (1660, 1660)
    assert _recall(store, rows, queries) >= 0.95

    # more than a tenth of the rows new: trained again rather than folded in
    extra = _vectors(200, seed=6)
    extra_ids = list(range(30_001, 30_201))
    store.add(extra_ids, extra.tolist())
    rows.update(zip(extra_ids, extra, strict=True))
    store.compact()
    assert store.ann_state() == (1860, 1860)
    assert _recall(store, rows, queries) >= 0.95

    # shrunk below half the threshold: the index is dropped, search is exact again
    keep = set(list(rows)[:250])
    store.delete([cid for cid in rows if cid not in keep])
    rows = {cid: v for cid, v in rows.items() if cid in keep}
    store.compact()
    assert store.ann_state() is None
    assert _recall(store, rows, queries) == 1.0


def test_an_index_trained_on_a_capped_sample_finds_the_exact_neighbours(
        store: LanceVectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large table's index trains on a sample of ``ANN_MIN_SAMPLE_RATE`` rows a
    partition, not LanceDB's 256 (decision 0058's addendum "the training's sample"); a
    search still finds exact search's ten nearest. Here the cap binds at 6,000 rows: 77
    partitions of 64 rows, a sample of 4,928."""
    from kbmcp_adapters.vectors import ann_policy

    monkeypatch.setattr(ann_policy, "ANN_SAMPLE_ROWS", 1_000)
    assert ann_policy.partitions(6_000) * ann_policy.sample_rate(6_000) == 4_928
    m = _vectors(6_000, seed=7)
    rows = {i + 1: v for i, v in enumerate(m)}
    store.append(list(rows), [v.tolist() for v in rows.values()])
    store.compact()
    assert store.ann_state() == (6_000, 6_000)
    assert _recall(store, rows, _vectors(40, seed=8)) >= 0.95


BUILD_SMALL_INDEX = """
import sys
import numpy as np
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
m = np.random.default_rng(3).normal(size=(700, 16)).astype(np.float32)
m /= np.linalg.norm(m, axis=1, keepdims=True)
store = LanceVectorStore(sys.argv[1], 16, ann_min_rows=600)
store.add(list(range(1, 701)), m.tolist())
store.compact()
assert store.ann_state() is not None
"""


def test_training_the_index_on_a_small_table_prints_no_lancedb_warnings(tmp_path: Path) -> None:
    """LanceDB's KMeans complains on stderr about empty clusters when it trains on a small
    table; kb-mcp's stderr (the server's log) stays free of that noise unless the user asks
    for LanceDB's warnings with LANCEDB_LOG."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, env.get("PYTHONPATH")]))
    quiet = subprocess.run([sys.executable, "-c", BUILD_SMALL_INDEX, str(tmp_path / "a")],
                           env=env, capture_output=True, text=True, timeout=120, check=False)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "WARN" not in quiet.stderr, quiet.stderr[-2000:]
    loud = subprocess.run([sys.executable, "-c", BUILD_SMALL_INDEX, str(tmp_path / "b")],
                          env={**env, "LANCEDB_LOG": "warn"}, capture_output=True, text=True,
                          timeout=120, check=False)
    assert loud.returncode == 0 and "WARN" in loud.stderr  # the user's choice is kept
