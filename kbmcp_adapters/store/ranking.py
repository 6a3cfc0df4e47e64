"""Lexical ranking on the two FTS5 tables: BM25 legs, coverage weighting and merging.

Shared by ``SqlIndexStore.lexical_search`` and the benchmarks (``bm25_score``), so a
benchmark measures the same SQL the store runs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from kbmcp_adapters.store.lexical import compile_query
from kbmcp_adapters.store.tables import FTS_GRAMS, FTS_WORDS, JOIN_DOCUMENTS, PATH_FILTER

__all__ = ["BM25_WEIGHTS", "bm25_score", "rank"]

log = logging.getLogger(__name__)

#: BM25 weights of the lexical columns title, heading and body.
BM25_WEIGHTS = (2.0, 3.0, 1.0)


def bm25_score(table: str) -> str:
    """The SQL expression of a matched row's BM25 relevance in ``table`` (higher is
    better), with the column weights of ``BM25_WEIGHTS``."""
    return f"-bm25({table}, {', '.join(str(w) for w in BM25_WEIGHTS)})"


def rank(conn: Connection, query: str, limit: int, paths: str | None) -> list[tuple[int, float]]:
    """BM25 on the word index; for a query with CJK text, BM25 on the trigram index
    alone (its Latin words join as substrings); the trigram index also when the words
    find nothing; a substring scan for CJK runs too short for trigrams.

    ``paths`` is a JSON list of document paths restricting the search, or None. Scores
    are relevance in (0, 1]: BM25 relative to the query's best, weighed by how much of
    the query the chunk covers (see ``_weigh_by_coverage``); a chunk found by several
    legs keeps its highest score.
    """
    compiled = compile_query(query)
    legs: list[list[tuple[int, float]]] = []
    if compiled.words and not compiled.has_cjk:
        leg = _fts_leg(conn, FTS_WORDS, compiled.words, limit, paths)
        legs.append(_weigh_by_coverage(conn, FTS_WORDS, compiled.word_terms, leg))
    if compiled.grams and (compiled.has_cjk or not any(legs)):
        leg = _fts_leg(conn, FTS_GRAMS, compiled.grams, limit, paths)
        legs.append(_weigh_by_coverage(conn, FTS_GRAMS, compiled.gram_terms, leg))
    if compiled.short_runs and not compiled.grams:
        legs.append(_substring_leg(conn, compiled.short_runs, limit, paths))
    merged: dict[int, float] = {}
    for leg in legs:  # every leg scores in [0, 1] already
        for cid, score in leg:
            merged[cid] = max(score, merged.get(cid, 0.0))
    return sorted(merged.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _weigh_by_coverage(
    conn: Connection, table: str, terms: Sequence[str], leg: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Relevance in [0, 1]: BM25 relative to the best BM25 of the query, times (the
    IDF-weighted share of the query's terms the chunk contains)², re-ranked.

    BM25 alone ranks a chunk that matched one common word of a long question first, and
    fusion then trusts that best hit fully; weighing by coverage makes a lexical match
    count in proportion to how much of the question it answers.
    """
    if not leg:
        return leg
    best = max(score for _, score in leg)
    leg = [(cid, score / best if best > 0 else 1.0) for cid, score in leg]
    if len(terms) < 2:
        return leg
    # every chunk has one row in each lexical table; counting chunks reads a small b-tree,
    # counting an FTS5 table scans it (18 ms at 8k chunks)
    total = conn.execute(text("SELECT count(*) FROM chunks")).scalar_one() or 1
    candidates = {cid for cid, _ in leg}
    # one round trip: every chunk holding each term (cheaper than an IN restriction)
    union = " UNION ALL ".join(
        f"SELECT {i} AS term, rowid FROM {table} WHERE {table} MATCH :t{i}"
        for i in range(len(terms))
    )
    try:
        rows = conn.execute(text(union), {f"t{i}": t for i, t in enumerate(terms)}).all()
    except OperationalError:
        return leg
    df = [0] * len(terms)
    holders: list[set[int]] = [set() for _ in terms]
    for i, rowid in rows:
        df[i] += 1
        if rowid in candidates:
            holders[i].add(rowid)
    idf = {i: math.log((total - df[i] + 0.5) / (df[i] + 0.5) + 1.0) for i in range(len(terms))}
    weight = sum(idf.values())
    if weight <= 0:
        return leg
    scored = [
        (cid, score * (sum(w for i, w in idf.items() if cid in holders[i]) / weight) ** 2)
        for cid, score in leg
    ]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def _fts_leg(
    conn: Connection, table: str, expression: str, limit: int, paths: str | None
) -> list[tuple[int, float]]:
    """(chunk id, BM25 relevance) best first; see ``BM25_WEIGHTS``."""
    sql = f"SELECT {table}.rowid, {bm25_score(table)} AS score FROM {table}"
    params: dict[str, object] = {"expression": expression, "limit": limit}
    if paths is not None:
        sql += f" JOIN chunks ON chunks.id = {table}.rowid {JOIN_DOCUMENTS}"
        params["paths"] = paths
    sql += f" WHERE {table} MATCH :expression"
    if paths is not None:
        sql += f" AND {PATH_FILTER}"
    try:
        rows = conn.execute(text(sql + " ORDER BY score DESC LIMIT :limit"), params).all()
    except OperationalError as exc:
        # The compiler quotes every term, so this is a compiler bug, not user error:
        # the lexical leg degrades to no hits rather than failing the search.
        if "fts5" not in str(exc.orig):
            raise
        log.warning("lexical query %r rejected by FTS5: %s", expression, exc.orig)
        return []
    return [(int(cid), float(score)) for cid, score in rows]


def _substring_leg(
    conn: Connection, runs: Sequence[str], limit: int, paths: str | None
) -> list[tuple[int, float]]:
    """Chunks containing the most of ``runs`` (CJK runs too short for trigrams)."""
    haystack = (
        "documents.title || ' ' || coalesce(chunks.heading, '') || ' ' "
        "|| coalesce(chunks.content, '')"
    )
    hits = " + ".join(f"(instr({haystack}, :run{i}) > 0)" for i in range(len(runs)))
    params: dict[str, object] = {f"run{i}": run for i, run in enumerate(runs)}
    params["limit"] = limit
    where = ""
    if paths is not None:
        where = f" WHERE {PATH_FILTER}"
        params["paths"] = paths
    sql = (
        f"SELECT id, hits FROM (SELECT chunks.id AS id, {hits} AS hits FROM chunks "
        f"{JOIN_DOCUMENTS}{where}) WHERE hits > 0 ORDER BY hits DESC, id LIMIT :limit"
    )
    rows = conn.execute(text(sql), params).all()
    return [(int(cid), float(n) / len(runs)) for cid, n in rows]
