"""Query syntax and ``explain`` (decision 0035) on the real SQLite store, LanceDB and the
packaged model, through the library, the MCP search tool and the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_cli.main import cli
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.search import SearchHit
from tests.conftest import write_files
from tests.integration.test_mcp_in_memory import error_of, structured
from tests.integration.test_search_shaping import call
from tests.term_overlap_reranker import TermOverlapReranker

FILES = {
    "ops/deploy.md": "---\ntags: [ops]\n---\n# Deploying\n\nShip the release to the staging "
                     "cluster first, then to production.\n\n## Rollback\n\nKeep the previous "
                     "release warm so a rollback takes seconds.\n",
    "ops/release.md": "---\ntags: [ops]\n---\n# Release train\n\nEvery Tuesday the release "
                      "goes to production after a dry run.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need staking in June; basil likes the sun.\n",
    "notes/xray.md": "# Imaging\n\nAn x-ray of the build: valgrind --track-origins=yes finds "
                     "uninitialised reads before a release.\n",
    "ja/設定.md": "# 設定\n\n設定ファイルの更新手順について説明します。リリース前に確認します。\n",
}  # fmt: skip
QUERIES = ["how do we ship a release to production", "rollback previous release",
           "tomatoes", "設定ファイルの更新", "release -staging", '"dry run" release',
           "valgrind --track-origins x-ray"]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
       ) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("syntax-kb")
    write_files(root, FILES)
    settings = build_settings(None, cwd=root, kb_path=root, chunk_min_tokens=1)
    opened = KnowledgeBase(bootstrap(settings, embedder=embedder,
                                     reranker=TermOverlapReranker()))
    assert opened.index().added == len(FILES)
    yield opened
    opened.close()


def adds_up(hit: SearchHit) -> None:
    """The fusion's parts add up to the fused score: the hit's score, or with rerank (where
    the score is the blend that sets the order, decision 0056) its ``fused_score``."""
    why = hit.explain
    assert why is not None, hit.path
    fused = hit.score if hit.fused_score is None else hit.fused_score
    assert why.lexical_part + why.vector_part == fused, (hit.path, why)
    shown = hit.as_dict()
    fusion = shown["explain"]["fusion"]  # type: ignore[index]
    assert round(fusion["lexical_part"] + fusion["vector_part"], 6) == shown.get(
        "fused_score", shown["score"])


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
@pytest.mark.parametrize("rerank", [False, True])
def test_every_hit_score_is_the_sum_of_its_explained_parts(kb: KnowledgeBase, mode: str,
                                                           rerank: bool) -> None:
    seen = 0
    for query in QUERIES:
        response = kb.search(query, mode=mode, rerank=rerank, explain=True, limit=10)
        for hit in response.results:
            adds_up(hit)
            assert hit.explain is not None
            if mode == "hybrid":
                assert hit.explain.lexical_rank is not None or hit.explain.vector_rank is not None
            if rerank and hit.explain.rerank is not None:
                assert response.rerank is not None
                assert hit.explain.rerank.trust == response.rerank.trust
            seen += 1
        plain = kb.search(query, mode=mode, rerank=rerank, limit=10)
        assert [(h.chunk_id, h.score) for h in plain.results] == [
            (h.chunk_id, h.score) for h in response.results]
        assert "explain" not in plain.as_dict()
    assert seen >= 10


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_an_exclusion_removes_its_documents_from_both_legs(kb: KnowledgeBase,
                                                           mode: str) -> None:
    before = {h.path for h in kb.search("ship a release to production", mode=mode,
                                        limit=10).results}
    assert "ops/deploy.md" in before
    after = kb.search("ship a release to production -staging", mode=mode, limit=10)
    assert "ops/deploy.md" not in {h.path for h in after.results}
    assert after.results
    assert after.as_dict()["query_applied"] == {
        "terms": ["ship", "a", "release", "to", "production"], "phrases": [],
        "excluded": ["staging"]}
    # by stem, as the keyword leg matches: "-stage" leaves out "staging" too
    stemmed = kb.search("ship a release to production -stage", mode=mode, limit=10)
    assert "ops/deploy.md" not in {h.path for h in stemmed.results}
    japanese = kb.search("リリース 確認 -設定ファイル", mode=mode, limit=10)
    assert "ja/設定.md" not in {h.path for h in japanese.results}


def test_a_phrase_is_required_by_the_keyword_leg(kb: KnowledgeBase) -> None:
    hits = kb.search('"dry run" production', mode="lexical", limit=10).results
    assert {h.path for h in hits} == {"ops/release.md"}


def test_hyphenated_words_and_options_are_searched_not_excluded(kb: KnowledgeBase) -> None:
    hits = kb.search("--track-origins x-ray", mode="lexical", limit=10)
    assert hits.results[0].path == "notes/xray.md"
    assert hits.query_applied is None


def test_explain_counts_what_each_filter_removed(kb: KnowledgeBase) -> None:
    response = kb.search("release -staging", tags_any=["ops"], explain=True)
    assert response.as_dict()["explain"] == {
        "documents": 5, "chunks": response.explain.chunks,  # type: ignore[union-attr]
        "filters": [{"filter": "tags_any", "removed_documents": 3,
                     "removed_chunks": response.explain.filters[0].removed_chunks},  # type: ignore[union-attr]
                    {"filter": "excluded", "removed_documents": 1,
                     "removed_chunks": response.explain.filters[1].removed_chunks}],  # type: ignore[union-attr]
        "searched_documents": 1,
        "searched_chunks": response.explain.searched_chunks}  # type: ignore[union-attr]
    assert [h.path for h in response.results] == ["ops/release.md"]


def test_bad_syntax_names_the_character(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidQuery, match="the query only excludes at character 1:"):
        kb.search('-staging -"dry run"')
    # a question cut short opens no phrase: it searches as typed, as it always did
    cut = kb.search('release "dry run', mode="lexical")
    assert cut.query_applied is None
    assert [h.path for h in cut.results] == [
        h.path for h in kb.search("release dry run", mode="lexical").results]


def test_the_mcp_tool_explains_and_echoes_the_syntax(kb: KnowledgeBase) -> None:
    result, tool = call(kb, {"query": "release -staging", "explain": True, "rerank": True})
    data = structured(result, tool)  # checked against the published output schema
    assert data["query_applied"]["excluded"] == ["staging"]
    assert {f["filter"] for f in data["explain"]["filters"]} == {"excluded"}
    for hit in data["results"]:
        parts = hit["explain"]["fusion"]
        assert round(parts["lexical_part"] + parts["vector_part"], 6) == hit.get(
            "fused_score", hit["score"])
    assert any("rerank" in hit["explain"] for hit in data["results"])
    assert "explain" in tool.input_schema["properties"]
    bad, _ = call(kb, {"query": "-release -staging"})
    error = error_of(bad)
    assert error["code"] == "invalid_argument"
    assert "the query only excludes at character 1" in error["message"]


def test_the_command_line_explains_and_takes_exclusions(kb: KnowledgeBase) -> None:
    root = str(kb.settings.kb_path)
    runner = CliRunner()
    text = runner.invoke(cli, ["search", "--kb-path", root, "--no-server", "--mode", "lexical",
                               "--explain", "release -staging"])
    assert text.exit_code == 0, text.output
    assert "why: lexical #1" in text.output
    assert "ops/deploy.md" not in text.output
    assert "excluded ['staging']" in text.output
    got = runner.invoke(cli, ["search", "--kb-path", root, "--no-server", "--mode", "lexical",
                              "--format", "json", "--", "-staging release"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["query_applied"]["excluded"] == ["staging"]
    bad = runner.invoke(cli, ["search", "--kb-path", root, "--no-server", "--mode", "lexical",
                              "--", "-release"])
    assert bad.exit_code == 2
    assert "the query only excludes at character 1" in bad.stderr
