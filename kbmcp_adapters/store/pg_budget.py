"""PostgreSQL's word leg within SQLite's budget of scored matches (decision 0058's
addendum "PostgreSQL's keyword leg").

``pg_lexical``'s word leg counted every chunk holding any word of the query (one pass)
and then ran ``ts_rank`` on each of them (a second): at 100k chunks a parallel sequential
scan over 78,000 rows, at a million seconds. Here the leg reads how many chunks hold each
word (``counts``: one count of the word's matches in the GIN index each, and the index's
chunks), remembered per state of the database as SQLite's vocabulary counts are
(``keyword_budget.TermCounts``), and hands them to the rule SQLite's leg follows
(``keyword_budget.narrow``): only when the index holds more chunks than
``KEYWORD_BUDGET`` and the words together more matches than that is a narrower expression
scored, its rarest words that fit in the budget, else with the next rarest word too on
the budget's matches with the highest chunk ids (``floor``). Under a filter the counts
are taken in the filter's share of the documents, as on SQLite. Below the budget the leg
is the one before: the same counts (each word's rows equal its rows among those holding
any word) and the same scoring SQL.

The state is the read transaction's snapshot (``pg_current_snapshot()``: the oldest
transaction still running, the next one, and those in progress between): two snapshots
that are the same see the same committed rows, and any write that commits moves the next
snapshot, in this database or another of the cluster (which only costs a count again).
A store reads in one ``REPEATABLE READ`` transaction, so the counts it keeps were read in
the snapshot they are filed under: never stale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store import keyword_budget
from kbmcp_adapters.store.keyword_budget import Narrowed, TermCounts, narrow
from kbmcp_adapters.store.lexical import Terms
from kbmcp_adapters.store.tables import PG_LEXICAL

__all__ = ["Budgeted", "chunks", "counts", "snapshot", "within"]

#: Each word's chunks, the index's chunks and documents, per (store, table) and snapshot.
_COUNTS = TermCounts()
#: Kept under these names beside the words (no word starts with a NUL).
_CHUNKS, _DOCUMENTS = "\x00chunks", "\x00documents"


@dataclass(frozen=True, slots=True)
class Budgeted:
    """What the word leg scores: ``terms`` (None: the whole query, as before the budget),
    on the matches of at least chunk id ``floor`` when sampled; ``total`` chunks in the
    index, ``df`` the chunks holding each word (the whole index's, for the IDFs)."""

    total: int
    df: dict[str, int]
    terms: Terms | None = None
    floor: int | None = None


def snapshot(conn: Connection) -> bytes:
    """The state of the database this transaction reads: its snapshot's text."""
    return str(conn.execute(text("SELECT CAST(pg_current_snapshot() AS text)"))
               .scalar_one()).encode()


def counts(conn: Connection, terms: Sequence[str], test: str) -> tuple[int, dict[str, int]]:
    """(chunks in the index, chunks holding each of ``terms``): ``test`` formats the
    condition on term ``:t{i}``; each count is one look-up of the word in the GIN index,
    made once per snapshot."""
    stamp = snapshot(conn)
    where = (str(conn.engine.url), PG_LEXICAL)
    known = _COUNTS.known(where, stamp, [_CHUNKS, *terms])
    missing = [t for t in dict.fromkeys(terms) if t not in known]
    selects = [f"(SELECT count(*) FROM {PG_LEXICAL} AS lx WHERE {test.format(i=i)})"
               for i in range(len(missing))]
    if _CHUNKS not in known:
        selects.append("(SELECT count(*) FROM chunks)")
    if selects:
        row = conn.execute(text("SELECT " + ", ".join(selects)),
                           {f"t{i}": t for i, t in enumerate(missing)}).one()
        found = dict(zip([*missing, _CHUNKS][:len(row)], (int(n) for n in row), strict=True))
        _COUNTS.keep(where, stamp, found)
        known |= found
    return known[_CHUNKS], {t: known[t] for t in terms}


def chunks(conn: Connection) -> int:
    """The index's chunks, counted once per snapshot."""
    return counts(conn, (), "")[0]


def _documents(conn: Connection) -> int:
    stamp = snapshot(conn)
    where = (str(conn.engine.url), PG_LEXICAL)
    known = _COUNTS.known(where, stamp, [_DOCUMENTS])
    if _DOCUMENTS not in known:
        known[_DOCUMENTS] = int(conn.execute(text("SELECT count(*) FROM documents")).scalar_one())
        _COUNTS.keep(where, stamp, known)
    return known[_DOCUMENTS]


def within(conn: Connection, match: Terms, terms: Sequence[str], limit: int,
           paths: str | None, test: str) -> Budgeted:
    """The word leg's plan for ``match`` (``terms``: every term it scores or weighs by
    coverage) within ``KEYWORD_BUDGET`` scored matches: ``keyword_budget.narrow`` on the
    counts, scaled by the filter's share of the documents under ``paths``."""
    budget = keyword_budget.KEYWORD_BUDGET
    total, df = counts(conn, terms, test)
    if total <= budget or match.required:
        return Budgeted(total, df)
    share = 1.0 if paths is None else min(1.0, len(json.loads(paths)) / max(_documents(conn), 1))
    narrowed = narrow(match, {w: math.ceil(df[w] * share) for w in match.optional},
                      math.ceil(total * share), limit, budget)
    if narrowed is None:
        return Budgeted(total, df)
    floor = (_floor(conn, narrowed, terms, test, math.ceil(budget / max(share, 1e-9)))
             if narrowed.sampled else None)
    return Budgeted(total, df, narrowed.terms, floor)


def _floor(conn: Connection, narrowed: Narrowed, terms: Sequence[str], test: str,
           n: int) -> int | None:
    """The smallest chunk id of the ``n`` matches of ``narrowed`` with the highest ids
    (None: it has fewer): the ids read in descending order, none scored."""
    index = {t: i for i, t in enumerate(terms)}
    where = " OR ".join(test.format(i=index[t]) for t in narrowed.terms.optional)
    found = conn.execute(
        text(f"SELECT lx.id FROM {PG_LEXICAL} AS lx WHERE ({where}) "
             "ORDER BY lx.id DESC LIMIT 1 OFFSET :n"),
        {"n": n - 1, **{f"t{i}": t for i, t in enumerate(terms)}}).first()
    return None if found is None else int(found[0])
