"""A filtered vector search over more ids than it reads exactly widens within a cap
(decision 0058): at most ``POST_FILTER_MAX_K`` candidates, at most ``POST_FILTER_REFINE``
re-ranked by their full vectors, then LanceDB's own prefilter; it still returns the limit
whenever enough rows pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbmcp_adapters.vectors import nearest
from kbmcp_adapters.vectors.lance_store import (
    ALLOWED_ROWS_KEPT,
    DEFAULT_PREFILTER_MAX_IDS,
    LanceVectorStore,
)
from tests.integration.test_vector_store import DIM, as_lists, unit_vectors


def test_a_filter_past_the_widest_search_still_fills_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,600 rows, the 500 allowed all farther than the 2,000 nearest: the widening stops
    at 2,000 candidates and the prefilter finds the 10 nearest allowed ones."""
    store = LanceVectorStore(tmp_path / "vectors", DIM, prefilter_max_ids=0)
    vectors = unit_vectors(2600, seed=11)
    store.add(list(range(2600)), as_lists(vectors))
    query = vectors[0]
    ranking = np.argsort(-(vectors @ query)).tolist()
    asked: list[tuple[int, int]] = []
    real = nearest.nearest_async

    async def spy(table: Any, q: Any, k: int, trained: int | None, refine: int = 10,
                  **filtered: Any) -> list[tuple[int, float]]:
        asked.append((k, refine))
        return await real(table, q, k, trained, refine, **filtered)

    monkeypatch.setattr(nearest, "nearest_async", spy)
    hits = store.search([float(x) for x in query], limit=10, allowed_ids=set(ranking[2100:]))

    assert [chunk_id for chunk_id, _ in hits] == ranking[2100:2110]
    assert max(k for k, _ in asked) == nearest.POST_FILTER_MAX_K
    assert all(k * refine <= max(nearest.POST_FILTER_REFINE, 10 * k) for k, refine in asked)
    assert [refine for k, refine in asked if k == nearest.POST_FILTER_MAX_K] == [2]


def test_a_filter_with_enough_near_rows_is_answered_by_the_widened_search(
        tmp_path: Path) -> None:
    store = LanceVectorStore(tmp_path / "vectors", DIM, prefilter_max_ids=0)
    vectors = unit_vectors(2000, seed=12)
    store.add(list(range(2000)), as_lists(vectors))
    query = vectors[0]
    ranking = np.argsort(-(vectors @ query)).tolist()
    allowed = set(ranking[::3])

    hits = store.search([float(x) for x in query], limit=20, allowed_ids=allowed)

    assert [chunk_id for chunk_id, _ in hits] == ranking[::3][:20]


def test_the_exact_path_rises_with_the_table() -> None:
    rise = nearest.exact_max_ids
    assert rise(20_000, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT) == 4_000
    assert rise(100_000, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT) == 4_000
    assert rise(500_000, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT) == 7_812
    assert rise(1_000_000, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT) == 15_625
    assert rise(5_000_000, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT) == ALLOWED_ROWS_KEPT
