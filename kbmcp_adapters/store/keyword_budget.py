"""SQLite's keyword leg within a budget of scored matches (decision 0058).

FTS5's ``bm25()`` costs about 2.5 µs for every chunk that holds any word of the query, and
for each word it walks the word's whole posting list once (its IDF): on a large index a
query of common words scores hundreds of thousands of chunks to keep 50. Here the leg
first reads how many chunks hold each word (``TermCounts``: the vocabulary table, cached
while the index is unchanged, ``row_count``'s stamp) and, only when together they exceed
``KEYWORD_BUDGET`` matches in an index of more chunks than that, scores a narrower
expression:

- the query's rarest words, as many as fit in the budget together (a rare word weighs
  most in BM25, and the coverage weight that follows still counts every word of the
  query in the candidates it keeps);
- when those hold fewer matches than the leg is asked for (or the rarest word alone is
  over the budget), the next rarest word too, scored on ``KEYWORD_BUDGET`` of the
  matches only: those with the highest chunk ids (a chunk's id is a hash, so a spread
  sample of the folder, not its newest files).

Under a filter keeping more chunks than the budget, ``ranking`` counts the words in the
filter (``keyword_filter.counts_within``) and finds the whole query's best there group by
group (``keyword_groups``) instead of narrowing. Below the budget, which every folder of
fewer than ``KEYWORD_BUDGET`` chunks is, the leg is exactly the one before: the same SQL,
the same hits and scores. ``any_match`` tells
whether an expression finds anything without scoring (the keyword statistics'
``found``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from kbmcp_adapters.store.keyword_filter import kept_rows
from kbmcp_adapters.store.lexical import Terms, quote

__all__ = ["KEYWORD_BUDGET", "Narrowed", "TermCounts", "any_match", "narrow", "row_count",
           "held_counts", "match_counts", "sample_floor", "token_counts"]

#: Most matching chunks the keyword leg scores with BM25 (about 50 ms of scoring).
KEYWORD_BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The expression scored instead of the whole query's, and whether it is scored on
    ``KEYWORD_BUDGET`` of its matches only (``sampled``)."""

    terms: Terms
    sampled: bool


def narrow(match: Terms, df: Mapping[str, int], total: int, limit: int,
           budget: int = KEYWORD_BUDGET) -> Narrowed | None:
    """The narrower expression for ``match`` when its matches may exceed ``budget``
    (``df``: chunks holding each single-word term; ``total``: the index's chunks); None
    when the whole query is scored, as before: an index of at most ``budget`` chunks,
    words holding at most ``budget`` chunks together, a phrase or a term of several
    tokens (its count is not known without reading it)."""
    words = match.optional
    if match.required or len(words) < 2 or total <= budget or any(w not in df for w in words):
        return None
    if sum(df[w] for w in words) <= budget:
        return None
    rarest = sorted(words, key=lambda w: (df[w], w))
    kept, held = 0, 0
    while kept < len(rarest) and held + df[rarest[kept]] <= budget:
        held += df[rarest[kept]]
        kept += 1
    if kept and held >= limit:
        return Narrowed(Terms((), tuple(rarest[:kept])), False)
    return Narrowed(Terms((), tuple(rarest[:kept + 1])), True)


def row_count(conn: Connection, table: str) -> tuple[int, bytes] | None:
    """The rows of FTS5 ``table``, from its averages record (the first varint of its
    ``_data`` row 1), and a stamp of the table's state: that record with the structure
    record (row 10, whose write counter every write moves); None when not readable."""
    found = conn.execute(text(f"SELECT id, block FROM {table}_data WHERE id IN (1, 10) "
                              "ORDER BY id")).all()
    blocks = {int(i): b for i, b in found if isinstance(b, bytes)}
    block = blocks.get(1)
    if not block:
        return None
    stamp = block + b"/" + blocks.get(10, b"")
    value = 0
    for i, byte in enumerate(block[:9]):
        if i == 8:
            return (value << 8) | byte, stamp
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, stamp
    return None


