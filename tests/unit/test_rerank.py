"""rerank: a Reranker reorders the best fused candidates, its cost is reported, and asking
for it without one installed is a clear error."""

from __future__ import annotations

import pytest

from kbmcp_adapters.rerank.term_overlap import TermOverlapReranker
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.rerank import RERANK_CANDIDATES
from kbmcp_core.search import SearchRequest
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
    with pytest.raises(InvalidQuery, match="no reranker is installed"):
        searcher.search(SearchRequest("backup", rerank=True))
    assert searcher.search(SearchRequest("backup", rerank=False)).results
