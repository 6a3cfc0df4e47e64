"""Lexical ranking: the math both dialects share, and the SQLite legs on the FTS5 tables.

The shared part (``relative``, ``weigh_by_coverage``, ``merge``, ``bm25_idf``) is pure:
each dialect supplies its BM25-like leg and, for coverage, how many chunks hold each
query term and which candidates do (``pg_lexical`` is the PostgreSQL side). The SQLite
legs are shared with the benchmarks (``bm25_score``), so a benchmark measures the same
SQL the store runs.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from kbmcp_adapters.store.keyword_budget import (
    KEYWORD_BUDGET,
    held_counts,
    match_counts,
    narrow,
    row_count,
    sample_floor,
    token_counts,
)
from kbmcp_adapters.store.keyword_filter import (
    Within,
    counts_within,
    kept_rows,
    read_within,
    sample_within,
)
from kbmcp_adapters.store.keyword_groups import top_by_groups
from kbmcp_adapters.store.lexical import LexicalQuery, Terms, compile_query, quote
from kbmcp_adapters.store.scratch_fts import holders, tokens
from kbmcp_adapters.store.tables import FTS_GRAMS, FTS_WORDS, JOIN_DOCUMENTS, PATH_FILTER
from kbmcp_core.keyword_pool import KeywordHit

__all__ = [
    "BM25_WEIGHTS",
    "Scored",
    "bm25_idf",
    "bm25_score",
    "coverage_shares",
    "merge",
    "rank",
    "relative",
    "substring_leg",
    "weigh_by_coverage",
    "words_leg",
]

log = logging.getLogger(__name__)

#: BM25 weights of the lexical columns title, heading and body.
BM25_WEIGHTS = (2.0, 3.0, 1.0)


def bm25_score(table: str) -> str:
    """The SQL expression of a matched row's BM25 relevance in ``table`` (higher is
    better), with the column weights of ``BM25_WEIGHTS``."""
    return f"-bm25({table}, {', '.join(str(w) for w in BM25_WEIGHTS)})"


def rank(conn: Connection, query: str, limit: int, within: str | Within | None
         ) -> list[tuple[int, float]]:
    """BM25 on the word index; for a query with CJK text, BM25 on the trigram index
    alone (its Latin words join as substrings); the trigram index also when the words
    find nothing; a substring scan for CJK runs too short for trigrams.

    ``within`` restricts the search to some documents' chunks (``keyword_filter``: their
    ids, or a JSON list of their paths), or is None. Scores
    are relevance in (0, 1]: BM25 relative to the query's best, weighed by how much of
    the query the chunk covers (see ``_weigh_by_coverage``); a chunk found by several
    legs keeps its highest score.
    """
    compiled = compile_query(query)
    legs: list[list[tuple[int, float]]] = []
    if compiled.words and not compiled.has_cjk:
        leg, _ = words_leg(conn, compiled, limit, within)
        legs.append(_weigh_by_coverage(conn, FTS_WORDS, compiled.word_coverage, leg))
    if compiled.grams and (compiled.has_cjk or not any(legs)):
        leg = _fts_leg(conn, FTS_GRAMS, compiled.grams, limit, within)
        legs.append(_weigh_by_coverage(conn, FTS_GRAMS, compiled.gram_coverage, leg))
    if compiled.short_runs and not compiled.grams:
        legs.append(substring_leg(conn, compiled.short_runs, limit, within))
    return merge(legs, limit)


def words_leg(conn: Connection, compiled: LexicalQuery, limit: int,
              within: str | Within | None) -> tuple[list[tuple[int, float]], Terms]:
    """BM25 on the word index, within ``keyword_budget.KEYWORD_BUDGET`` scored matches: the
    whole query's expression while its words hold fewer matches together (or the index
    fewer chunks), else its rarest words' (``keyword_budget.narrow``; decision 0058).
    Under a filter keeping more chunks than the budget, the words are counted in the
    filter (``keyword_filter.counts_within``) and, when they hold more matches there than
    the budget, the whole query's best are found group by group (``_groups``). With the
    leg, the terms whose phrases its BM25 sums (a joint search's pooled leg scores the
    same candidates on the same terms with pooled IDFs, ``pooled_ranking``)."""
    assert compiled.words is not None
    match, expression, floor = compiled.word_match, compiled.words, None
    scored = match  # the whole query's phrases, as before the budget
    try:
        rows = row_count(conn, FTS_WORDS)
        if rows is not None and rows[0] > KEYWORD_BUDGET and not match.required:
            cut = {w: tokens(FTS_WORDS, w) for w in match.optional}
            single = {w: t[0] for w, t in cut.items() if len(t) == 1}
            counts = token_counts(conn, FTS_WORDS, sorted(set(single.values())))
            df = {w: counts.get(token, 0) for w, token in single.items()}
            if within is not None:
                if sum(df.values()) <= KEYWORD_BUDGET or len(df) < len(match.optional):
                    return _fts_leg(conn, FTS_WORDS, expression, limit, within), scored
                within = read_within(conn, within) if isinstance(within, str) else within
                if len(within) > KEYWORD_BUDGET:
                    held = counts_within(conn, FTS_WORDS, df, within, KEYWORD_BUDGET)
                    if sum(held.values()) > KEYWORD_BUDGET:
                        # every group's scores are the whole query's (``keyword_groups``)
                        return _groups(conn, compiled.words, match.optional, df, rows[0],
                                       held, limit, within), scored
                return _fts_leg(conn, FTS_WORDS, expression, limit, within), scored
            narrowed = narrow(match, df, rows[0], limit, KEYWORD_BUDGET)
            if narrowed is not None and (narrower := narrowed.terms.fts5()):
                expression, scored = narrower, narrowed.terms
                if narrowed.sampled:
                    floor = sample_floor(conn, FTS_WORDS, expression, KEYWORD_BUDGET)
    except OperationalError as exc:  # below head (no vocabulary table): the whole query
        if "no such table" not in str(exc.orig):
            raise
    return _fts_leg(conn, FTS_WORDS, expression, limit, within, floor), scored


def _groups(conn: Connection, whole: str, words: Sequence[str], df: dict[str, int],
            rows: int, held: dict[str, int], limit: int, within: Within
            ) -> list[tuple[int, float]]:
    """The whole query's best ``limit`` in the filter, group by group
    (``keyword_groups.top_by_groups``; ``df``: each word's chunks in the index, ``held``
    in the filter), each group that may hold more matches there than the budget scored
    on a run of the filter's chunks holding about the budget of them
    (``keyword_filter.sample_within``)."""

    def leg(expression: str, n: int, size: int) -> list[tuple[int, float]]:
        scored = sample_within(within, size, KEYWORD_BUDGET) or within
        return _fts_leg(conn, FTS_WORDS, expression, n, scored)

    idf = {w: bm25_idf(rows, df[w]) for w in words}
    return top_by_groups(words, idf, held, limit, leg, whole)


def merge(legs: Sequence[Sequence[tuple[int, float]]], limit: int) -> list[tuple[int, float]]:
    """One ranking of several legs scored in [0, 1]: a chunk keeps its highest score."""
    merged: dict[int, float] = {}
    for leg in legs:
        for cid, score in leg:
            merged[cid] = max(score, merged.get(cid, 0.0))
    return sorted(merged.items(), key=lambda item: (-item[1], item[0]))[:limit]


def relative(leg: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """Scores relative to the leg's best (so in (0, 1] for positive scores)."""
    if not leg:
        return []
    best = max(score for _, score in leg)
    return [(cid, score / best if best > 0 else 1.0) for cid, score in leg]


