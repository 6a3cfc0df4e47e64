"""diversity (MMR): one long document does not fill the page; λ = 1 changes nothing."""

from __future__ import annotations

import pytest

from kbmcp_core.diversity import mmr
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.unit.test_search import build


@pytest.fixture
def searcher() -> Searcher:
    long_doc = "".join(f"# Part {i}\nrollout canary release steps part {i}\n" for i in range(8))
    files = {"ops/long.md": long_doc.encode()}
    others = {"alpha": "canary rollout dashboards show error budgets",
              "beta": "release trains leave every tuesday morning",
              "gamma": "steps to rotate database passwords safely",
              "delta": "rollout freeze during holidays and audits"}
    for name, text in others.items():
        files[f"ops/{name}.md"] = f"# {name}\n{text}\n".encode()
    return build(files)[0]


def documents(searcher: Searcher, **params: object) -> list[str]:
    req = SearchRequest("rollout canary release steps", limit=5, chunks_per_document=10,
                        **params)  # type: ignore[arg-type]
    return [h.path for h in searcher.search(req).results]


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_one_long_document_fills_the_page_without_diversity(searcher: Searcher,
                                                            mode: str) -> None:
    assert set(documents(searcher, mode=mode)) == {"ops/long.md"}
    assert documents(searcher, mode=mode, diversity=1.0) == documents(searcher, mode=mode)


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_diversity_spreads_the_page_over_more_documents(searcher: Searcher, mode: str) -> None:
    paths = documents(searcher, mode=mode, diversity=0.3)
    assert paths[0] == "ops/long.md"  # the best match still comes first
    assert len(set(paths)) >= 3
    assert len(paths) == 5


def test_the_searcher_default_applies_when_the_call_says_nothing(searcher: Searcher) -> None:
    from dataclasses import replace

    searcher.defaults = replace(searcher.defaults,
                                shape=replace(searcher.defaults.shape, diversity=0.3))
    assert len(set(documents(searcher))) >= 3
    assert set(documents(searcher, diversity=1.0)) == {"ops/long.md"}


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", True])
def test_a_diversity_outside_0_to_1_is_refused(searcher: Searcher, bad: object) -> None:
    with pytest.raises(InvalidQuery, match="diversity must be a number from 0 to 1"):
        searcher.search(SearchRequest("rollout", diversity=bad))  # type: ignore[arg-type]


def test_mmr_keeps_the_order_at_lambda_one_and_avoids_duplicates_below() -> None:
    ranked = [(1, 1.0), (2, 0.9), (3, 0.5)]
    same = {(1, 2), (2, 1)}

    def similarity(a: int, b: int) -> float:
        return 1.0 if (a, b) in same else 0.0

    assert mmr(ranked, similarity, 1.0, 3) == ranked
    assert [cid for cid, _ in mmr(ranked, similarity, 0.5, 3)] == [1, 3, 2]
