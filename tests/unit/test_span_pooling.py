"""Pooling parts of a text out of one model run, and the memory of the texts read lately
(``kbmcp_adapters/embedding/spans.py``), on hand-made token states."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from kbmcp_adapters.embedding.spans import RecentSpans, pool_spans

# "[CLS] alpha beta . gamma delta [SEP]": each token's characters (start, end)
TEXT = "alpha beta. gamma delta"
OFFSETS = [(0, 0), (0, 5), (6, 10), (10, 11), (12, 17), (18, 23), (0, 0)]
# one row per token, each with its own dimension set, so a pooled vector names its rows
HIDDEN = np.eye(len(OFFSETS), dtype=np.float32) * np.arange(1, len(OFFSETS) + 1)[:, None]


def rows_of(vector: object) -> list[int]:
    assert isinstance(vector, np.ndarray)
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0)
    return [k for k in range(len(OFFSETS)) if vector[k] > 1e-9]


def test_the_whole_text_pools_every_token_as_the_model_does() -> None:
    (whole,) = pool_spans(HIDDEN, OFFSETS, [[(0, len(TEXT))]])
    expected = HIDDEN.mean(axis=0)
    assert whole == pytest.approx(expected / np.linalg.norm(expected))


def test_a_part_pools_its_own_tokens_with_the_runs_first_and_last() -> None:
    first, second = pool_spans(HIDDEN, OFFSETS, [[(0, 11)], [(12, 23)]])
    assert rows_of(first) == [0, 1, 2, 3, 6]  # [CLS], alpha, beta, ".", [SEP]
    assert rows_of(second) == [0, 4, 5, 6]
    assert first is not None
    # each row weighs what it weighs in the model's own mean: one token, one share
    assert first[1] / first[2] == pytest.approx(HIDDEN[1, 1] / HIDDEN[2, 2])


def test_context_ranges_are_read_with_the_part() -> None:
    (with_trail,) = pool_spans(HIDDEN, OFFSETS, [[(0, 5), (18, 23)]])
    assert rows_of(with_trail) == [0, 1, 5, 6]


def test_a_token_only_partly_inside_a_range_is_left_out() -> None:
    (part,) = pool_spans(HIDDEN, OFFSETS, [[(7, 17)]])  # from inside "beta" to "gamma"
    assert rows_of(part) == [0, 3, 4, 6]


def test_a_part_the_run_did_not_read_has_no_vector() -> None:
    # the run was cut after "beta" (a window of 4 tokens: [CLS] alpha beta [SEP])
    cut = np.stack([HIDDEN[0], HIDDEN[1], HIDDEN[2], HIDDEN[6]])
    offsets = [(0, 0), (0, 5), (6, 10), (0, 0)]
    read, unread, trail_only = pool_spans(cut, offsets,
                                          [[(0, 10)], [(12, 23)], [(0, 5), (18, 23)]])
    assert read is not None
    # the part is past the window: None, even when its context range was read
    assert unread is None and trail_only is None


def test_the_memory_keeps_the_latest_texts_and_forgets_the_oldest_first() -> None:
    memory = RecentSpans(size=2)
    key = ("a", (((0, 1),),))
    vec: list[NDArray[Any] | None] = [np.ones(2, dtype=np.float32)]
    assert memory.get(key) is None
    memory.put(key, vec)
    assert memory.get(key) is vec
    memory.put(("b", ()), [None])
    assert memory.get(key) is vec  # asked again: now the latest
    memory.put(("c", ()), [])
    assert memory.get(("b", ())) is None  # the oldest unasked went first
    assert memory.get(key) is vec and memory.get(("c", ())) == []
    # a text read with other parts is another entry
    assert memory.get(("a", (((0, 2),),))) is None

