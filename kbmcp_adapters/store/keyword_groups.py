"""SQLite's filtered keyword leg exactly, group by group (decision 0058's addendum "the
keyword leg under a filter").

The whole query ``w1 OR w2 OR ...`` scores a chunk by FTS5's BM25: a sum over the query's
words of the word's IDF (from its count in the whole table) times a part that grows with
how often the chunk holds it and never reaches ``k1 + 1`` = 2.2. The chunks holding
exactly the words of a set S (``S1 AND S2 NOT (others)``) are scored by FTS5 with the
same phrases, so with the same scores the whole query gives them, and none of them can
score ``UB(S) = 2.2 * sum of S's IDFs`` or more. ``top_by_groups`` scores the groups
in falling ``UB`` order, each only for its own best ``limit``, and stops when the
``limit``-th best score found is at least every remaining group's bound: the best
``limit`` of the whole query in the filter, exactly, having scored the chunks holding
most of the query (``AND`` finds them without walking every match of the filter).
Two things keep it within the keyword budget, and are then no longer exact: a group
that may hold more matches than the budget is scored on a sample of the filter's
chunks (``ranking`` gives the leg), and after ``MAX_GROUPS`` groups the best found stand,
filled up from the whole query on such a sample when fewer than asked.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping, Sequence

from kbmcp_adapters.store.lexical import quote

__all__ = ["K1_PLUS_ONE", "MAX_GROUPS", "MAX_WORDS", "top_by_groups"]

#: FTS5's bm25() ``k1`` (1.2) plus one: a word's share of a score stays below its IDF times it.
K1_PLUS_ONE = 2.2
#: Most words a query may have for its groups to be counted (2 ** words - 1 groups);
#: past it the whole query is scored (on a sample past the budget).
MAX_WORDS = 6
#: Most groups scored; the best found then stand.
MAX_GROUPS = 4

#: (FTS5 expression, limit, most chunks of the filter it may match) -> the best ``limit``
#: of its matches in the filter, scored (on a sample of them past the keyword budget).
Leg = Callable[[str, int, int], list[tuple[int, float]]]


def top_by_groups(words: Sequence[str], idf: Mapping[str, float], held: Mapping[str, int],
                  limit: int, leg: Leg, whole: str) -> list[tuple[int, float]]:
    """The best ``limit`` chunks of ``words`` OR-ed (the expression ``whole``), by BM25:
    ``leg`` scores each group's expression in the filter. ``idf``: each word's IDF as
    FTS5 computes it; ``held``: about how many chunks of the filter hold each word (a
    group with a word none holds is not asked). After ``MAX_GROUPS`` groups, if fewer
    than ``limit`` were found, the best of ``whole`` fill them (every score the whole
    query's own, so they compare)."""
    present = [w for w in words if held.get(w, 0) > 0]
    if not present:
        return []
    if len(present) > MAX_WORDS:
        return leg(whole, limit, sum(held[w] for w in present))
    groups = sorted((frozenset(s) for n in range(len(present), 0, -1)
                     for s in itertools.combinations(present, n)),
                    key=lambda s: (-sum(idf[w] for w in s), sorted(s)))
    best: list[tuple[float, int]] = []  # a min-heap of the best (score, -id) so far
    for asked, group in enumerate(groups):
        bound = K1_PLUS_ONE * sum(idf[w] for w in group)
        if len(best) >= limit and bound <= best[0][0]:
            break  # the groups left are sorted by bound: none can enter
        if asked == MAX_GROUPS:
            if len(best) < limit:
                _keep(best, leg(whole, limit, sum(held[w] for w in present)), limit)
            break
        others = [quote(w) for w in present if w not in group]
        # the group's words in the query's order: BM25's sum adds them as the whole
        # query's does, to the last bit
        expression = "(" + " AND ".join(quote(w) for w in present if w in group) + ")"
        if others:
            expression += " NOT (" + " OR ".join(others) + ")"
        _keep(best, leg(expression, limit, min(held[w] for w in group)), limit)
    return [(-negative, score) for score, negative in sorted(best, reverse=True)]


def _keep(best: list[tuple[float, int]], found: list[tuple[int, float]], limit: int) -> None:
    """``found`` into the heap of the ``limit`` best, each chunk once."""
    seen = {-negative for _, negative in best}
    for cid, score in found:
        if cid in seen:
            continue
        item = (score, -cid)
        if len(best) < limit:
            heapq.heappush(best, item)
        elif item > best[0]:
            heapq.heapreplace(best, item)
