"""Parts of a text read in context: token states pooled by character ranges (decision 0028,
addendum of session 11), and a small memory of the texts read lately.

A mean-pooled sentence model (MiniLM) makes a text's vector as the mean of its token
states. The mean of the states of some of those tokens (a paragraph's, with the heading
trail's and the run's [CLS] and [SEP], as the paragraph on its own would have) is that
part's vector as read inside the whole: "late chunking". It costs no model run beyond the
one the whole text takes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kbmcp_core.ports import SpanGroup

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: texts whose part vectors are remembered (a few MB: float32, 4 paragraphs each typically)
RECENT_TEXTS = 1024

_Key = tuple[str, tuple[tuple[tuple[int, int], ...], ...]]
K = TypeVar("K")
V = TypeVar("V")


def pool_spans(hidden: NDArray[Any], offsets: Sequence[tuple[int, int]],
               groups: Sequence[SpanGroup]) -> list[NDArray[Any] | None]:
    """For each group of character ranges, the unit mean of the states of the tokens lying
    inside one of its ranges, with the first and last tokens ([CLS], [SEP]); None for a group
    whose last range (the part itself) has no token the run read (past the model's window)."""
    import numpy as np

    n = min(len(offsets), hidden.shape[0])
    inner = [(k, a, b) for k, (a, b) in enumerate(offsets[:n]) if 0 < k < n - 1 and b > a]
    out: list[NDArray[Any] | None] = []
    for group in groups:
        start, end = group[-1]  # the part itself; ranges before it are read with it
        if not any(start <= a and b <= end for _, a, b in inner):
            out.append(None)
            continue
        picked = [k for k, a, b in inner if any(s <= a and b <= e for s, e in group)]
        rows = hidden[[0, *picked, n - 1]].astype(np.float32)
        v = rows.mean(axis=0)
        norm = float(np.linalg.norm(v))
        out.append(v / norm if norm else v)
    return out


class Recent(Generic[K, V]):
    """The values of the keys asked for lately, the oldest forgotten first (thread-safe)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


class RecentSpans(Recent[_Key, "list[NDArray[Any] | None]"]):
    """The part vectors of the texts read lately."""

    def __init__(self, size: int = RECENT_TEXTS) -> None:
        super().__init__(size)


__all__ = ["RECENT_TEXTS", "Recent", "RecentSpans", "pool_spans"]
