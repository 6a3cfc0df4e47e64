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

__all__ = ["Budgeted", "chunks", "counts", "estimates", "snapshot", "within", "word_counts"]

#: Each word's chunks, the index's chunks and documents, per (store, table) and snapshot.
_COUNTS = TermCounts()
#: Kept under these names beside the words (no word starts with a NUL).
_CHUNKS, _DOCUMENTS = "\x00chunks", "\x00documents"
#: A word's chunks by the planner's statistics, kept under its text after this.
_ESTIMATE = "\x00estimate:"


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


def counts(conn: Connection, terms: Sequence[str], test: str, cap: int | None = None
           ) -> tuple[int, dict[str, int]]:
    """(chunks in the index, chunks holding each of ``terms``): ``test`` formats the
    condition on term ``:t{i}``. Each count is one look-up of the word in the GIN index and
    a visit of the rows it finds, made once per snapshot. With ``cap``, a word is counted
    up to ``cap`` rows only, and one the planner's statistics put at twice that or more
    (its share of the rows ANALYZE sampled) is not counted: a word at or past the cap
    holds what those statistics say, never less than ``cap``."""
    stamp = snapshot(conn)
    where = (str(conn.engine.url), PG_LEXICAL)
    known = _COUNTS.known(where, stamp, [_CHUNKS, *terms, *(_ESTIMATE + t for t in terms)])
    if _CHUNKS not in known:
        known[_CHUNKS] = int(conn.execute(text("SELECT count(*) FROM chunks")).scalar_one())
        _COUNTS.keep(where, stamp, {_CHUNKS: known[_CHUNKS]})
    total = known[_CHUNKS]
    # a word kept as -n holds at least n rows (it was counted up to a cap of n)
    missing = [t for t in dict.fromkeys(terms)
               if t not in known or (known[t] < 0 and (cap is None or -known[t] < cap))]
    # the statistics only stand in for what would cost rows to count: a first match is
    # read (``cap`` 1: whether a word is held is always what this snapshot holds)
    if cap is not None and cap > 1:
        known |= {_ESTIMATE + t: n for t, n in estimates(conn, missing, total).items()}
    found: dict[str, int] = {}
    if cap is not None and cap > 1:  # clearly past the cap by the statistics: not counted
        found = {t: -cap for t in missing if known[_ESTIMATE + t] >= 2 * cap}
        missing = [t for t in missing if t not in found]
    if missing:
        row = conn.execute(text("SELECT " + ", ".join(
            _counted(test.format(i=i), cap) for i in range(len(missing)))),
            {"cap": cap, **{f"t{i}": t for i, t in enumerate(missing)}}).one()
        found |= {t: -int(n) if cap is not None and n >= cap else int(n)
                  for t, n in zip(missing, row, strict=True)}
    if found:
        _COUNTS.keep(where, stamp, found)
        known |= found
    return total, {t: known[t] if known[t] >= 0 else max(-known[t], known.get(_ESTIMATE + t, 0))
                   for t in terms}


def _counted(test: str, cap: int | None) -> str:
    if cap is None:
        return f"(SELECT count(*) FROM {PG_LEXICAL} AS lx WHERE {test})"
    return f"(SELECT count(*) FROM (SELECT 1 FROM {PG_LEXICAL} AS lx WHERE {test} LIMIT :cap) AS n)"


def estimates(conn: Connection, terms: Sequence[str], total: int) -> dict[str, int]:
    """The chunks holding each word by the planner's statistics of ``lexical.words``
    (the share of ANALYZE's sample holding its rarest lexeme; 0 for a word not among the
    most common), kept per snapshot: they order the words and stand in for a word past
    the budget, never for whether a word is held."""
    stamp, where = snapshot(conn), (str(conn.engine.url), PG_LEXICAL)
    known = _COUNTS.known(where, stamp, [_ESTIMATE + t for t in terms])
    missing = [t for t in dict.fromkeys(terms) if _ESTIMATE + t not in known]
    if missing:
        read = _estimated(conn, missing, total)
        found = {_ESTIMATE + t: read.get(t, 0) for t in missing}
        _COUNTS.keep(where, stamp, found)
        known |= found
    return {t: known[_ESTIMATE + t] for t in terms}


