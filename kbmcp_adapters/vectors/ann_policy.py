"""The approximate (IVF_PQ) vector index policy: when it is built, folded, trained again
or dropped, its shape, and how a query probes it (decision 0019)."""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable

    from lancedb.query import AsyncVectorQuery
    from lancedb.table import Table

    _Probed = TypeVar("_Probed", bound=AsyncVectorQuery)

__all__ = [
    "ANN_FOLD_SHARE",
    "ANN_MIN_PROBES",
    "ANN_MIN_ROWS",
    "ANN_PREFIX",
    "ANN_PROBED_ROWS",
    "ANN_PROBE_SHARE",
    "ANN_REFINE",
    "ANN_RETRAIN_GROWTH",
    "ANN_MAX_SAMPLE_RATE",
    "ANN_MIN_SAMPLE_RATE",
    "ANN_SAMPLE_ROWS",
    "Plan",
    "filtered_probes",
    "index_name",
    "partitions",
    "plan",
    "probed",
    "probes",
    "sample_rate",
    "sub_vectors",
    "train",
    "trained_among",
    "trained_rows",
]

log = logging.getLogger(__name__)

#: From this many rows on, ``compact`` keeps an approximate (IVF_PQ) index on the vectors;
#: below it exact search is fast enough (measured: docs/decisions/0019-flat-tails-and-ann.md).
ANN_MIN_ROWS = 20_000
#: The share of the IVF partitions (√rows at training) probed per query, at least
#: ``ANN_MIN_PROBES``; candidates re-ranked by exact distance (× k).
ANN_PROBE_SHARE = 0.5
ANN_MIN_PROBES = 20
#: ...but the probed partitions hold at most about this many of the trained rows: a
#: large table's query scans a bounded number of codes (a million rows: 101 of 999
#: partitions instead of 500, recall@10 0.998 against exact on the million bench, 0.975
#: at 50; up to 200,000 rows the share above is the smaller; decision 0058's addendum).
ANN_PROBED_ROWS = 100_000
ANN_REFINE = 10
#: The index is trained again when the table has grown or shrunk by this factor, or when
#: more than this share of its rows were added since it was trained or last folded.
ANN_RETRAIN_GROWTH = 2.0
ANN_FOLD_SHARE = 0.1
#: The IVF KMeans trains on a sample of partitions × ``sample_rate`` rows, read and held
#: while it trains; LanceDB's rate is 256: 255,744 vectors at a million rows, which took
#: a fresh process to 1,001 MiB (392 at this cap; recall@10 unchanged at 100k and 300k).
#: The sample is kept within about this many rows, never below ``ANN_MIN_SAMPLE_RATE``
#: rows a partition, the lowest rate measured (decision 0058's addendum "the training's
#: sample").
ANN_SAMPLE_ROWS = 65_536
ANN_MAX_SAMPLE_RATE = 256
ANN_MIN_SAMPLE_RATE = 64
#: The index's name (after the vector column) carries the row count it was trained on:
#: ``vector_ann_<rows>``, so any process can tell.
ANN_PREFIX = "vector_ann_"

#: What ``compact`` does with the index: leave it, drop it, or (drop and) train it anew.
Plan = Literal["keep", "drop", "train"]


def plan(table: Table, min_rows: int) -> tuple[Plan, int | None]:
    """(what to do, rows the current index was trained on).

    A table of ``min_rows`` rows or more gets an IVF_PQ index. Rows added since training
    are searched exactly next to it (LanceDB scans unindexed fragments) until ``optimize``
    folds them in with the trained codebooks; deleted rows are never returned. Folding is
    right for a few rows, not for many: the index is trained again when more than
    ``ANN_FOLD_SHARE`` of its rows are new, or when the table has grown or shrunk by
    ``ANN_RETRAIN_GROWTH``; it is dropped below half the threshold."""
    rows = table.count_rows()
    trained = trained_rows(table)
    if rows < min_rows:
        drop = trained is not None and rows < min_rows // 2
        return ("drop" if drop else "keep"), trained
    if trained is None or not trained / ANN_RETRAIN_GROWTH < rows < (
            trained * ANN_RETRAIN_GROWTH):
        return "train", trained
    stats = table.index_stats(index_name(trained))
    new = 0 if stats is None else stats.num_unindexed_rows
    return ("train" if new > ANN_FOLD_SHARE * trained else "keep"), trained


