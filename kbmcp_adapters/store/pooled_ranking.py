"""SQLite's keyword legs scored on statistics pooled over several stores (decision 0052).

``statistics`` counts what one store's legs rest on (chunks, and the chunks holding each
term of the query in each FTS5 table); ``hits`` runs the same legs as ``ranking.rank`` (the
word leg within the keyword budget, ``ranking.words_leg``: decision 0058's addendum
"SQLite's pooled keyword legs") and scores their candidates on the pooled counts instead of
the store's own. FTS5's bm25()
reads its own table's counts, so each candidate's BM25 is taken apart term by term (one
bm25() per term over the candidates: its IDF times its term-frequency part), and the parts
are summed again with the pooled IDFs. The coverage weight uses the pooled counts too.
What is left to a store of its own is the average chunk length BM25 normalises by.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.keyword_budget import any_match, row_count
from kbmcp_adapters.store.lexical import Terms, compile_query, quote
from kbmcp_adapters.store.ranking import (
    _document_frequencies,
    _fts_leg,
    bm25_idf,
    bm25_score,
    coverage_shares,
    substring_leg,
    words_leg,
)
from kbmcp_adapters.store.scratch_fts import holders
from kbmcp_adapters.store.tables import FTS_GRAMS, FTS_WORDS
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics, holding_of

__all__ = ["hits", "statistics"]


def _phrases(match: Terms) -> list[str]:
    """The phrases of ``match.fts5()`` in order, a phrase written twice listed twice
    (bm25() sums over the expression's phrases)."""
    if not match.required:
        return list(match.optional)
    if not match.optional:
        return list(match.required)
    return [*match.required, match.required[0], *match.optional]


def _chunks(conn: Connection) -> int:
    """The index's chunks: the rows of the word table (one a chunk), from its averages
    record; counting ``chunks`` reads a million index entries at a million chunks."""
    counted = row_count(conn, FTS_WORDS)
    if counted is not None:
        return counted[0]
    return int(conn.execute(text("SELECT count(*) FROM chunks")).scalar_one() or 0)


def statistics(conn: Connection, query: str, paths: str | None, *,
               presence: bool = False) -> KeywordStatistics:
    """This store's counts for ``query``: what ``hits`` of any store needs, summed.
    ``presence``: only whether each term is held (``_document_frequencies``). The
    substring terms are counted only when the trigram leg may run (a CJK query, or this
    store's words matched nothing); when this store's words matched, no store's trigram
    leg runs (``hits``), so a term is only said held or not: counting a word's substring
    reads every chunk holding its trigrams (as on PostgreSQL, decision 0058's addendum
    "PostgreSQL's first index")."""
    compiled = compile_query(query)
    holding: dict[tuple[str, str], int] = {}
    found: set[str] = set()
    legs = ((FTS_WORDS, compiled.words, compiled.word_match, compiled.word_coverage),
            (FTS_GRAMS, compiled.grams, compiled.gram_match, compiled.gram_coverage))
    for table, expression, match, coverage in legs:
        if not expression:
            continue
        terms = list(dict.fromkeys([*match.all, *coverage]))
        leg_may_run = table == FTS_WORDS or compiled.has_cjk or FTS_WORDS not in found
        holding.update(zip(((table, t) for t in terms),
                           _document_frequencies(conn, table, terms,
                                                 presence=presence or not leg_may_run),
                           strict=True))
        if any_match(conn, table, expression, paths):
            found.add(table)
    return KeywordStatistics(_chunks(conn), holding, frozenset(found))


def hits(conn: Connection, query: str, limit: int, paths: str | None,
         pooled: KeywordStatistics) -> list[KeywordHit]:
    """``ranking.rank``'s legs, each candidate scored on ``pooled`` (not yet relative to
    any best: ``keyword_pool.pooled_relevance`` does that over every store). The word leg
    is ``ranking.words_leg``, within the keyword budget as the single leg (decided on this
    store's own counts), its scored terms rescored on the pooled IDFs. The trigram leg
    stands in for the words when no store's words found anything."""
    compiled = compile_query(query)
    out: list[KeywordHit] = []
    if compiled.words and not compiled.has_cjk:
        # the single leg's candidates, within its budget on this store's own counts
        leg, scored = words_leg(conn, compiled, limit, paths)
        out += _rescored(conn, FTS_WORDS, scored, compiled.word_coverage, leg, pooled)
    if compiled.grams and (compiled.has_cjk or FTS_WORDS not in pooled.found):
        leg = _fts_leg(conn, FTS_GRAMS, compiled.grams, limit, paths)
        out += _rescored(conn, FTS_GRAMS, compiled.gram_match, compiled.gram_coverage, leg,
                         pooled)
    if compiled.short_runs and not compiled.grams:
        out += [KeywordHit(cid, None, share)
                for cid, share in substring_leg(conn, compiled.short_runs, limit, paths)]
    return out


def _rescored(conn: Connection, table: str, match: Terms, coverage: Sequence[str],
              leg: list[tuple[int, float]], pooled: KeywordStatistics) -> list[KeywordHit]:
    """The leg's candidates with their BM25 on the pooled counts, and their coverage;
    ``match``: the terms the leg's BM25 summed (the narrowed ones past the budget)."""
    if not leg:
        return []
    ids = json.dumps([cid for cid, _ in leg])
    phrases = _phrases(match)
    distinct = list(dict.fromkeys(phrases))
    own_total = _chunks(conn)
    own_df = dict(zip(distinct, _document_frequencies(conn, table, distinct), strict=True))
    pooled_df = dict(zip(distinct, holding_of(pooled.holding, table, distinct), strict=True))
    weight = dict.fromkeys((cid for cid, _ in leg), 0.0)
    for term in distinct:
        times = phrases.count(term)
        scale = times * bm25_idf(pooled.chunks, pooled_df[term]) / bm25_idf(own_total,
                                                                              own_df[term])
        rows = conn.execute(
            text(f"SELECT rowid, {bm25_score(table)} FROM {table} WHERE {table} MATCH :t "
                 "AND rowid IN (SELECT value FROM json_each(:ids))"),
            {"t": quote(term), "ids": ids}).all()
        for cid, part in rows:
            weight[int(cid)] += float(part) * scale
    shares: dict[int, float] | None = None
    if len(coverage) >= 2:
        rows = conn.execute(
            text(f"SELECT rowid, title, heading, body FROM {table} "
                 "WHERE rowid IN (SELECT value FROM json_each(:ids))"), {"ids": ids}).all()
        held = holders(table, coverage, [tuple(row) for row in rows])
        shares = coverage_shares(pooled.chunks, holding_of(pooled.holding, table, coverage),
                                 held, weight)
    return [KeywordHit(cid, table, weight[cid], 1.0 if shares is None else shares[cid])
            for cid, _ in leg]