def _estimated(conn: Connection, terms: Sequence[str], total: int) -> dict[str, int]:
    found = conn.execute(text(
        "SELECT w.t, min(s.f) FROM unnest(CAST(:terms AS text[])) AS w(t), pg_stats AS p, "
        "unnest(CAST(CAST(p.most_common_elems AS text) AS text[]), p.most_common_elem_freqs) "
        "AS s(e, f) WHERE p.schemaname = current_schema() AND p.tablename = :table "
        "AND p.attname = 'words' AND s.e = ANY(tsvector_to_array(to_tsvector('english', w.t))) "
        "GROUP BY w.t"), {"terms": list(terms), "table": PG_LEXICAL}).all()
    return {str(t): round(float(f) * total) for t, f in found}


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


def word_counts(conn: Connection, match: Terms, terms: Sequence[str], paths: str | None,
                test: str) -> tuple[int, dict[str, int]]:
    """(chunks in the index, chunks holding each of ``terms``) as the budget counts them
    for ``match``: exactly while the index holds at most ``KEYWORD_BUDGET`` chunks or the
    query has a required term, else only as far as narrowing needs (``_fitting``, in the
    filter's share under ``paths``). A joint search pools these (decision 0052)."""
    budget = keyword_budget.KEYWORD_BUDGET
    total = chunks(conn)
    if total <= budget or match.required:
        return total, counts(conn, terms, test)[1]
    return total, _fitting(conn, terms, test, math.ceil(budget / _share(conn, paths)))


def _share(conn: Connection, paths: str | None) -> float:
    """The filter's share of the documents (1 without one)."""
    if paths is None:
        return 1.0
    return min(1.0, len(json.loads(paths)) / max(_documents(conn), 1))


def within(conn: Connection, match: Terms, terms: Sequence[str], limit: int,
           paths: str | None, test: str) -> Budgeted:
    """The word leg's plan for ``match`` (``terms``: every term it scores or weighs by
    coverage) within ``KEYWORD_BUDGET`` scored matches: ``keyword_budget.narrow`` on the
    counts, scaled by the filter's share of the documents under ``paths``."""
    budget = keyword_budget.KEYWORD_BUDGET
    total, df = word_counts(conn, match, terms, paths, test)
    if total <= budget or match.required:
        return Budgeted(total, df)
    share = _share(conn, paths)
    narrowed = narrow(match, {w: math.ceil(df[w] * share) for w in match.optional},
                      math.ceil(total * share), limit, budget)
    if narrowed is None:
        return Budgeted(total, df)
    floor = (_floor(conn, narrowed, terms, test, math.ceil(budget / max(share, 1e-9)))
             if narrowed.sampled else None)
    return Budgeted(total, df, narrowed.terms, floor)


def _fitting(conn: Connection, terms: Sequence[str], test: str, room: int) -> dict[str, int]:
    """The chunks holding each term, counted exactly as far as ``narrow`` needs: rarest
    first by what is known (a kept count, else the planner's statistics, which list only
    the common words), each word up to what is left of ``room`` matches; a word that does
    not fit holds at least that (or what the statistics say), and one they put at twice
    that or more is not counted. So a query whose words fit in the budget together is
    counted exactly, and a common word costs at most the budget's rows, once per
    snapshot."""
    # whether each word is held (a first match at most is read), and the statistics
    total = counts(conn, terms, test, 1)[0]
    guessed = estimates(conn, terms, total)
    stamp, where = snapshot(conn), (str(conn.engine.url), PG_LEXICAL)
    kept = _COUNTS.known(where, stamp, list(terms))
    # a kept count, else at least what was counted, raised to the statistics' estimate
    estimated = {t: k if (k := kept.get(t, -1)) >= 0 else max(-k, guessed[t]) for t in terms}
    held = 0
    out: dict[str, int] = {}
    for t in sorted(dict.fromkeys(terms), key=lambda t: (estimated[t], t)):
        left = room - held
        n = kept.get(t)
        if (n is None or (n < 0 and -n <= left)) and estimated[t] < 2 * (left + 1):
            n = int(conn.execute(text(f"SELECT {_counted(test.format(i=0), left + 1)}"),
                                 {"t0": t, "cap": left + 1}).scalar_one())
            n = -n if n > left else n
            _COUNTS.keep(where, stamp, {t: n})
        if n is not None and 0 <= n <= left:
            out[t], held = n, held + n
        else:  # past what is left: at least that
            out[t] = max(abs(n or 0), left + 1, estimated[t])
    return out


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
