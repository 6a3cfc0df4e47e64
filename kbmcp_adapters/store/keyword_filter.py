"""SQLite's keyword leg under a filter: the filter's chunks by id, and how many of each
word's matches the filter keeps (decision 0058's addendum "the keyword leg under a filter").

A filtered leg scores only the matches of the filter's chunks. ``Within`` is that set as
the leg reads it: the chunk ids (instead of every kept document's path looked up again
and its chunks read through the documents table on every query). ``filters.FilterCache``
keeps one per filter while the index is unchanged; ``read_within`` makes one from a list
of paths. A set of more than ``TABLE_FROM`` chunks (a filter the leg answers in several
statements: its words counted, then group by group) is checked in a temporary table of
its ids the connection makes the first time it meets it (``id_table``): its JSON list was
parsed into a fresh look-up table by every statement, up to six a search (decision
0058's addendum "the last 50 ms"). A smaller set, or a connection that may not make a
table (read-only), is checked against the JSON list: SQLite's look-up table of a list
carries a Bloom filter, cheaper than the table's b-tree for a walk of many matches the
set mostly lacks, and a small list is soon made.

The budget needs each word's matches *inside* the filter: a word can be common in the
index and absent from a folder (narrowed to the index's rarest words, a leg found
nothing there). ``counts_within`` counts a rare word's matches there, and estimates a
common word's on ``SAMPLE`` of the filter's chunks spread over their ids, read and
matched on their own rows (``keyword_groups`` then finds the whole query's best). A
sample of the matches by id would not do: chunk ids grow with the order chunks were
first indexed (decision 0004), so the highest ids are the last folder indexed. For the
same reason a group past the budget is scored on a run of the filter's own chunks
(``sample_within``), not on the index's matches with the highest ids.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from kbmcp_adapters.store.lexical import quote
from kbmcp_adapters.store.scratch_fts import holders
from kbmcp_adapters.store.tables import JOIN_DOCUMENTS, PATH_FILTER

__all__ = ["KEPT_TABLES", "SAMPLE", "Within", "counts_within", "id_table", "kept_rows",
           "read_within", "sample_within"]

#: The filter's chunks read to tell how many of them hold each word.
SAMPLE = 1_000
#: A set of more chunks than this is checked in a temporary table (``id_table``).
TABLE_FROM = 20_000
#: Temporary id tables a connection keeps (those it used last; ``id_table``).
KEPT_TABLES = 4
#: The prefix of their names; the rest is the ``Within``'s key.
_TABLE = "kb_within_"
#: Set in a connection's ``info`` once it could not make a temporary table.
_NO_TEMP = "kb_no_temp_tables"
#: In a connection's ``info``: its tables' names, the one used last at the end.
_USED = "kb_within_tables"
_keys = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Within:
    """A keyword leg kept to the chunks ``sorted_ids`` (ascending): a set of chunk ids
    (``ids`` the JSON list of it, ``key`` its name, unique in this process), or a run of
    it (``sample_within``: every id of the set between the run's first and last), which
    shares the set's list and key, so a connection's table of the set serves the run."""

    ids: str
    sorted_ids: Sequence[int]
    key: int = field(default_factory=lambda: next(_keys), compare=False)
    #: how many chunks the set holds (-1: ``sorted_ids`` is the whole set)
    whole: int = field(default=-1, compare=False)

    @classmethod
    def of(cls, ascending: Sequence[int]) -> Within:
        return cls(json.dumps(list(ascending)), ascending)

    @property
    def set_size(self) -> int:
        return len(self.sorted_ids) if self.whole < 0 else self.whole

    def run(self, first: int, size: int) -> Within:
        """The run of ``size`` ids from the ``first``-th, on this set's list and key."""
        return Within(self.ids, self.sorted_ids[first:first + size], self.key, self.set_size)

    def __len__(self) -> int:
        return len(self.sorted_ids)


def id_table(conn: Connection, within: Within) -> str | None:
    """The temporary table (``temp.<name>``, its ids the rowids) holding ``within``'s set
    on this connection, made now if the connection has none; None when the connection may
    not make one (a read-only index: ``PRAGMA query_only``). A key names one set for the
    life of the process, so a table is never stale; a rolled-back read that made one
    leaves none, and it is made again. The connection keeps the ``KEPT_TABLES`` it used
    last."""
    info = conn.connection.info
    if info.get(_NO_TEMP):
        return None
    name = f"{_TABLE}{within.key}"
    used: list[str] = info.setdefault(_USED, [])
    if name in used:
        used.remove(name)
    used.append(name)
    made = conn.exec_driver_sql(
        "SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = ?", (name,)).first()
    if made is not None:
        return name
    try:
        conn.exec_driver_sql(f"CREATE TEMP TABLE {name} (id INTEGER PRIMARY KEY)")
    except OperationalError:
        info[_NO_TEMP] = True
        return None
    try:
        conn.exec_driver_sql(f"INSERT INTO temp.{name} SELECT value FROM json_each(?)",
                             (within.ids,))
    except BaseException:
        # never leave a table without its ids: the next statement would find it
        conn.exec_driver_sql(f"DROP TABLE temp.{name}")
        raise
    while len(used) > KEPT_TABLES:
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS temp.{used.pop(0)}")
    return name


def read_within(conn: Connection, paths: str) -> Within:
    """The chunks of the documents at ``paths`` (a JSON list), one query."""
    rows = conn.execute(text(f"SELECT chunks.id FROM chunks {JOIN_DOCUMENTS} "
                             f"WHERE {PATH_FILTER} ORDER BY 1"), {"paths": paths}).scalars()
    return Within.of([int(cid) for cid in rows])


def kept_rows(conn: Connection, within: str | Within, column: str = "id"
              ) -> tuple[str, dict[str, object]]:
    """(SQL condition that ``column``, a chunk id, is kept; its parameters) for ``within``:
    a ``Within``, or a JSON list of document paths. ``+`` keeps FTS5 from looking each
    id up as a rowid (0019): the matches are walked and checked against the set (a
    ``Within``'s between its lowest and highest id only: FTS5 takes them as rowid
    bounds), in the connection's table of a large set (``id_table``), else its JSON
    list."""
    if isinstance(within, Within):
        ids = within.sorted_ids
        if not ids:
            return "0 = 1", {}
        bounds: dict[str, object] = {"low": ids[0], "high": ids[-1]}
        table = id_table(conn, within) if within.set_size > TABLE_FROM else None
        if table is not None:
            return (f"{column} BETWEEN :low AND :high AND "
                    f"+{column} IN (SELECT id FROM temp.{table})", bounds)
        return (f"{column} BETWEEN :low AND :high AND "
                f"+{column} IN (SELECT value FROM json_each(:ids))",
                {"ids": within.ids, **bounds})
    return (f"+{column} IN (SELECT chunks.id FROM chunks {JOIN_DOCUMENTS} "
            f"WHERE {PATH_FILTER})", {"paths": within})


def counts_within(conn: Connection, table: str, df: Mapping[str, int], within: Within,
                  exact_below: int) -> dict[str, int]:
    """How many chunks of ``within`` hold each word of ``df`` (its count in the whole
    ``table``): counted match by match for a word of at most ``exact_below`` chunks (a
    rare word's few matches in a filter are what a search for it wants), else estimated
    on ``SAMPLE`` of the filter's chunks spread evenly over their ids, each sampled
    chunk's own row matched on its own (``scratch_fts.holders``, as the coverage weight
    reads its candidates)."""
    out = dict.fromkeys(df, 0)
    kept, params = kept_rows(conn, within, f"{table}.rowid")
    count = text(f"SELECT count(*) FROM {table} WHERE {table} MATCH :w AND {kept}")
    for word, n in df.items():
        if 0 < n <= exact_below:
            out[word] = int(conn.execute(count, {"w": quote(word)} | params).scalar_one())
    words = [w for w, n in df.items() if n > exact_below]
    if not words or not len(within):
        return out
    ids = within.sorted_ids
    step = max(1, len(ids) // SAMPLE)
    sample = json.dumps([ids[i] for i in range(0, len(ids), step)][:SAMPLE])
    rows = conn.execute(text(f"SELECT rowid, title, heading, body FROM {table} "
                             "WHERE rowid IN (SELECT value FROM json_each(:ids))"),
                        {"ids": sample}).all()
    if not rows:
        return out
    for word, held in zip(words, holders(table, words, [tuple(r) for r in rows]), strict=True):
        out[word] = min(df[word], math.ceil(len(held) * len(ids) / len(rows)))
    return out


def sample_within(within: Within, held: int, budget: int) -> Within | None:
    """The filter's chunks a sample of ``budget`` of the ``held`` matches an expression
    has in ``within`` is scored on (None: no more than ``budget``, score them all): as
    large a share of the filter's chunks, the run of them by id that spans the fewest
    ids, so the matches of other chunks walked past on the way are fewest (a folder's
    chunks lie together by id, the later folders' above them; decision 0004). The
    matches are taken to be spread over the filter's chunks as the sample's were."""
    ids = within.sorted_ids
    if held <= budget or not ids:
        return None
    size = min(len(ids), math.ceil(len(ids) * budget / held))
    step = max(1, size // 8)
    starts = range(0, len(ids) - size + 1, step)
    first = min(starts, key=lambda i: ids[i + size - 1] - ids[i])
    return within.run(first, size)
