"""The searcher honours the query syntax in both legs and explains its scores (0035),
against the fakes; tests/contract and tests/integration cover the real stores."""

from __future__ import annotations

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.fusion import Fusion
from kbmcp_core.search import Searcher, SearchHit
from kbmcp_core.search_request import Mode, SearchRequest
from tests.term_overlap_reranker import TermOverlapReranker
from tests.unit.test_search import build

FILES = {
    "ops/deploy.md": b"# Deploy\ndeploy the release to staging first\n# Rollback\n"
                     b"rollback a bad release with the previous tag\n",
    "ops/prod.md": b"# Production\ndeploy the release to production at noon\n",
    "notes/garden.md": b"# Garden\ntomatoes need staking\n",
    "notes/dry.md": b"# Dry run\nrun the release as a dry run before deploy\n",
}
MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")


@pytest.fixture
def searcher() -> Searcher:
    return build(FILES)[0]


def paths(searcher: Searcher, query: str, mode: Mode, **args: object) -> list[str]:
    return [h.path for h in searcher.search(SearchRequest(query, mode=mode, limit=20,
                                                          **args)).results]  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_an_excluded_term_removes_its_documents_from_either_leg(searcher: Searcher,
                                                                mode: Mode) -> None:
    assert "ops/deploy.md" in paths(searcher, "deploy release", mode)
    found = paths(searcher, "deploy release -staging", mode)
    assert found and "ops/deploy.md" not in found
    assert "ops/prod.md" in found
    assert "notes/dry.md" not in paths(searcher, 'deploy release -"dry run"', mode)


def test_the_response_echoes_what_the_syntax_applied(searcher: Searcher) -> None:
    response = searcher.search(SearchRequest('"the release" deploy -staging'))
    assert response.query_applied == {"terms": ["deploy"], "phrases": ["the release"],
                                      "excluded": ["staging"]}
    assert response.as_dict()["query_applied"] == response.query_applied
    plain = searcher.search(SearchRequest("deploy release"))
    assert plain.query_applied is None and "query_applied" not in plain.as_dict()


def test_exclusion_combines_with_filters_and_can_leave_nothing(searcher: Searcher) -> None:
    assert set(paths(searcher, "release -production", "hybrid", path_globs=("ops/**",))
               ) == {"ops/deploy.md"}
    empty = searcher.search(SearchRequest("release -deploy -production",
                                          path_globs=("ops/**",)))
    assert empty.results == () and empty.low_confidence


def test_bad_syntax_is_invalid_argument_before_any_search(searcher: Searcher) -> None:
    for bad in ["-staging", '-staging - "']:
        with pytest.raises(InvalidQuery, match="only excludes at character 1"):
            searcher.search(SearchRequest(bad))
    for stray in ['deploy "release', "deploy - staging"]:  # natural text, searched as typed
        assert searcher.search(SearchRequest(stray)).query_applied is None


def test_explain_is_refused_unless_a_boolean(searcher: Searcher) -> None:
    with pytest.raises(InvalidQuery, match="explain"):
        searcher.search(SearchRequest("deploy", explain="yes"))  # type: ignore[arg-type]


def assert_adds_up(hit: SearchHit) -> None:
    why = hit.explain
    assert why is not None
    # with rerank the parts add up to the fused score; ``score`` is the blend the
    # results are ordered by (decision 0056)
    fused = hit.score if hit.fused_score is None else hit.fused_score
    assert why.lexical_part + why.vector_part == fused
    if why.method == "weighted":
        lexical = 0.0 if why.lexical_score is None else min(max(why.lexical_score, 0.0), 1.0)
        vector = 0.0 if why.vector_similarity is None else max(why.vector_similarity, 0.0)
        assert why.lexical_part == why.lexical_weight * lexical
        assert why.vector_part == why.vector_weight * vector
    d = hit.as_dict()["explain"]
    assert isinstance(d, dict)
    fusion = d["fusion"]
    assert abs(fusion["lexical_part"] + fusion["vector_part"] - round(fused, 6)) < 1e-6


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fusion", [Fusion(), Fusion("rrf", 0.6, rrf_k=10),
                                    Fusion(vector_scale="relative")])
def test_explain_parts_add_up_to_each_score(mode: Mode, fusion: Fusion) -> None:
    s = build(FILES)[0]
    s.fusion, s.reranker = fusion, TermOverlapReranker()
    for query in ["deploy release", "rollback bad tag", "tomatoes", "release -staging"]:
        for rerank in (False, True):
            response = s.search(SearchRequest(query, mode=mode, explain=True, rerank=rerank,
                                              limit=10))
            assert response.results, query
            for hit in response.results:
                assert_adds_up(hit)
                assert hit.explain is not None
                assert (hit.explain.rerank is not None) == rerank
                if rerank:
                    assert hit.explain.rerank.trust == response.rerank.trust  # type: ignore[union-attr]
            plain = s.search(SearchRequest(query, mode=mode, rerank=rerank, limit=10))
            assert [(h.chunk_id, h.score) for h in plain.results] == [
                (h.chunk_id, h.score) for h in response.results]
            assert all(h.explain is None and "explain" not in h.as_dict()
                       for h in plain.results)


def test_explain_says_what_each_filter_removed(searcher: Searcher) -> None:
    response = searcher.search(SearchRequest("release -staging", path_globs=("ops/**",),
                                             explain=True))
    assert response.explain is not None
    got = response.as_dict()["explain"]
    assert got == {
        "documents": 4, "chunks": 5,
        "filters": [{"filter": "path_globs", "removed_documents": 2, "removed_chunks": 2},
                    {"filter": "excluded", "removed_documents": 1, "removed_chunks": 2}],
        "searched_documents": 1, "searched_chunks": 1,
    }
