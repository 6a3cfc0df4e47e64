"""Keyword statistics pooled over several stores, so a folder split into collections ranks
as one folder (decision 0052).

A keyword leg's score depends on more than the chunk: BM25's IDF on how many chunks hold
each term and how many there are, the coverage weight on the same counts, and "relative
to the best match" on every other chunk the query matched. Each collection's store knows
only its own, so a term common in one collection and rare in the others weighs as if it
were common everywhere, and each collection's best match counts 1. A joint search
therefore asks every store for its counts (``KeywordStatistics``), sums them, has each
store score its candidates on the sums (``KeywordHit``: BM25 weight and coverage, not yet
relative to any best), and makes the scores relative here, over all stores at once
(``pooled_relevance``): what one store holding every chunk computes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["KeywordHit", "KeywordStatistics", "pooled_relevance"]


@dataclass(frozen=True, slots=True)
class KeywordStatistics:
    """The counts a query's keyword scores rest on: chunks in the index, and for each
    ``(leg, term)`` how many chunks hold the term. ``found``: the legs whose match
    expression found a chunk (among the documents searched), which decides whether a
    store falls back to another leg. Adding two is pooling them."""

    chunks: int = 0
    holding: Mapping[tuple[str, str], int] = field(default_factory=dict)
    found: frozenset[str] = frozenset()

    def __add__(self, other: KeywordStatistics) -> KeywordStatistics:
        holding = dict(self.holding)
        for key, n in other.holding.items():
            holding[key] = holding.get(key, 0) + n
        return KeywordStatistics(self.chunks + other.chunks, holding, self.found | other.found)


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """One chunk a keyword leg found, scored on given (pooled) statistics: ``weight`` is
    its BM25 weight, to be made relative to the best weight of the same ``leg`` over every
    store, then multiplied by ``coverage`` (the weighted share of the query it holds,
    squared). A hit of ``leg`` None carries its relevance in ``weight`` already (a share
    of the query's short CJK runs)."""

    chunk_id: int
    leg: str | None
    weight: float
    coverage: float = 1.0


def pooled_relevance(hits: Iterable[tuple[int, KeywordHit]], limit: int
                     ) -> list[tuple[int, float]]:
    """``(id, relevance in [0, 1])`` best first from hits of several stores, each given
    with the id it has in the joint view: every leg relative to its best over all of
    them, times coverage; a chunk found by several legs keeps its highest relevance."""
    found = list(hits)
    best: dict[str, float] = {}
    for _, hit in found:
        if hit.leg is not None:
            best[hit.leg] = max(best.get(hit.leg, 0.0), hit.weight)
    merged: dict[int, float] = {}
    for gid, hit in found:
        if hit.leg is None:
            score = hit.weight
        else:
            top = best[hit.leg]
            score = (hit.weight / top if top > 0 else 1.0) * hit.coverage
        merged[gid] = max(score, merged.get(gid, 0.0))
    return sorted(merged.items(), key=lambda item: (-item[1], item[0]))[:limit]


def holding_of(statistics: Mapping[tuple[str, str], int], leg: str,
               terms: Iterable[str]) -> list[int]:
    """How many chunks hold each of ``terms`` in ``leg``, by the statistics."""
    return [statistics.get((leg, term), 0) for term in terms]
