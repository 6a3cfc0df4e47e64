"""One answer over several collections (``search_collections``, decision 0041): with one
collection it is that knowledge base's own answer; with several, the legs are fused on
comparable scores and every search option behaves as it does for one index.

Real SQLite stores and LanceDB folders; the hashing stand-in where vectors are not the
point, the packaged model where the fusion's comparability is."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.collections import Collections, open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.search_collections import search_collections
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.evaluation import Ranked, Retrieved, evaluate
from kbmcp_core.search import SearchResponse
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder
from tests.term_overlap_reranker import TermOverlapReranker

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "eval-kb"
GOLDEN = FIXTURE.with_name("eval-kb.golden.yml")

WORDS = ["deploy", "rollback", "garden", "tomato", "invoice", "budget", "kernel", "cache",
         "harbor", "lantern"]


def _doc(i: int, tag: str) -> str:
    a, b, c = WORDS[i % 10], WORDS[(i * 3 + 1) % 10], WORDS[(i * 7 + 2) % 10]
    return (f"---\ntags: [{tag}, t{i % 3}]\n---\n# {a.title()} {i}\n\n"
            f"The {a} notes mention {b} and {c} for item {i}.\n\n"
            f"## {b.title()} details\n\nMore about {b} with {c} and the {a} plan.\n")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("joint")
    for name, offset in (("north", 0), ("south", 5), ("east", 11)):
        write_files(root / name, {f"docs/note-{i:02d}.md": _doc(i + offset, name)
                                  for i in range(12)})
        write_files(root / name, {f"misc/other-{i}.md": _doc(i * 2 + offset, "misc")
                                  for i in range(4)})
    config = root / "kb-mcp.toml"
    config.write_text("".join(f'[[collections]]\nname = "{n}"\npath = "{n}"\n\n'
                              for n in ("north", "south", "east")), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def collections(folders: Path) -> Iterator[Collections]:
    settings = build_settings(folders / "kb-mcp.toml", user_config=False, env={})
    opened = open_collections(settings, embedder=HashingEmbedder(dimension=32),
                              reranker=TermOverlapReranker())
    for name in opened.names:
        assert opened.kb(name).index().added == 16
    yield opened
    opened.close()


QUERIES = ["deploy rollback", "garden tomato budget", "kernel cache", "harbor lantern plan",
           "invoice", "item 7", "rollback details", "tomato -garden", '"lantern plan"',
           "budget notes mention kernel"]
OPTIONS: list[dict[str, Any]] = [
    {}, {"limit": 3}, {"mode": "lexical"}, {"mode": "vector"}, {"explain": True},
    {"path_globs": ["docs/*"]}, {"tags_any": ["t1"]}, {"chunks_per_document": 1},
    {"rerank": True}, {"diversity": 0.5}, {"context": "adjacent"}, {"context": "section"},
]


def _plain(response: SearchResponse) -> dict[str, object]:
    """The answer as a client sees it, without the collection the joint answer adds."""
    out: dict[str, Any] = response.as_dict()
    for hit in out["results"]:
        hit.pop("collection", None)
    if isinstance(out.get("rerank"), dict):
        out["rerank"].pop("ms", None)  # a timing
    return out


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_one_collection_answers_exactly_as_its_knowledge_base(
        collections: Collections, options: dict[str, Any]) -> None:
    kb = collections.kb("south")
    for query in QUERIES:
        joint = search_collections({"south": kb}, query, **options)
        own = kb.search(query, **options)
        assert _plain(joint) == _plain(own), query
        assert joint.results == tuple(replace(h, collection="south") for h in own.results)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_several_collections_answer_with_every_option_as_one_index_does(
        collections: Collections, options: dict[str, Any]) -> None:
    kbs = {n: collections.kb(n) for n in ("north", "east")}
    limit = options.get("limit", 5)
    for query in QUERIES:
        got = search_collections(kbs, query, **options)
        assert len(got.results) <= limit
        assert {h.collection for h in got.results} <= {"north", "east"}
        scores = [h.score for h in got.results]
        if not options.get("rerank") and options.get("diversity") is None:
            assert scores == sorted(scores, reverse=True), query
        for hit in got.results:
            kb = kbs[hit.collection]  # type: ignore[index]
            # the hit's passage is really in that collection's document at that path
            assert hit.content in kb.get_document(hit.path).content
            assert hit.uri == f"kb://doc/{hit.collection}/{hit.path}"
            if "path_globs" in options:
                assert hit.path.startswith("docs/")
            if "tags_any" in options:
                assert "t1" in hit.tags
            if options.get("explain"):
                assert hit.explain is not None
                parts = hit.explain.lexical_part + hit.explain.vector_part
                assert parts == pytest.approx(hit.score)
            if options.get("rerank"):
                assert hit.rerank_score is not None
            if options.get("context"):
                assert hit.context is not None
        per_doc = options.get("chunks_per_document")
        if per_doc:
            docs = [(h.collection, h.path) for h in got.results]
            assert len(docs) == len(set(docs))
        if query == "tomato -garden":
            assert all("garden" not in h.content.lower() for h in got.results)
            assert got.query_applied is not None
            assert got.query_applied["excluded"] == ["garden"]


def test_the_same_path_in_two_collections_is_two_documents(collections: Collections) -> None:
    kbs = {n: collections.kb(n) for n in collections.names}
    got = search_collections(kbs, "item notes", limit=50, chunks_per_document=1)
    seen = [(h.collection, h.path) for h in got.results]
    assert len(seen) == len(set(seen))
    shared = {p for c, p in seen if c == "north"} & {p for c, p in seen if c == "south"}
    assert shared, "docs/note-NN.md exists in both: each must be able to appear"


def test_explain_counts_what_filters_removed_across_the_collections(
        collections: Collections) -> None:
    kbs = {n: collections.kb(n) for n in ("north", "south")}
    got = search_collections(kbs, "deploy", explain=True, path_globs=["misc/*"])
    assert got.explain is not None
    effects: dict[str, Any] = got.explain.as_dict()
    # 2 × 16 documents before the filter, 2 × 4 kept: counted over both collections
    assert effects["documents"] == 32 and effects["searched_documents"] == 8
    assert effects["filters"] == [{"filter": "path_globs", "removed_documents": 24,
                                   "removed_chunks": effects["chunks"]
                                   - effects["searched_chunks"]}]
    assert {h.collection for h in got.results} == {"north", "south"}


def test_a_collection_without_an_index_is_left_out_with_a_notice(
        collections: Collections, tmp_path: Path) -> None:
    write_files(tmp_path / "new", {"a.md": "# Deploy\n\ndeploy the rollback plan\n"})
    settings = build_settings(None, kb_path=tmp_path / "new", user_config=False, env={})
    fresh = KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder(dimension=32)))
    try:
        got = search_collections({"north": collections.kb("north"), "new": fresh}, "deploy")
        assert got.results and {h.collection for h in got.results} == {"north"}
        assert got.notice is not None and "new" in got.notice
        with pytest.raises(IndexNotFound):
            search_collections({"new": fresh}, "deploy")
    finally:
        fresh.close()


def test_collections_with_different_models_each_search_with_their_own(
        folders: Path, tmp_path: Path) -> None:
    """No joint vector leg across models: the query is embedded by each model, each
    collection searched with its own, each model's similarities relative to its best."""
    small, large = HashingEmbedder("hash-small", 16), HashingEmbedder("hash-large", 48)
    kbs = {}
    for name, model in (("north", small), ("south", large)):
        s = build_settings(None, kb_path=folders / name, index_dir=tmp_path / name,
                           user_config=False, env={})
        kbs[name] = KnowledgeBase(bootstrap(s, embedder=model))
        kbs[name].index()
    try:
        for query in QUERIES[:6]:
            got = search_collections(kbs, query, mode="vector", limit=20)
            assert {h.collection for h in got.results} == {"north", "south"}
            for name in kbs:  # each model's best similarity counts as 1
                assert max(h.score for h in got.results if h.collection == name) == (
                    pytest.approx(1.0))
            mixed = search_collections(kbs, query, diversity=0.5, limit=8)
            assert len(mixed.results) == 8  # words compared, not vectors of two sizes
    finally:
        for kb in kbs.values():
            kb.close()