def train(table: Table, column: str, dimension: int) -> None:
    """Build the index over ``column`` of every row now in the table."""
    from lancedb.index import IvfPq

    rows = table.count_rows()
    started = time.monotonic()
    config = IvfPq(distance_type="cosine", num_partitions=partitions(rows),
                   num_sub_vectors=sub_vectors(dimension), sample_rate=sample_rate(rows))
    # with a config, the first argument names the column (LanceDB 0.40)
    table.create_index(column, config=config, name=index_name(rows))
    log.info("built the approximate vector index over %d rows in %.1f s", rows,
             time.monotonic() - started)


def probed(builder: _Probed, trained: int | None, refine: int = ANN_REFINE,
           passing: int | None = None) -> _Probed:
    """The query (LanceDB's async vector query) set to use the table's index, if it has
    one (``trained``: the rows it was trained on, ``trained_among``): probe a share of the
    partitions and re-rank ``refine`` × k candidates by their exact distance
    (``ANN_REFINE``: recall@10 >= 0.95 of exact search, 0019; a widened filtered search
    re-ranks fewer, ``nearest.POST_FILTER_REFINE``). ``passing``: the rows a prefilter
    keeps (``filtered_probes``). The fewest and the most partitions are the same number,
    as LanceDB's synchronous ``nprobes`` hands them to its async query."""
    if trained is None:
        return builder
    wide = probes(trained) if passing is None else filtered_probes(trained, passing)
    return builder.nprobes(wide).maximum_nprobes(wide).refine_factor(refine)


def index_name(rows: int) -> str:
    return f"{ANN_PREFIX}{rows}"


def trained_rows(table: Table) -> int | None:
    """The row count the table's approximate index was trained on; None without one."""
    return trained_among(table.list_indices())


def trained_among(indices: Iterable[object]) -> int | None:
    """``trained_rows`` of a table whose indexes (LanceDB's ``IndexConfig``s) were listed."""
    for index in indices:
        name = str(getattr(index, "name", ""))
        if name.startswith(ANN_PREFIX) and name[len(ANN_PREFIX):].isdigit():
            return int(name[len(ANN_PREFIX):])
    return None


def partitions(rows: int) -> int:
    return max(1, round(math.sqrt(rows)))


def sample_rate(rows: int) -> int:
    """Training rows a partition (LanceDB's ``sample_rate``): LanceDB's 256 while the
    sample stays within ``ANN_SAMPLE_ROWS``, fewer for a larger table, never below
    ``ANN_MIN_SAMPLE_RATE``."""
    within = ANN_SAMPLE_ROWS // partitions(rows)
    return max(ANN_MIN_SAMPLE_RATE, min(ANN_MAX_SAMPLE_RATE, within))


def probes(trained: int) -> int:
    """Partitions a query probes: ``ANN_PROBE_SHARE`` of them, within ``ANN_PROBED_ROWS``
    rows, never fewer than ``ANN_MIN_PROBES``."""
    parts = partitions(trained)
    share = math.ceil(ANN_PROBE_SHARE * parts)
    within = math.ceil(ANN_PROBED_ROWS * parts / max(1, trained))
    return max(ANN_MIN_PROBES, min(share, within))


def filtered_probes(trained: int, passing: int) -> int:
    """Partitions a query probes under a prefilter that keeps ``passing`` rows: as many as
    scan about the rows an unfiltered query scans among those that pass, so every partition
    while they are no more (a folder of a tenth of 100,000 rows), fewer for a filter that
    keeps most of a large table. The partitions nearest the query need not hold a filter's
    rows: a folder about one subject is a cluster of its own, and probed as an unfiltered
    search the real model's folder filter at 100k chunks found 0.875 of exact search's ten,
    0.993 probing every partition (decision 0058, the real-model run); the prefilter keeps
    the scan to the passing rows' codes."""
    parts, unfiltered = partitions(trained), probes(trained)
    return min(parts, max(unfiltered, math.ceil(unfiltered * trained / max(1, passing))))


def sub_vectors(dimension: int) -> int:
    """PQ sub-vectors: 8 dimensions each, or the largest divisor of ``dimension`` below."""
    wanted = max(1, dimension // 8)
    return next(n for n in range(wanted, 0, -1) if dimension % n == 0)