def bm25_idf(total: int, df: int) -> float:
    """The IDF of a term held by ``df`` of ``total`` rows, as SQLite FTS5's bm25() has it
    (never below a tiny positive floor, so a term in every row still counts a little)."""
    idf = math.log((total - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else 1e-6


def weigh_by_coverage(
    leg: Sequence[tuple[int, float]],
    total: int,
    df: Sequence[int],
    holders: Sequence[set[int]],
) -> list[tuple[int, float]]:
    """Relevance in [0, 1]: the leg's score relative to its best, times (the
    IDF-weighted share of the query's terms the chunk contains)², re-ranked.

    ``df[i]`` is how many of the ``total`` chunks hold term i, ``holders[i]`` which of the
    leg's chunks do. BM25 alone ranks a chunk that matched one common word of a long
    question first, and fusion then trusts that best hit fully; weighing by coverage
    makes a lexical match count in proportion to how much of the question it answers.
    """
    leg = relative(leg)
    if len(df) < 2 or not leg:
        return leg
    shares = coverage_shares(total, df, holders, [cid for cid, _ in leg])
    if shares is None:
        return leg
    scored = [(cid, score * shares[cid]) for cid, score in leg]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def coverage_shares(total: int, df: Sequence[int], holders: Sequence[set[int]],
                    ids: Iterable[int]) -> dict[int, float] | None:
    """Each of ``ids``' coverage factor: (the IDF-weighted share of the query's terms it
    holds)², with ``df[i]`` of ``total`` chunks holding term i and ``holders[i]`` the ids
    that do; None when the terms weigh nothing."""
    total = total or 1
    idf = {i: math.log((total - n + 0.5) / (n + 0.5) + 1.0) for i, n in enumerate(df)}
    weight = sum(idf.values())
    if weight <= 0:
        return None
    return {cid: (sum(w for i, w in idf.items() if cid in holders[i]) / weight) ** 2
            for cid in ids}


@dataclass(frozen=True, slots=True)
class Scored:
    """One leg's candidates with their raw BM25 weights, best first, and what coverage
    weighs them by: ``df`` of ``total`` chunks hold each coverage term, ``holders`` which
    candidates do."""

    leg: list[tuple[int, float]]
    total: int = 0
    df: Sequence[int] = ()
    holders: Sequence[set[int]] = ()

    def relevances(self) -> list[tuple[int, float]]:
        """Relative to the best, times coverage: the leg of one store."""
        return weigh_by_coverage(self.leg, self.total, self.df, self.holders)

    def hits(self, name: str) -> list[KeywordHit]:
        """Raw weights and coverage, for ``keyword_pool.pooled_relevance``."""
        shares = None
        if len(self.df) >= 2:
            shares = coverage_shares(self.total, self.df, self.holders,
                                     [cid for cid, _ in self.leg])
        return [KeywordHit(cid, name, w, 1.0 if shares is None else shares[cid])
                for cid, w in self.leg]


def _weigh_by_coverage(
    conn: Connection, table: str, terms: Sequence[str], leg: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """``weigh_by_coverage`` for the plain (unquoted) coverage ``terms`` of FTS5 ``table``.

    A term's document frequency comes from the table's fts5vocab twin (migration 0003),
    one lookup per token, instead of reading every posting of the term; only a term that
    FTS5 cuts into several tokens (a phrase, a long substring on the trigram table) is
    counted with a MATCH. Which candidates hold each term is decided on the candidates'
    own rows, in a scratch FTS5 table with the same tokenizer: the same answer as a MATCH
    on the whole table, for the cost of a few dozen rows."""
    if not leg or len(terms) < 2:
        return relative(leg)
    # every chunk has one row in each lexical table: their number is the first varint of
    # the table's averages record (``row_count``); counting chunks reads a b-tree of a
    # million entries at a million chunks (about 10 ms), counting the FTS5 table scans it
    counted = row_count(conn, table)
    total = (counted[0] if counted is not None else
             int(conn.execute(text("SELECT count(*) FROM chunks")).scalar_one())) or 1
    candidates = [cid for cid, _ in leg]
    try:
        df = _document_frequencies(conn, table, terms)
        rows = conn.execute(
            text(f"SELECT rowid, title, heading, body FROM {table} "
                 "WHERE rowid IN (SELECT value FROM json_each(:ids))"),
            {"ids": json.dumps(candidates)},
        ).all()
    except OperationalError as exc:
        if "no such table" not in str(exc.orig):
            return relative(leg)
        # an index opened below head (no vocabulary table): read the postings
        return _weigh_by_postings(conn, table, [quote(t) for t in terms], leg, total)
    held = holders(table, terms, [tuple(row) for row in rows])
    return weigh_by_coverage(leg, total, df, held)


def _document_frequencies(conn: Connection, table: str, terms: Sequence[str], *,
                          presence: bool = False) -> list[int]:
    """How many rows of ``table`` hold each term, as ``MATCH '"term"'`` would count them.
    ``presence``: a term of several tokens counts 1 when some row holds it, not how many
    (``held_counts``); a single token's count is read from the vocabulary either way."""
    cut = [tokens(table, term) for term in terms]
    single = sorted({t[0] for t in cut if len(t) == 1})
    counts = token_counts(conn, table, single) if single else {}
    several = [term for term, t in zip(terms, cut, strict=True) if len(t) > 1]
    count_several = held_counts if presence else match_counts
    matched = count_several(conn, table, several) if several else {}
    df: list[int] = []
    for term, its_tokens in zip(terms, cut, strict=True):
        if len(its_tokens) == 1:
            df.append(counts.get(its_tokens[0], 0))
        elif not its_tokens:
            df.append(0)
        else:
            df.append(matched[term])
    return df


def _weigh_by_postings(
    conn: Connection, table: str, terms: Sequence[str], leg: list[tuple[int, float]],
    total: int,
) -> list[tuple[int, float]]:
    """``weigh_by_coverage`` from every posting of each quoted term (an index without
    vocabulary tables; also the reference the vocabulary path is tested against)."""
    candidates = {cid for cid, _ in leg}
    # one round trip: every chunk holding each term (cheaper than an IN restriction)
    union = " UNION ALL ".join(
        f"SELECT {i} AS term, rowid FROM {table} WHERE {table} MATCH :t{i}"
        for i in range(len(terms))
    )
    try:
        rows = conn.execute(text(union), {f"t{i}": t for i, t in enumerate(terms)}).all()
    except OperationalError:
        return relative(leg)
    df = [0] * len(terms)
    holders: list[set[int]] = [set() for _ in terms]
    for i, rowid in rows:
        df[i] += 1
        if rowid in candidates:
            holders[i].add(rowid)
    return weigh_by_coverage(leg, total, df, holders)


def _fts_leg(
    conn: Connection, table: str, expression: str, limit: int, within: str | Within | None,
    floor: int | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, BM25 relevance) best first; see ``BM25_WEIGHTS``. ``within``: only the
    matches of those chunks (``keyword_filter.kept_rows``); ``floor``: only the matches of
    at least that chunk id (a sample of them, ``keyword_budget``)."""
    sql = (f"SELECT {table}.rowid AS id, {bm25_score(table)} AS score FROM {table} "
           f"WHERE {table} MATCH :expression")
    params: dict[str, object] = {"expression": expression, "limit": limit}
    if floor is not None:
        sql += f" AND {table}.rowid >= :floor"
        params["floor"] = floor
    if within is not None:
        # the allowed chunk ids as a list the matches are checked against; BM25 is then
        # scored only for the rows kept, so a filtered search costs less than an
        # unfiltered one (0019)
        kept, more = kept_rows(conn, within)
        sql = f"SELECT id, score FROM ({sql}) AS matched WHERE {kept}"
        params |= more
    try:
        rows = conn.execute(text(sql + " ORDER BY score DESC, id LIMIT :limit"), params).all()
    except OperationalError as exc:
        # The compiler quotes every term, so this is a compiler bug, not user error:
        # the lexical leg degrades to no hits rather than failing the search.
        if "fts5" not in str(exc.orig):
            raise
        log.warning("lexical query %r rejected by FTS5: %s", expression, exc.orig)
        return []
    return [(int(cid), float(score)) for cid, score in rows]


def substring_leg(
    conn: Connection,
    runs: Sequence[str],
    limit: int,
    paths: str | Within | None,
    *,
    find: str = "instr",
    path_filter: str = PATH_FILTER,
) -> list[tuple[int, float]]:
    """Chunks containing the most of ``runs`` (CJK runs too short for trigrams).

    ``find`` is the dialect's ``instr(haystack, needle)`` (PostgreSQL: ``strpos``) and
    ``path_filter`` its SQL for the ``:paths`` JSON list (a ``Within``: by chunk id)."""
    haystack = (
        "documents.title || ' ' || coalesce(chunks.heading, '') || ' ' "
        "|| coalesce(chunks.content, '')"
    )
    hits = " + ".join(
        f"(CASE WHEN {find}({haystack}, :run{i}) > 0 THEN 1 ELSE 0 END)"
        for i in range(len(runs))
    )
    params: dict[str, object] = {f"run{i}": run for i, run in enumerate(runs)}
    params["limit"] = limit
    where = ""
    if isinstance(paths, Within):
        kept, more = kept_rows(conn, paths, "chunks.id")
        where = f" WHERE {kept}"
        params |= more
    elif paths is not None:
        where = f" WHERE {path_filter}"
        params["paths"] = paths
    sql = (
        f"SELECT id, hits FROM (SELECT chunks.id AS id, {hits} AS hits FROM chunks "
        f"{JOIN_DOCUMENTS}{where}) AS scanned WHERE hits > 0 ORDER BY hits DESC, id "
        "LIMIT :limit"
    )
    rows = conn.execute(text(sql), params).all()
    return [(int(cid), float(n) / len(runs)) for cid, n in rows]
