"""Lexical search on PostgreSQL with what it ships: a ``tsvector`` word index (English
stemming, GIN) and ``pg_trgm`` substring matching for Chinese, Japanese and Korean text.

The terms come from the same ``compile_query`` as SQLite's FTS5 expressions, and every
term reaches PostgreSQL as a bound parameter: through ``phraseto_tsquery`` (which reads
plain text, never tsquery syntax) or as an escaped ``ILIKE`` substring. The legs mirror
``ranking.rank`` and share its math:

* words: Okapi BM25 weights per term (FTS5's IDF over this table's document frequencies)
  times ``ts_rank`` of that term with the column weights of ``BM25_WEIGHTS``, within
  SQLite's budget of scored matches (``pg_budget``: the counts kept per snapshot, the
  rarest words past it);
* grams: BM25 computed from substring counts per column, as FTS5's trigram table counts
  them (trigram hits weighted title 2, heading 3, body 1); read from the postings of
  migration 0006 (``pg_grams``, decision 0040) unless the query has a quoted term;
* short CJK runs: the same substring scan as SQLite;

each leg relative to its best and weighed by coverage (``ranking.weigh_by_coverage``).

A joint search pools the counts over several stores (decision 0052): ``statistics`` reads
the chunks and the chunks holding each term per leg (the words as the budget counts
them), ``hits`` runs the same legs, the word leg narrowed by the budget on the store's own
counts, with the IDFs and coverage of the summed counts and leaves each weight raw
(``keyword_pool`` makes it relative over every store). Only the average chunk length
stays per store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store import pg_budget
from kbmcp_adapters.store.lexical import Terms, compile_query
from kbmcp_adapters.store.pg_grams import GRAMS, grams_leg, held
from kbmcp_adapters.store.ranking import (
    BM25_WEIGHTS,
    Scored,
    bm25_idf,
    merge,
    substring_leg,
)
from kbmcp_adapters.store.tables import JOIN_DOCUMENTS, PG_LEXICAL, PG_PATH_FILTER
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics, holding_of

__all__ = ["GRAMS", "HAYSTACK", "WORDS", "hits", "rank", "statistics"]

#: The text the trigram index covers; the index (migration 0001) is on this very
#: expression, so a query must spell it the same way to use it.
HAYSTACK = "(lx.title || ' ' || lx.heading || ' ' || lx.body)"
#: ts_rank weights in its order {D, C, B, A}: body (D), unused (C), title (B), heading (A),
#: the ratios of BM25_WEIGHTS (title 2, heading 3, body 1).
_TITLE_W, _HEADING_W, _BODY_W = BM25_WEIGHTS
_TS_WEIGHTS = "{%g,0,%g,%g}" % (_BODY_W / 3, _TITLE_W / 3, _HEADING_W / 3)  # noqa: UP031
#: Okapi BM25 constants, as FTS5 uses them.
K1, B = 1.2, 0.75
#: The legs' names in pooled statistics (not FTS5's: PostgreSQL stems words its own way).
WORDS = "pg_words"
#: A row holds gram term ``{i}`` in one of its columns (its term frequency is not 0).
_GRAM_TEST = ("(strpos(lower(lx.title), :t{i}) > 0 OR strpos(lower(lx.heading), :t{i}) > 0"
              " OR strpos(lower(lx.body), :t{i}) > 0)")
_WORD_QUERY = "phraseto_tsquery('english', :t{i})"
_WORD_TEST = "lx.words @@ " + _WORD_QUERY


def rank(conn: Connection, query: str, limit: int, paths: str | None, *,
         postings: bool = True) -> list[tuple[int, float]]:
    """``ranking.rank`` on PostgreSQL: the same legs, in the same order, merged the same way.
    The trigram leg reads the postings of migration 0006 (``pg_grams``) where it can;
    ``postings=False`` scans the texts instead (the benchmark's before figure)."""
    compiled = compile_query(query)
    legs: list[list[tuple[int, float]]] = []
    if compiled.word_match and not compiled.has_cjk:
        legs.append(_words_leg(conn, compiled.word_match, compiled.word_coverage, limit,
                               paths).relevances())
    if compiled.gram_match and (compiled.has_cjk or not any(legs)):
        legs.append(_any_grams_leg(conn, compiled.gram_match, compiled.gram_coverage, limit,
                                   paths, None, postings=postings).relevances())
    if compiled.short_runs and not compiled.gram_match:
        legs.append(substring_leg(conn, compiled.short_runs, limit, paths,
                                  find="strpos", path_filter=PG_PATH_FILTER))
    return merge(legs, limit)


def _any_grams_leg(conn: Connection, match: Terms, coverage: Sequence[str], limit: int,
                   paths: str | None, pooled: KeywordStatistics | None, *,
                   postings: bool = True) -> Scored:
    """The trigram leg from the postings of migration 0006 where it can, else the scan."""
    leg = grams_leg(conn, match, coverage, limit, paths, pooled) if postings else None
    return leg if leg is not None else _grams_leg(conn, match, coverage, limit, paths, pooled)


def statistics(conn: Connection, query: str, paths: str | None, *,
               presence: bool = False) -> KeywordStatistics:
    """This store's counts for ``query`` (decision 0052): chunks in the index, the chunks
    holding each term of each leg (as the leg counts them), and whether the word leg
    matched a chunk among ``paths`` (else the trigram leg stands in, as in ``rank``).
    The words' counts are the word leg's own (``pg_budget.word_counts``: within the budget,
    kept per snapshot); the substring terms are counted only when the trigram leg may run
    (a CJK query, or this store's words matched nothing), else said held (1) or not.
    ``presence`` asks for less: a term held by some chunk may count 1 (or the planner's
    estimate) however many hold it: a word's first match, and for a substring the trigram
    index's first candidate (counting them scanned every text of the table)."""
    compiled = compile_query(query)
    holding: dict[tuple[str, str], int] = {}
    found: set[str] = set()
    terms: list[str] = []
    if compiled.word_match and not compiled.has_cjk:
        terms = _terms_of(compiled.word_match, compiled.word_coverage)
    if presence or not terms:
        total, df = pg_budget.counts(conn, terms, _WORD_TEST, 1 if presence else None)
    else:  # what the word leg counts, within the budget (a joint search pools them)
        total, df = pg_budget.word_counts(conn, compiled.word_match, terms, paths, _WORD_TEST)
    if terms:
        holding.update(((WORDS, t), df[t]) for t in terms)
        match = compiled.word_match
        if paths is None and not match.required:
            matched = any(df[t] for t in match.optional)
        else:
            params: dict[str, object] = {f"t{i}": t for i, t in enumerate(terms)}
            source, restrict = _from(paths, params)
            where = _where(match, {t: i for i, t in enumerate(terms)}, _WORD_TEST)
            matched = conn.execute(text(f"SELECT 1 {source} WHERE {where}{restrict} LIMIT 1"),
                                   params).first() is not None
        if matched:
            found.add(WORDS)
    if compiled.gram_match:
        match = compiled.gram_match
        terms = [t.lower() for t in _terms_of(match, compiled.gram_coverage)]
        params = {f"t{i}": t for i, t in enumerate(terms)}
        # the substring counts serve the trigram leg, which a joint search runs only when
        # no store's words matched: when this store's did, a term is only said held or not
        # (counting scanned every text; decision 0058's addendum "PostgreSQL's first index")
        leg_may_run = compiled.has_cjk or WORDS not in found
        count = _held if presence or not leg_may_run else _frequencies
        holding.update(zip(((GRAMS, t) for t in terms),
                           count(conn, terms, _GRAM_TEST, params, _narrow(match, terms, params)),
                           strict=True))
    return KeywordStatistics(total, holding, frozenset(found))


def hits(conn: Connection, query: str, limit: int, paths: str | None,
         pooled: KeywordStatistics) -> list[KeywordHit]:
    """``rank``'s legs, each candidate scored on ``pooled`` (not yet relative to any
    best: ``keyword_pool.pooled_relevance`` does that over every store). The trigram leg
    stands in for the words when no store's words found anything."""
    compiled = compile_query(query)
    out: list[KeywordHit] = []
    if compiled.word_match and not compiled.has_cjk:
        out += _words_leg(conn, compiled.word_match, compiled.word_coverage, limit, paths,
                          pooled).hits(WORDS)
    if compiled.gram_match and (compiled.has_cjk or WORDS not in pooled.found):
        out += _any_grams_leg(conn, compiled.gram_match, compiled.gram_coverage, limit, paths,
                              pooled).hits(GRAMS)
    if compiled.short_runs and not compiled.gram_match:
        out += [KeywordHit(cid, None, share) for cid, share in substring_leg(
            conn, compiled.short_runs, limit, paths, find="strpos", path_filter=PG_PATH_FILTER)]
    return out


def _chunks(conn: Connection) -> int:
    return pg_budget.chunks(conn)


def _terms_of(match: Terms, coverage: Sequence[str]) -> list[str]:
    """Every distinct term the leg needs: the match expression's, then coverage's."""
    return list(dict.fromkeys([*match.all, *coverage]))


def _where(match: Terms, index: dict[str, int], test: str) -> str:
    """The match condition: every required term, else any optional one. ``test`` formats
    the condition on term number ``{i}``."""
    if match.required:
        return " AND ".join(test.format(i=index[t]) for t in match.required)
    return "(" + " OR ".join(test.format(i=index[t]) for t in match.optional) + ")"


def _from(paths: str | None, params: dict[str, object]) -> tuple[str, str]:
    """The FROM clause over the lexical table and the path restriction, if any."""
    if paths is None:
        return f"FROM {PG_LEXICAL} AS lx", ""
    params["paths"] = paths
    return (f"FROM {PG_LEXICAL} AS lx JOIN chunks ON chunks.id = lx.id {JOIN_DOCUMENTS}",
            f" AND {PG_PATH_FILTER}")


def _frequencies(conn: Connection, terms: Sequence[str], test: str,
                 params: dict[str, object], narrow: str = "") -> list[int]:
    """Rows holding each term (among those ``narrow`` keeps), in one scan of the rows
    holding any."""
    counts = ", ".join(f"count(*) FILTER (WHERE {test.format(i=i)})" for i in range(len(terms)))
    anything = " OR ".join(test.format(i=i) for i in range(len(terms)))
    narrowed = f" AND {narrow}" if narrow else ""
    row = conn.execute(text(f"SELECT {counts} FROM {PG_LEXICAL} AS lx WHERE ({anything})"
                            f"{narrowed}"), params).one()
    return [int(n) for n in row]


def _held(conn: Connection, terms: Sequence[str], test: str,
          params: dict[str, object], narrow: str = "") -> list[int]:
    """1 for each substring term some row holds (among those ``narrow`` keeps), else 0:
    from the postings where they answer (``pg_grams.held``), else the first row ``test``
    finds in the texts."""
    params.update({f"p{i}": _like(t) for i, t in enumerate(terms)})
    texts = [f"EXISTS (SELECT 1 FROM {PG_LEXICAL} AS lx WHERE {test.format(i=i)}"
             f"{f' AND {narrow}' if narrow else ''})" for i in range(len(terms))]
    posted = [None if narrow else held(t, i) for i, t in enumerate(terms)]
    found = ", ".join(p or t for p, t in zip(posted, texts, strict=True))
    return [int(bool(h)) for h in conn.execute(text(f"SELECT {found}"), params).one()]


def _counts(pooled: KeywordStatistics | None, leg: str, terms: Sequence[str],
            own: Callable[[], list[int]], conn: Connection) -> tuple[int, list[int]]:
    """(chunks, chunks holding each term): the pooled counts when given, else the store's."""
    if pooled is not None:
        return pooled.chunks, holding_of(pooled.holding, leg, terms)
    return _chunks(conn), own()


def _leg(conn: Connection, terms: Sequence[str], coverage: Sequence[str], scored: Sequence[int],
         where: str, limit: int, paths: str | None, params: dict[str, object],
         counted: tuple[int, Sequence[int]], floor: int | None = None) -> Scored:
    """Run the word leg: rows matching ``where`` (of at least chunk id ``floor``) ranked
    by the BM25 sum over the terms ``scored`` (indexes into ``terms``), with which of the
    ``coverage`` terms each holds; ``counted``: (chunks, chunks holding each term)."""
    total, df = counted
    params.update({f"idf{i}": bm25_idf(total, n) for i, n in enumerate(df)})
    params["limit"] = limit
    source, restrict = _from(paths, params)
    if floor is not None:
        restrict += " AND lx.id >= :floor"
        params["floor"] = floor
    score = " + ".join(
        f"CAST(:idf{i} AS float8) * ts_rank('{_TS_WEIGHTS}', lx.words, "
        f"{_WORD_QUERY.format(i=i)}, 1)" for i in scored)
    held = [terms.index(t) for t in coverage]
    flags = "".join(f", ({_WORD_TEST.format(i=i)}) AS h{i}" for i in held)
    sql = (f"SELECT lx.id, ({score}) AS score{flags} {source} WHERE {where}{restrict} "
           "ORDER BY score DESC, lx.id LIMIT :limit")
    rows = conn.execute(text(sql), params).all()
    leg = [(int(row[0]), float(row[1])) for row in rows]
    if len(coverage) < 2:
        return Scored(leg, total)
    holders = [{int(row[0]) for row in rows if row[2 + k]} for k in range(len(held))]
    return Scored(leg, total, [df[i] for i in held], holders)


def _words_leg(conn: Connection, match: Terms, coverage: Sequence[str], limit: int,
               paths: str | None, pooled: KeywordStatistics | None = None) -> Scored:
    """BM25 (``ts_rank`` per term times its IDF) of the chunks holding the query's words,
    within ``KEYWORD_BUDGET`` scored matches (``pg_budget.within``: the whole query below
    it, else its rarest words, as SQLite's leg), decided on this store's own counts; a
    joint search's leg scores what that keeps on the ``pooled`` counts' IDFs."""
    terms = _terms_of(match, coverage)
    index = {t: i for i, t in enumerate(terms)}
    params: dict[str, object] = {f"t{i}": t for i, t in enumerate(terms)}
    plan = pg_budget.within(conn, match, terms, limit, paths, _WORD_TEST)
    which: Sequence[int] = range(len(terms))
    scored = match  # the whole query, as before the budget
    if plan.terms is not None:
        scored, which = plan.terms, [index[t] for t in plan.terms.all]
    counted = ((plan.total, [plan.df[t] for t in terms]) if pooled is None
               else (pooled.chunks, holding_of(pooled.holding, WORDS, terms)))
    return _leg(conn, terms, coverage, which, _where(scored, index, _WORD_TEST), limit, paths,
                params, counted, plan.floor)


def _like(term: str) -> str:
    """``%term%`` for ILIKE, with the pattern characters of ``term`` escaped."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _narrow(match: Terms, terms: Sequence[str], params: dict[str, object]) -> str:
    """The condition keeping the rows that hold every required (quoted) term, through the
    trigram index; "" when there are none."""
    if not match.required:
        return ""
    params.update({f"p{i}": _like(t) for i, t in enumerate(terms)})
    required = {r.lower() for r in match.required}
    return " AND ".join(f"{HAYSTACK} ILIKE :p{i}" for i, t in enumerate(terms) if t in required)


def _grams_leg(conn: Connection, match: Terms, coverage: Sequence[str], limit: int,
               paths: str | None, pooled: KeywordStatistics | None = None) -> Scored:
    """BM25 over substring counts, in one pass over the rows: each row's text is
    case-folded once and a term is counted only where ``strpos`` finds it (most rows hold
    few of a query's trigrams). Required terms (quoted runs) narrow the rows first through
    the trigram index; the scoring itself is the same arithmetic as ``bm25_idf``."""
    terms = [t.lower() for t in _terms_of(match, coverage)]
    params: dict[str, object] = {f"t{i}": t for i, t in enumerate(terms)}

    def count(column: str, i: int) -> str:
        return f"(length({column}) - length(replace({column}, :t{i}, ''))) / length(:t{i})"

    tf = ", ".join(
        f"CASE WHEN strpos(hay, :t{i}) > 0 THEN {_TITLE_W:g} * {count('t', i)} + "
        f"{_HEADING_W:g} * {count('h', i)} + {_BODY_W:g} * {count('b', i)} ELSE 0 END"
        for i in range(len(terms))
    )
    narrow = _narrow(match, terms, params)
    narrow = f" WHERE {narrow}" if narrow else ""
    wanted, join = "true", ""
    if paths is not None:
        wanted, join = PG_PATH_FILTER, f" JOIN chunks ON chunks.id = lx.id {JOIN_DOCUMENTS}"
        params["paths"] = paths
    sql = (
        f"SELECT id, dl, wanted, ARRAY[{tf}] FROM (SELECT lx.id, lower(lx.title) AS t, "
        "lower(lx.heading) AS h, lower(lx.body) AS b, lower("
        f"{HAYSTACK}) AS hay, greatest(length(lx.title) - 2, 0) + "
        "greatest(length(lx.heading) - 2, 0) + greatest(length(lx.body) - 2, 0) AS dl, "
        f"{wanted} AS wanted FROM {PG_LEXICAL} AS lx{join}{narrow} OFFSET 0) AS rows"
    )
    rows = [(int(cid), int(dl), bool(ok), [float(n) for n in tfs])
            for cid, dl, ok, tfs in conn.execute(text(sql), params)]
    rows = [r for r in rows if any(r[3])]
    total, df = _counts(pooled, GRAMS, terms, lambda: [
        sum(1 for r in rows if r[3][i] > 0) for i in range(len(terms))], conn)
    idf = [bm25_idf(total, n) for n in df]
    required = [terms.index(r.lower()) for r in match.required]
    matched = [r for r in rows if r[2] and all(r[3][i] > 0 for i in required)]
    if not matched:
        return Scored([])
    avg = sum(r[1] for r in matched) / len(matched) or 1.0
    scored = []
    for cid, dl, _, tfs in matched:
        norm = K1 * (1 - B + B * dl / avg)
        scored.append((cid, sum(idf[i] * f * (K1 + 1) / (f + norm)
                                for i, f in enumerate(tfs) if f > 0)))
    leg = sorted(scored, key=lambda item: (-item[1], item[0]))[:limit]
    if len(coverage) < 2:
        return Scored(leg, total)
    held = [terms.index(t.lower()) for t in coverage]
    tf_of = {r[0]: r[3] for r in matched}
    holders = [{cid for cid, _ in leg if tf_of[cid][i] > 0} for i in held]
    return Scored(leg, total, [df[i] for i in held], holders)
