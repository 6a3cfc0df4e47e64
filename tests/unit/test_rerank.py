"""rerank: a Reranker reorders the best fused candidates, its cost is reported, and asking
for it without one installed is a clear error."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.rerank import RERANK_CANDIDATES, TRUST_MIDPOINT, blend, trust
from kbmcp_core.search_request import SearchRequest
from tests.term_overlap_reranker import TermOverlapReranker
from tests.unit.test_search import build

FILES = {
    # the fake lexical leg reads the title: every query word is in this document
    "a.md": b"title: Database cold storage\n# Notes\nthe backup runs nightly\n",
    # "backups" is "backup" only to a stemmer: the reranker reads all three words here
    "b.md": b"# Notes\nbackups of the database go to cold storage\n",
}


def test_the_reranker_reorders_and_its_time_is_reported() -> None:
    searcher, _ = build(FILES)
    query = "database backup cold"
    before = searcher.search(SearchRequest(query, mode="lexical"))
    assert before.results[0].path == "a.md"
    assert before.rerank is None and "rerank" not in before.as_dict()
    searcher.reranker = TermOverlapReranker()
    after = searcher.search(SearchRequest(query, mode="lexical", rerank=True))
    assert [h.path for h in after.results] == ["b.md", "a.md"]
    assert after.results[0].rerank_score == 1.0
    assert after.rerank is not None
    report = after.as_dict()["rerank"]
    assert isinstance(report, dict)
    assert report["model"] == "kb-mcp/term-overlap-test" and report["candidates"] == 2
    assert report["ms"] >= 0


def test_only_the_best_candidates_are_reranked() -> None:
    files = {f"n{i:02d}.md": f"# N\nbackup note {i}\n".encode() for i in range(40)}
    searcher, _ = build(files)
    reranker = TermOverlapReranker()
    searcher.reranker = reranker
    searcher.search(SearchRequest("backup note", rerank=True))
    assert len(reranker.calls) == 1
    assert len(reranker.calls[0][1]) == RERANK_CANDIDATES


def test_rerank_without_a_reranker_is_a_clear_error() -> None:
    searcher, _ = build(FILES)
    with pytest.raises(InvalidQuery, match="was given no reranker"):
        searcher.search(SearchRequest("backup", rerank=True))
    assert searcher.search(SearchRequest("backup", rerank=False)).results


class FixedReranker:
    """Gives the passages fixed probabilities (by a word they contain) and reads the query
    as far as ``readable`` says."""

    model_id = "fixed"

    def __init__(self, by_word: dict[str, float], readable: float = 1.0) -> None:
        self.by_word = by_word
        self.readable = readable

    def coverage(self, text: str) -> float:
        return self.readable

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [next((p for w, p in self.by_word.items() if w in text), 0.0)
                for text in passages]


def order_with(reranker: FixedReranker) -> tuple[list[str], float]:
    searcher, _ = build(FILES)
    searcher.reranker = reranker
    response = searcher.search(SearchRequest("database backup cold", mode="lexical",
                                             rerank=True))
    assert response.rerank is not None
    return [h.path for h in response.results], response.rerank.trust


def test_a_confident_reranker_decides_the_order() -> None:
    paths, say = order_with(FixedReranker({"backups of": 0.999, "nightly": 0.02}))
    assert paths == ["b.md", "a.md"]
    assert say > 0.99


def test_a_reranker_below_even_odds_does_not_overturn_the_fused_order() -> None:
    # It prefers b.md but gives it 30 %: less than half the say (decision 0016, session 12),
    # so the fused order stands; at 90 % it would decide.
    paths, say = order_with(FixedReranker({"backups of": 0.3, "nightly": 0.01}))
    assert paths == ["a.md", "b.md"]
    assert 0.2 < say < 0.5
    paths, say = order_with(FixedReranker({"backups of": 0.9, "nightly": 0.01}))
    assert paths == ["b.md", "a.md"]
    assert say > 0.85


def test_a_reranker_that_finds_nothing_relevant_leaves_the_fused_order() -> None:
    # It prefers b.md, but its best probability is 0.3 %: its order is noise, not evidence.
    paths, say = order_with(FixedReranker({"backups of": 0.003, "nightly": 0.0001}))
    assert paths == ["a.md", "b.md"]
    assert say < 0.05


def test_a_reranker_that_cannot_read_the_query_leaves_the_fused_order() -> None:
    paths, say = order_with(FixedReranker({"backups of": 0.97, "nightly": 0.02}, readable=0.0))
    assert paths == ["a.md", "b.md"]
    assert say == 0.0


def test_trust_rises_with_the_best_probability_and_halves_at_the_midpoint() -> None:
    midpoint = 1.0 / (1.0 + math.exp(-TRUST_MIDPOINT))
    assert trust(midpoint, 1.0) == pytest.approx(0.5)
    assert trust(midpoint, 0.5) == pytest.approx(0.25)
    values = [trust(p, 1.0) for p in (0.0, 0.01, 0.1, 0.5, 0.9, 1.0)]
    assert values == sorted(values) and values[0] < 0.01 and values[-1] > 0.99


def test_blend_between_the_two_orders() -> None:
    fused = [0.9, 0.5, 0.1]
    probabilities = [0.1, 0.5, 0.9]
    assert blend(fused, probabilities, 1.0) == [2, 1, 0]
    assert blend(fused, probabilities, 0.0) == [0, 1, 2]
    assert blend([], [], 1.0) == []


def test_scores_outside_probabilities_are_refused() -> None:
    with pytest.raises(ValueError, match="outside 0..1"):
        order_with(FixedReranker({"backups of": 3.5}))


def test_the_configured_number_of_candidates_is_reranked() -> None:
    files = {f"n{i:02d}.md": f"# N\nbackup note {i}\n".encode() for i in range(40)}
    searcher, _ = build(files)
    reranker = TermOverlapReranker()
    searcher.reranker = reranker
    searcher.defaults = replace(searcher.defaults,
                                shape=replace(searcher.defaults.shape, rerank_candidates=7))
    response = searcher.search(SearchRequest("backup note", rerank=True))
    assert len(reranker.calls[0][1]) == 7
    assert response.rerank is not None and response.rerank.candidates == 7


def test_scores_fall_in_the_order_printed_with_rerank() -> None:
    # issue 42: with rerank the fused score was shown after reordering, out of order
    from kbmcp_core.search_request import SearchRequest
    from tests.unit.test_query_syntax_search import FILES
    from tests.unit.test_search import build

    searcher = build(FILES)[0]
    searcher.reranker = TermOverlapReranker()
    moved = 0
    for query in ["deploy release", "rollback bad tag", "release tag staging"]:
        hits = searcher.search(SearchRequest(query, rerank=True, limit=10)).results
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), (query, scores)
        assert all(h.fused_score is not None and h.rerank_score is not None for h in hits)
        fused = [h.fused_score for h in hits]
        moved += fused != sorted(fused, reverse=True)  # type: ignore[type-var]
        assert all("fused_score" in h.as_dict() for h in hits)
    assert moved  # the reranker did reorder some results
