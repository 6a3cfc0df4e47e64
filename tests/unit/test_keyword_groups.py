"""The filtered keyword leg group by group (``keyword_groups.top_by_groups``): the best
chunks of the whole query, exactly, asking the groups that can still hold one; None past
``MAX_GROUPS``."""

from __future__ import annotations

import random
import re

import pytest

from kbmcp_adapters.store import keyword_groups
from kbmcp_adapters.store.keyword_groups import K1_PLUS_ONE, top_by_groups

WORDS = ("alpha", "beta", "gamma")


def _chunks(seed: int, idf: dict[str, float]) -> dict[int, dict[str, float]]:
    """Each chunk's share of the score from each word it holds (below 2.2 x its IDF)."""
    rng = random.Random(seed)
    out: dict[int, dict[str, float]] = {}
    for cid in range(1, 301):
        held = [w for w in WORDS if rng.random() < 0.5]
        out[cid] = {w: rng.uniform(0.1, 0.999) * K1_PLUS_ONE * idf[w] for w in held}
    return out


WHOLE = '"alpha" OR "beta" OR "gamma"'


def _leg(chunks: dict[int, dict[str, float]], asked: list[str]) -> keyword_groups.Leg:
    """Scores an expression as FTS5 would: a group, the chunks holding exactly its words;
    the whole query, every chunk holding one."""

    def leg(expression: str, limit: int, _size: int) -> list[tuple[int, float]]:
        asked.append(expression)
        if expression == WHOLE:
            kept = [(cid, sum(parts.values())) for cid, parts in chunks.items() if parts]
        else:
            group = set(re.findall(r'"(\w+)"', expression.split(" NOT ")[0]))
            present = set(re.findall(r'"(\w+)"', expression))
            kept = [(cid, sum(parts.values())) for cid, parts in chunks.items()
                    if group <= set(parts) and not (present - group) & set(parts)]
        return sorted(kept, key=lambda item: (-item[1], item[0]))[:limit]

    return leg


@pytest.mark.parametrize("seed", range(6))
def test_the_groups_give_the_whole_querys_best_in_its_order(seed: int) -> None:
    idf = {"alpha": 3.0, "beta": 1.0, "gamma": 0.2}
    chunks = _chunks(seed, idf)
    whole = sorted(((cid, sum(p.values())) for cid, p in chunks.items() if p),
                   key=lambda item: (-item[1], item[0]))[:10]
    asked: list[str] = []
    found = top_by_groups(WORDS, idf, dict.fromkeys(WORDS, 100), 10, _leg(chunks, asked),
                          WHOLE)
    assert found == whole
    assert asked[0] == '("alpha" AND "beta" AND "gamma")'  # the largest bound first
    assert len(asked) <= keyword_groups.MAX_GROUPS


def test_past_the_most_groups_the_whole_query_fills_the_best(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_groups, "MAX_GROUPS", 1)
    idf = dict.fromkeys(WORDS, 1.0)
    chunks = {1: {"alpha": 2.0}, 2: {"beta": 2.1}, 3: {}}  # no chunk holds all three
    asked: list[str] = []
    found = top_by_groups(WORDS, idf, dict.fromkeys(WORDS, 1), 10, _leg(chunks, asked), WHOLE)
    assert found == [(2, 2.1), (1, 2.0)]
    assert asked == ['("alpha" AND "beta" AND "gamma")', WHOLE]


def test_a_word_the_filter_does_not_hold_is_not_asked() -> None:
    idf = {"alpha": 3.0, "beta": 1.0, "gamma": 0.2}
    chunks = {1: {"beta": 2.0, "gamma": 0.1}, 2: {"beta": 1.0}}
    asked: list[str] = []
    found = top_by_groups(WORDS, idf, {"alpha": 0, "beta": 5, "gamma": 5}, 2,
                          _leg(chunks, asked), WHOLE)
    assert found == [(1, 2.1), (2, 1.0)]
    assert all("alpha" not in expression for expression in asked)
