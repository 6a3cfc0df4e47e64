"""The trigram leg of PostgreSQL's lexical search read from postings, not from the texts.

Migration 0006 keeps ``lexical_grams``: for every lexical row, each CJK trigram and each
token (a run of characters neither space, CJK nor ASCII punctuation) of its case-folded
columns with the row's weighted count (title 2, heading 3, body 1; non-overlapping
occurrences, as ``replace`` counts them) and the row's length in trigrams, written by a
trigger with the row; and ``lexical_words``, the tokens, under a trigram index. A CJK
trigram's rows and counts are then an index lookup, a Latin word's the sum over the tokens
holding it, where the text scan of ``pg_lexical._grams_leg`` case-folded and searched every
row of the table per query (decision 0040).

The ranking is that leg's, term for term: BM25 with FTS5's IDF over the rows holding each
term, the average length over the rows matched, the same floating-point operations in the
same order (the per-row sum in term order), ties by chunk id. A row whose tokens were too
long to post carries the marker ``''``; its words are counted in its text. A query with
required (quoted) terms is left to the text scan, which the trigram index already narrows
to the rows holding them. Given counts pooled over several stores (decision 0052), the IDFs
are computed from those instead of from the rows found here.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.lexical import Terms
from kbmcp_adapters.store.pg_budget import chunks
from kbmcp_adapters.store.ranking import BM25_WEIGHTS, Scored
from kbmcp_adapters.store.tables import JOIN_DOCUMENTS, PG_GRAMS, PG_PATH_FILTER, PG_WORDS
from kbmcp_core.cjk import is_cjk
from kbmcp_core.keyword_pool import KeywordStatistics, holding_of

__all__ = ["GRAMS", "grams_leg", "held", "is_gram", "is_word"]

#: Okapi BM25 constants, as FTS5 (and pg_lexical) use them.
_K1, _B = 1.2, 0.75
#: The trigram leg's name in pooled keyword statistics.
GRAMS = "pg_grams"


def is_gram(term: str) -> bool:
    """True for a term ``lexical_grams`` holds as a trigram: three CJK characters."""
    return len(term) == 3 and all(is_cjk(c) for c in term)


def is_word(term: str) -> bool:
    """True for a term found through ``lexical_words``: no CJK character, no space and no
    ASCII punctuation (where the posted tokens end), so each occurrence lies inside one
    posted token."""
    return bool(term) and not any(
        is_cjk(c) or c.isspace() or (c.isascii() and not c.isalnum()) for c in term)


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _count(haystack: str, i: int) -> str:
    """Non-overlapping occurrences of ``:t{i}`` in ``haystack``."""
    return (f"(octet_length({haystack}) - octet_length(replace({haystack}, :t{i}, ''))) "
            f"/ octet_length(:t{i})")


def _worded(words: Sequence[tuple[int, str]], params: dict[str, object]) -> str:
    """The (term, row, count) rows of the word terms: the posted tokens holding each
    word, times the rows' counts of those tokens; and for the rows whose tokens were too
    long to post (marker ``''``), the count in their case-folded texts."""
    title_w, heading_w, body_w = BM25_WEIGHTS
    found = []
    for i, term in words:
        params[f"t{i}"] = term
        params[f"p{i}"] = _like(term)
        found.append(f"SELECT {i} AS i, word, {_count('word', i)} AS k FROM {PG_WORDS} "
                     f"WHERE word LIKE :p{i}")
    counts = ", ".join(f"{title_w:g} * {_count('lower(lx.title)', i)} + {heading_w:g} * "
                       f"{_count('lower(lx.heading)', i)} + {body_w:g} * "
                       f"{_count('lower(lx.body)', i)}" for i, _ in words)
    numbers = ", ".join(str(i) for i, _ in words)
    return (f"SELECT w.i, g.id, sum(g.tf * w.k) AS tf, g.dl FROM "
            f"({' UNION ALL '.join(found)}) AS w JOIN {PG_GRAMS} AS g ON g.gram = w.word "
            "GROUP BY w.i, g.id, g.dl UNION ALL SELECT s.i, s.id, s.tf, s.dl FROM "
            f"(SELECT lx.id, lx.dl, unnest(ARRAY[{numbers}]) AS i, "
            f"unnest(ARRAY[{counts}]) AS tf FROM lexical AS lx WHERE lx.id IN "
            f"(SELECT id FROM {PG_GRAMS} WHERE gram = '')) AS s WHERE s.tf > 0")


def held(term: str, i: int) -> str | None:
    """SQL true when some row holds ``term`` (bound as ``:t{i}``, its ``ILIKE`` pattern as
    ``:p{i}``), answered by the postings: a CJK trigram's own, a word's in the posted
    tokens holding it (``lexical_words`` under its trigram index, then one posting), or
    in the text of a row whose tokens were too long to post; None for a term the postings
    do not answer (the caller tests the texts)."""
    if is_gram(term):
        return f"EXISTS (SELECT 1 FROM {PG_GRAMS} WHERE gram = :t{i})"
    if not is_word(term):
        return None
    found = " OR ".join(f"strpos(lower(lx.{c}), :t{i}) > 0" for c in ("title", "heading", "body"))
    return (f"(EXISTS (SELECT 1 FROM {PG_WORDS} AS w JOIN {PG_GRAMS} AS g ON g.gram = w.word "
            f"WHERE w.word LIKE :p{i}) OR EXISTS (SELECT 1 FROM {PG_GRAMS} AS g JOIN lexical "
            f"AS lx ON lx.id = g.id WHERE g.gram = '' AND ({found})))")


def grams_leg(conn: Connection, match: Terms, coverage: Sequence[str], limit: int,
              paths: str | None, pooled: KeywordStatistics | None = None) -> Scored | None:
    """``pg_lexical._grams_leg`` from the postings, its BM25 on ``pooled`` counts when
    given (leg ``pg_grams``); None for a query it leaves to the text scan (required
    terms, or a term neither a CJK trigram nor a word)."""
    if match.required:
        return None
    terms = [t.lower() for t in dict.fromkeys([*match.all, *coverage])]
    if not all(is_gram(t) or is_word(t) for t in terms):
        return None
    grams = [(i, t) for i, t in enumerate(terms) if is_gram(t)]
    words = [(i, t) for i, t in enumerate(terms) if not is_gram(t)]
    total = chunks(conn)
    params: dict[str, object] = {
        "grams": [t for _, t in grams], "numbers": [i for i, _ in grams],
        "total": total, "k1": _K1, "k1p1": _K1 + 1, "b": _B, "limit": limit,
    }
    parts = []
    if grams:
        parts.append(f"SELECT q.i, g.id, g.tf, g.dl FROM {PG_GRAMS} AS g JOIN unnest("
                     "CAST(:grams AS text[]), CAST(:numbers AS integer[])) AS q(gram, i) "
                     "ON g.gram = q.gram")
    if words:
        parts.append(_worded(words, params))
    hits = " UNION ALL ".join(parts)
    df_sql = "SELECT i, count(*) AS n FROM hits GROUP BY i"
    if pooled is not None:
        total = pooled.chunks
        params.update(total=total, dfi=list(range(len(terms))),
                      dfn=holding_of(pooled.holding, GRAMS, terms))
        df_sql = ("SELECT i, n FROM unnest(CAST(:dfi AS integer[]), CAST(:dfn AS bigint[])) "
                  "AS p(i, n)")
    wanted = restrict = ""
    if paths is not None:
        wanted = f"JOIN chunks ON chunks.id = h.id {JOIN_DOCUMENTS} WHERE {PG_PATH_FILTER}"
        restrict = "WHERE h.id IN (SELECT id FROM matched) "
        params["paths"] = paths
    sql = (
        f"WITH hits AS MATERIALIZED ({hits}), "
        f"df AS ({df_sql}), "
        "idf AS (SELECT i, CASE WHEN x > 0 THEN x ELSE CAST(1e-6 AS float8) END AS w FROM "
        "(SELECT i, ln((CAST(:total - n AS float8) + CAST(0.5 AS float8)) / "
        "(CAST(n AS float8) + CAST(0.5 AS float8))) AS x FROM df) AS d), "
        f"matched AS (SELECT h.id, h.dl FROM hits AS h {wanted} GROUP BY h.id, h.dl), "
        "avgdl AS (SELECT CASE WHEN coalesce(sum(dl), 0) = 0 THEN CAST(1 AS float8) "
        "ELSE CAST(sum(dl) AS float8) / count(*) END AS a FROM matched) "
        "SELECT h.id, sum(idf.w * h.tf * :k1p1 / (h.tf + :k1 * (1 - :b + :b * h.dl / avgdl.a)) "
        "ORDER BY h.i) AS score, array_agg(h.i) AS held, "
        "(SELECT json_object_agg(i, n) FROM df) AS df "
        f"FROM hits AS h JOIN idf ON idf.i = h.i, avgdl {restrict}"
        "GROUP BY h.id, h.dl ORDER BY score DESC, h.id LIMIT :limit"
    )
    # a few thousand postings: starting parallel workers costs more than it saves
    # (measured: 75 ms of a 185 ms query), so this statement runs in one process
    before = conn.execute(text("SELECT current_setting('max_parallel_workers_per_gather')")
                          ).scalar_one()
    conn.execute(text("SELECT set_config('max_parallel_workers_per_gather', '0', true)"))
    try:
        rows = conn.execute(text(sql), params).all()
    finally:
        conn.execute(text("SELECT set_config('max_parallel_workers_per_gather', :v, true)"),
                     {"v": str(before)})
    if not rows:
        return Scored([])
    leg = [(int(row[0]), float(row[1])) for row in rows]
    if len(coverage) < 2:
        return Scored(leg, total)
    df = {int(i): int(n) for i, n in dict(rows[0][3]).items()}
    held = [terms.index(t.lower()) for t in coverage]
    holding = {int(row[0]): set(row[2]) for row in rows}
    holders = [{cid for cid, _ in leg if i in holding[cid]} for i in held]
    return Scored(leg, total, [df.get(i, 0) for i in held], holders)