# -- comparability, with the packaged model ----------------------------------------------

@pytest.fixture(scope="module")
def eval_kb(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
            ) -> Iterator[tuple[KnowledgeBase, Collections]]:
    """The eval fixture indexed whole, and again as one collection per top folder."""
    root = tmp_path_factory.mktemp("eval") / "eval-kb"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".kb-mcp"))
    whole = KnowledgeBase(bootstrap(build_settings(None, kb_path=root, user_config=False,
                                                   env={}), embedder=embedder))
    whole.index()
    tops = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != ".kb-mcp")
    config = root.parent / "kb-mcp.toml"
    config.write_text("".join(f'[[collections]]\nname = "{t}"\npath = "eval-kb/{t}"\n\n'
                              for t in tops), encoding="utf-8")
    split = open_collections(build_settings(config, user_config=False, env={}),
                             embedder=embedder)
    for name in split.names:
        split.kb(name).index()
    yield whole, split
    whole.close()
    split.close()


def test_the_vector_leg_over_collections_ranks_as_one_index_over_all_of_them(
        eval_kb: tuple[KnowledgeBase, Collections]) -> None:
    """One model, comparable cosines: the joint vector ranking is every collection's own
    ranking merged by similarity, as one index holding them all ranks. (Not the whole
    folder's index: a chunk is read under its folders inside the folder served, so a top
    folder made a collection no longer leads its chunks' vectors; decision 0056, sixth
    addendum.)"""
    _, split = eval_kb
    kbs = {n: split.kb(n) for n in split.names}
    for q in load_golden(GOLDEN):
        own = {n: kb.search(q.query, limit=10, mode="vector") for n, kb in kbs.items()}
        merged = sorted(((h.score, f"{n}/{h.path}") for n, res in own.items()
                         for h in res.results), key=lambda x: -x[0])[:10]
        joint = search_collections(kbs, q.query, limit=10, mode="vector")
        assert [f"{h.collection}/{h.path}" for h in joint.results] == [
            p for _, p in merged], q.id
        assert [h.score for h in joint.results] == pytest.approx(
            [s for s, _ in merged], abs=1e-6)
        assert joint.low_confidence == all(res.low_confidence for res in own.values())


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_a_folder_split_into_collections_ranks_as_the_one_folder(
        eval_kb: tuple[KnowledgeBase, Collections], mode: str) -> None:
    """Keyword statistics are pooled over the collections (decision 0052): the eval
    fixture split into five collections ranks as the whole folder does."""
    whole, split = eval_kb
    kbs = {n: split.kb(n) for n in split.names}
    queries = load_golden(GOLDEN)

    def whole_retriever(query: str) -> Retrieved:
        res = whole.search(query, limit=50, mode=mode)
        return Retrieved([Ranked(h.path, h.heading, h.start_line, h.end_line)
                          for h in res.results], res.low_confidence)

    def joint_retriever(query: str) -> Retrieved:
        res = search_collections(kbs, query, limit=50, mode=mode)
        return Retrieved([Ranked(f"{h.collection}/{h.path}", h.heading, h.start_line,
                                 h.end_line) for h in res.results], res.low_confidence)

    one = evaluate(mode, queries, whole_retriever, clean_heading)
    joint = evaluate(mode, queries, joint_retriever, clean_heading)
    # measured (five collections, hybrid): nDCG@10 0.959 and MRR@10 0.945 both; before
    # the statistics were pooled, 0.935 and 0.913 (per-collection BM25, decision 0041)
    for metric, margin in (("ndcg@10", 0.005), ("mrr@10", 0.005), ("recall@5", 0.0)):
        assert joint.document[metric] >= one.document[metric] - margin, (
            metric, joint.document, one.document)


def test_a_joint_search_leaves_no_thread_running(collections: Collections) -> None:
    """The threads that ask the collections at once belong to the one search: none is left
    running once it has answered."""
    kbs = {n: collections.kb(n) for n in ("north", "east", "south")}
    assert search_collections(kbs, "deploy").results
    assert [t.name for t in threading.enumerate() if t.name.startswith("kb-mcp-collections")
            ] == []