class TermCounts:
    """How many chunks hold each term, per table, remembered while the table's averages
    record (its row and token counts: any write changes them) is the same: the
    vocabulary table walks a term's postings to count them, so a repeated word costs that
    walk once per state of the index."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._tables: dict[tuple[str, str], tuple[bytes, dict[str, int]]] = {}

    def known(self, table: tuple[str, str], stamp: bytes, terms: Sequence[str]
              ) -> dict[str, int]:
        with self._lock:
            kept = self._tables.get(table)
            if kept is None or kept[0] != stamp:
                return {}
            return {t: kept[1][t] for t in terms if t in kept[1]}

    def keep(self, table: tuple[str, str], stamp: bytes, counts: Mapping[str, int]) -> None:
        with self._lock:
            kept = self._tables.get(table)
            if kept is None or kept[0] != stamp or len(kept[1]) > self._limit:
                kept = self._tables[table] = (stamp, {})
            kept[1].update(counts)


#: A phrase's or a substring's count is kept under its text after this (no token has it).
MATCHED = "\x00match:"
#: Whether any row holds a phrase or a substring (1 or 0), kept under its text after this.
HELD = "\x00held:"
#: Each token's count of rows, kept while a table is unchanged (``keyword_budget``).
_COUNTS = TermCounts()


def token_counts(conn: Connection, table: str, tokens: Sequence[str]) -> dict[str, int]:
    """How many rows of ``table`` hold each token (absent: none), from its fts5vocab twin
    (which walks each token's postings to count them), remembered while the table's
    averages record is the same (``TermCounts``)."""
    rows = row_count(conn, table)
    where = (str(conn.engine.url), table)
    known = {} if rows is None else _COUNTS.known(where, rows[1], tokens)
    missing = [t for t in tokens if t not in known]
    if missing:
        found = conn.execute(
            text(f"SELECT term, doc FROM {table}_vocab "
                 "WHERE term IN (SELECT value FROM json_each(:terms))"),
            {"terms": json.dumps(missing, ensure_ascii=False)},
        ).all()
        counted = dict.fromkeys(missing, 0) | {str(term): int(doc) for term, doc in found}
        if rows is not None:
            _COUNTS.keep(where, rows[1], counted)
        known |= counted
    return {t: n for t, n in known.items() if n}


def sample_floor(conn: Connection, table: str, expression: str, budget: int) -> int | None:
    """The smallest chunk id of the ``budget`` matches of ``expression`` with the highest
    ids (None: it has fewer): rows are visited in id order, none scored."""
    found = conn.execute(
        text(f"SELECT rowid FROM {table} WHERE {table} MATCH :e "
             "ORDER BY rowid DESC LIMIT 1 OFFSET :n"),
        {"e": expression, "n": budget - 1}).first()
    return None if found is None else int(found[0])


def any_match(conn: Connection, table: str, expression: str, paths: str | None) -> bool:
    """Whether ``expression`` matches a chunk of ``table`` (within ``paths``): the first
    match found, none scored (``_fts_leg(..., 1, ...)`` scored every match to keep one)."""
    sql = f"SELECT {table}.rowid AS id FROM {table} WHERE {table} MATCH :expression"
    params: dict[str, object] = {"expression": expression}
    if paths is not None:
        kept, more = kept_rows(conn, paths)
        sql = f"SELECT id FROM ({sql}) AS matched WHERE {kept}"
        params |= more
    try:
        return conn.execute(text(sql + " LIMIT 1"), params).first() is not None
    except OperationalError as exc:
        if "fts5" not in str(exc.orig):
            raise
        return False  # as ``_fts_leg``: a rejected expression finds nothing


def held_counts(conn: Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
    """1 for each term of several tokens some row of ``table`` holds, 0 for the others:
    the first match ends the look (``match_counts`` reads every match, which on a large
    index is most of a search for a common word). A count already known answers too."""
    return _remembered(conn, table, terms, first_only=True)


def match_counts(conn: Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
    """How many rows of ``table`` each term of several tokens matches (``MATCH '"term"'``,
    which reads its tokens' postings), remembered as ``token_counts`` are."""
    return _remembered(conn, table, terms, first_only=False)


def _remembered(conn: Connection, table: str, terms: Sequence[str], *, first_only: bool
                ) -> dict[str, int]:
    """Each term's count (``first_only``: 1 or 0), from what this state of the index
    already answered (a count answers a presence question too), else asked and kept."""
    rows = row_count(conn, table)
    where = (str(conn.engine.url), table)
    keys = {t: (MATCHED + t, HELD + t) for t in terms}
    wanted = [key for pair in keys.values() for key in (pair if first_only else pair[:1])]
    known = {} if rows is None else _COUNTS.known(where, rows[1], wanted)
    sql = (f"SELECT 1 FROM {table} WHERE {table} MATCH :t LIMIT 1" if first_only
           else f"SELECT count(*) FROM {table} WHERE {table} MATCH :t")
    out: dict[str, int] = {}
    for term, (counted, held) in keys.items():
        if counted in known:
            out[term] = min(known[counted], 1) if first_only else known[counted]
            continue
        key = held if first_only else counted
        if key not in known:
            got = conn.execute(text(sql), {"t": quote(term)}).first()
            known[key] = int(got is not None) if first_only else int(got[0]) if got else 0
            if rows is not None:
                _COUNTS.keep(where, rows[1], {key: known[key]})
        out[term] = known[key]
    return out
