"""When ``compact`` rewrites the vector table: only when what an index run left loose costs
more than the rewrite.

LanceDB's ``optimize`` (0.40, without ``pylance``: no options) merges every fragment below
a million rows with its neighbours once the indexes cover them. At 100k chunks the table
is one such fragment, so an incremental run's few hundred new rows made the next
``optimize`` read and write the whole table (155 MB, every other run; against the tests'
S3 server thousands of ranged reads of it). Left alone, the appended fragments are
searched flat beside the approximate index (LanceDB scans unindexed rows), which costs
nothing measurable up to a few percent of the rows (decision 0058's addendum
"PostgreSQL's first index": a search at 101,017 rows with 1 to 8 runs' appends of 1,266
rows each took what it took compacted). So a table with a trained index is compacted
only when the loose rows pass what an exact search reads anyway (``ANN_MIN_ROWS``) or
a share of the table, when the appends have made many fragments, or when many rows are
deleted; the approximate index's own plan (train again, drop) always compacts. A small
table, without an approximate index, is compacted every time as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbmcp_adapters.vectors.ann_policy import ANN_MIN_ROWS, Plan, index_name

if TYPE_CHECKING:
    from lancedb.table import Table

__all__ = ["LOOSE_FRAGMENTS", "LOOSE_SHARE", "Loose", "due", "loose"]

#: Rows left unindexed (appended since the last compaction) or deleted, as a share of the
#: table, past which the table is compacted; and never more than ``ANN_MIN_ROWS`` loose
#: rows, the most a search reads flat (below it a table is searched exactly).
LOOSE_SHARE = 0.05
#: Fragments past which the table is compacted (about one an incremental run).
LOOSE_FRAGMENTS = 16


@dataclass(frozen=True, slots=True)
class Loose:
    """What index runs left outside the compacted, indexed table."""

    rows: int
    fragments: int
    #: rows the approximate index does not cover (appended since the last compaction)
    unindexed: int
    #: rows deleted but still stored
    deleted: int

    @property
    def worth_compacting(self) -> bool:
        bound = min(LOOSE_SHARE * self.rows, ANN_MIN_ROWS)
        return (self.unindexed > bound or self.deleted > LOOSE_SHARE * self.rows
                or self.fragments > LOOSE_FRAGMENTS)


def loose(table: Table, trained: int) -> Loose:
    """The table's rows, fragments, rows its approximate index (trained on ``trained``
    rows) does not cover, and rows deleted but still stored (all from the manifest)."""
    stats: Any = table.stats()  # a dict at run time, typed as a dataclass
    fragments = stats["fragment_stats"]
    rows = int(stats["num_rows"])
    stored = int(fragments["lengths"]["mean"]) * int(fragments["num_fragments"])
    index = table.index_stats(index_name(trained))
    unindexed = rows if index is None else int(index.num_unindexed_rows)
    return Loose(rows, int(fragments["num_fragments"]), unindexed, max(0, stored - rows))


def due(table: Table, plan: Plan, trained: int | None) -> bool:
    """Whether ``compact`` should run LanceDB's ``optimize`` on ``table`` now."""
    if plan != "keep" or trained is None:
        return True
    return loose(table, trained).worth_compacting
