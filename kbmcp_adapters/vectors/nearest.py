"""LanceDB's k-NN queries, unfiltered and filtered by a set of allowed chunk ids (decision
0058): how far a filtered search widens, and what it falls back on.

A filter keeping few ids is searched exactly over their vectors (``lance_store``'s
``_exact``, kept per table version). Above that, ``post_filtered`` asks the approximate
index for more candidates than the limit (twice the limit over the allowed share) and
keeps the allowed ones, widening while too few pass, but at most ``POST_FILTER_MAX_K``
candidates, of which at most ``POST_FILTER_REFINE`` are re-ranked by their full vectors
(``ann_policy.ANN_REFINE`` × k below that): at a million rows the unbounded widening
re-ranked 100,000 full vectors for a 1 % filter (16.7 s at p95). When the widest search
still holds fewer than ``limit`` allowed candidates, the allowed ids become LanceDB's own
prefilter (``chunk_id IN (...)``), which returns the limit whenever enough ids pass.

A filter the chunks' labels express (``kbmcp_core.chunk_labels``: folders, tags, a date
range, category, topic) is LanceDB's prefilter on the indexed label columns instead
(``labelled``): no list of ids at all (decision 0058's addendum, "filters in the vector
table").

Every search is one coroutine of LanceDB's async API (these functions, awaited in
``lance_store``'s one trip): the synchronous API crosses to LanceDB's one event-loop thread
and back for every step (ten crossings an unfiltered search: opening the table, its schema
four times, its indexes, the query and its batches; more for a filtered one: its version
and rows, the passing rows counted, each widening), and each crossing waits for the
interpreter's lock twice; under many clients those waits, not LanceDB's work, were most of
a search's time (decision 0057's addenda, "a search under fifty clients" and "filtered
searches in one trip").

Ids are handed to LanceDB as a typed expression (``id_filter``), not SQL text: at a million
rows LanceDB took seconds to parse and plan the text of 100,000 ids (decision 0058's
addendum), and the same expression serves every query of a repeated filter.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from kbmcp_adapters.vectors import ann_policy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from lancedb.expr import Expr
    from lancedb.table import AsyncTable

__all__ = ["EXACT_SHARE", "POST_FILTER_MAX_K", "POST_FILTER_REFINE", "exact_max_ids",
           "id_filter", "in_predicate", "labelled", "nearest_async", "post_filtered",
           "prefiltered"]

ID = "chunk_id"
VECTOR = "vector"
DISTANCE = "_distance"
#: The widest a filtered search asks the approximate index for, in candidates.
POST_FILTER_MAX_K = 2_000
#: The most candidates a widened search re-ranks by their full vectors (k × refine).
POST_FILTER_REFINE = 4_000
#: A filter keeping up to this share of a large table's rows is searched exactly over its
#: vectors (at most the kept rows' budget, ``lance_store.ALLOWED_ROWS_KEPT``).
EXACT_SHARE = 1 / 64


def exact_max_ids(rows: int, floor: int, kept: int) -> int:
    """The most allowed ids searched exactly in a table of ``rows``: ``floor`` (0019's
    measurement at 20k rows), raised with the table to ``EXACT_SHARE`` of its rows, never
    past ``kept`` (the vectors a store keeps for repeated filters)."""
    return max(floor, min(kept, int(rows * EXACT_SHARE)))


def in_predicate(ids: list[int]) -> str:
    """``chunk_id IN (...)`` as SQL text (a delete's predicate)."""
    return f"{ID} IN ({','.join(str(int(i)) for i in ids)})"


def id_filter(ids: list[int]) -> Expr:
    """``chunk_id IN (...)`` as LanceDB's typed expression: nothing to parse. The last few
    are kept (building one costs about 3 µs an id: 0.3 s for 100,000), so a repeated
    filter's queries share it."""
    return _id_filter(tuple(int(i) for i in ids))


#: Expressions kept: a filter's ids (the recent filters of a session) at a few MB each.
ID_FILTERS_KEPT = 4


@functools.lru_cache(maxsize=ID_FILTERS_KEPT)
def _id_filter(ids: tuple[int, ...]) -> Expr:
    from lancedb.expr import col

    return col(ID).isin(ids)


def _rows(data: pa.Table) -> list[tuple[int, float]]:
    return [
        (chunk_id, min(1.0, max(-1.0, 1.0 - distance)))
        for chunk_id, distance in zip(
            data.column(ID).to_pylist(), data.column(DISTANCE).to_pylist(), strict=True
        )
    ]


async def nearest_async(table: AsyncTable, query: npt.NDArray[np.float32], k: int,
                        trained: int | None, refine: int = ann_policy.ANN_REFINE, *,
                        where: str | Expr | None = None, passing: int | None = None
                        ) -> list[tuple[int, float]]:
    """The ``k`` rows nearest ``query`` (those passing ``where``, LanceDB's prefilter, when
    given) on LanceDB's event loop: cosine, ``k`` rows, the approximate index probed as
    ``ann_policy.probed`` sets it when ``trained`` (the rows it was trained on; ``passing``:
    the rows the prefilter keeps, ``ann_policy.filtered_probes``) with ``refine`` × k
    candidates re-ranked by their full vectors. Built as LanceDB's synchronous API hands
    its query to its async one, so the same hits with the same similarities, without
    crossing threads at each step."""
    search = table.query()
    if where is not None:
        search = search.where(where)  # a prefilter, as the synchronous ``where`` makes it
    vectors = (search.nearest_to(query).column(VECTOR).distance_type("cosine").limit(k)
               .select([ID, DISTANCE]))
    return _rows(await ann_policy.probed(vectors, trained, refine, passing).to_arrow())


async def post_filtered(table: AsyncTable, query: npt.NDArray[np.float32], limit: int,
                        allowed: set[int], total: int, trained: int | None
                        ) -> list[tuple[int, float]]:
    """Widen k (at most ``POST_FILTER_MAX_K``) until ``limit`` allowed hits are found or the
    whole table (``total`` rows) was ranked; then the allowed ids as LanceDB's prefilter."""
    if total == 0:
        return []
    share = min(1.0, len(allowed) / total)
    k = min(total, max(4 * limit, math.ceil(2 * limit / share)))
    while True:
        k = min(k, POST_FILTER_MAX_K, total)
        hits = await nearest_async(table, query, k, trained,
                                   max(1, min(ann_policy.ANN_REFINE, POST_FILTER_REFINE // k)))
        kept = [hit for hit in hits if hit[0] in allowed]
        if len(kept) >= limit or len(hits) < k or k >= total:
            return kept[:limit]
        if k >= POST_FILTER_MAX_K:
            return await prefiltered(table, query, limit, sorted(allowed), trained)
        k *= 4


async def labelled(table: AsyncTable, query: npt.NDArray[np.float32], limit: int,
                   predicate: str, passing: int, trained: int | None
                   ) -> list[tuple[int, float]]:
    """The ``limit`` rows nearest ``query`` whose labels pass ``predicate`` (SQL on the
    label columns, ``labels.predicate``; ``passing`` rows do): LanceDB's prefilter reads
    the columns' scalar indexes, then searches the rows they keep (on the approximate
    index when the table has one, probed wide enough to scan them,
    ``ann_policy.filtered_probes``; exact below it)."""
    return await nearest_async(table, query, limit, trained, where=predicate,
                               passing=passing)


async def prefiltered(table: AsyncTable, query: npt.NDArray[np.float32], limit: int,
                      allowed: list[int], trained: int | None) -> list[tuple[int, float]]:
    """The ``limit`` allowed rows nearest ``query``, the ids filtering LanceDB's search
    before it ranks (approximate on an index, probed wide enough to scan them)."""
    return await nearest_async(table, query, limit, trained, where=id_filter(allowed),
                               passing=len(allowed))
