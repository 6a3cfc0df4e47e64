"""No cross-talk between collections (issue 28, decision 0041): three collections with
overlapping vocabulary, every vector leg on LanceDB's approximate index, many queries
with and without filters. A search scoped to some collections returns only theirs.

Real SQLite stores and LanceDB folders, real index runs; the hashing stand-in embedder
(the vectors' meaning is not the point, which index they come from is)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import product
from typing import Any

import pytest

from kbmcp_adapters.app import bootstrap as bootstrap_module
from kbmcp_adapters.app.collections import Collections, open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.errors import UnknownCollection
from kbmcp_core.settings import Settings
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

NAMES = ("alpha", "beta", "gamma")
#: each collection's passages carry its own marker word and no other
MARKER = {name: f"z{name}" for name in NAMES}
SHARED = ["deploy", "rollback", "garden", "tomato", "invoice", "budget", "kernel", "cache",
          "harbor", "lantern", "signal", "meadow"]
DOCS = 170
#: every collection's vector table trains its approximate index at this many rows
ANN_ROWS = 150

CONFIG = """
[[collections]]
name = "alpha"
path = "alpha"
description = "Alpha team"
[collections.parsers]
exclude_dirs = ["drafts"]

[[collections]]
name = "beta"
path = "beta"

[[collections]]
name = "gamma"
path = "gamma"
default = false
[collections.parsers]
enabled = ["md", "txt"]
"""


def _doc(name: str, i: int) -> str:
    a, b, c = SHARED[i % 12], SHARED[(i * 5 + 1) % 12], SHARED[(i * 7 + 3) % 12]
    return (f"---\ntags: [t{i % 4}]\n---\n# {a.title()} {b} {i}\n\n"
            f"The {a} and {b} notes of {MARKER[name]} cover {c} for item {i}; the {c} "
            f"plan keeps {a} near {b}.\n")


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collections]:
    root = tmp_path_factory.mktemp("collections")
    for name in NAMES:
        # the same relative paths in every collection
        write_files(root / name, {f"notes/doc-{i:03d}.md": _doc(name, i) for i in range(DOCS)})
        write_files(root / name, {"drafts/draft.md": f"# Draft\n\nA {MARKER[name]} draft "
                                  "about the harbor lantern.\n",
                                  "extra.txt": f"Plain {MARKER[name]} text about the "
                                  "meadow signal.\n"})
    (root / "kb-mcp.toml").write_text(CONFIG, encoding="utf-8")
    settings = build_settings(root / "kb-mcp.toml", user_config=False, env={})

    def few_rows_ann(s: Settings, dimension: int) -> LanceVectorStore:
        return LanceVectorStore(s.vectors_location, dimension, ann_min_rows=ANN_ROWS)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bootstrap_module, "real_vectors", few_rows_ann)
        opened = open_collections(settings, embedder=HashingEmbedder(dimension=32))
        for name in NAMES:
            summary = opened.kb(name).index()
            assert summary.failed == 0, summary.warnings
            vectors = opened.kb(name)._container.vectors
            assert isinstance(vectors, LanceVectorStore)
            assert vectors.ann_state() is not None, f"{name}: the ANN path is not on"
        yield opened
        opened.close()


QUERIES = [f"{a} {b}" for a, b in product(SHARED[:6], SHARED[6:])][::3] + [
    "item 42", "harbor lantern draft", "meadow signal text", "zgamma", "zbeta kernel",
    "zalpha budget plan", "deploy -rollback", '"lantern plan"']
SCOPES: list[str | list[str] | None] = [None, "alpha", "beta", "gamma", ["alpha", "gamma"],
                                        ["beta", "gamma"]]
FILTERS: list[dict[str, Any]] = [{}, {"mode": "vector"}, {"tags_any": ["t2"]},
                                 {"path_globs": ["notes/doc-1*"], "mode": "vector"},
                                 {"mode": "lexical"}]


def _scope(selector: str | list[str] | None) -> set[str]:
    if selector is None:
        return {"alpha", "beta"}  # the defaults: gamma says default = false
    return {selector} if isinstance(selector, str) else set(selector)


def test_a_scoped_search_never_returns_another_collections_documents(
        collections: Collections) -> None:
    assert len(QUERIES) >= 20
    seen: dict[str, set[str]] = {}
    checked = 0
    for query, selector, options in product(QUERIES, SCOPES, FILTERS):
        scope = _scope(selector)
        got = collections.search(query, selector, limit=20, **options)
        key = ",".join(sorted(scope))
        for hit in got.results:
            assert hit.collection in scope, (query, selector, options, hit.collection)
            markers = set(re.findall(r"z(?:alpha|beta|gamma)", hit.content))
            assert markers == {MARKER[hit.collection]}, (query, selector, hit.content)
            folder = collections.spec(hit.collection).path
            assert hit.content.split("\n")[-1][:30] in (folder / hit.path).read_text()
            if "tags_any" in options:
                assert "t2" in hit.tags
            if "path_globs" in options:
                assert hit.path.startswith("notes/doc-1")
            seen.setdefault(key, set()).add(hit.collection)
            checked += 1
    assert checked > 1000
    # every collection of a scope shows up somewhere: the scope is really searched
    for selector in SCOPES:
        scope = _scope(selector)
        assert seen[",".join(sorted(scope))] == scope


def test_the_marker_of_another_collection_finds_nothing_in_this_one(
        collections: Collections) -> None:
    for name, other in product(NAMES, NAMES):
        got = collections.search(MARKER[other], name, mode="lexical", limit=50)
        if name == other:
            assert len(got.results) == 50
        else:
            assert got.results == ()


def test_a_list_of_two_searches_exactly_those_two(collections: Collections) -> None:
    got = collections.search("harbor lantern", ["gamma", "beta"], limit=50,
                             chunks_per_document=1)
    assert {h.collection for h in got.results} == {"beta", "gamma"}


def test_a_collection_not_searched_by_default_is_searched_only_when_named(
        collections: Collections) -> None:
    assert collections.defaults == ("alpha", "beta")
    for query in QUERIES:
        assert all(h.collection != "gamma"
                   for h in collections.search(query, None, limit=20).results)
    assert {h.collection for h in collections.search("zgamma", "gamma").results} == {"gamma"}


@pytest.mark.parametrize("selector", ["delta", ["alpha", "Beta"], ["alpha", "delta", "x"]])
def test_an_unknown_collection_is_an_error_naming_the_real_ones(
        collections: Collections, selector: str | list[str]) -> None:
    with pytest.raises(UnknownCollection) as raised:
        collections.search("harbor", selector)
    assert "the collections are: alpha, beta, gamma" in str(raised.value)
    assert raised.value.code == "invalid_argument"


def test_each_collection_reads_with_its_own_parsers_overrides(
        collections: Collections) -> None:
    indexed = {name: set(collections.kb(name).indexed_paths()) for name in NAMES}
    assert "drafts/draft.md" not in indexed["alpha"]  # alpha excludes drafts/
    assert "drafts/draft.md" in indexed["beta"] and "drafts/draft.md" in indexed["gamma"]
    assert "extra.txt" in indexed["gamma"]  # only gamma reads .txt
    assert "extra.txt" not in indexed["alpha"] and "extra.txt" not in indexed["beta"]
    got = collections.search("meadow signal text", ["alpha", "beta", "gamma"],
                             path_globs=["*.txt"], limit=10)
    assert [(h.collection, h.path) for h in got.results] == [("gamma", "extra.txt")]


def test_every_collection_has_its_own_index_folder_and_count(
        collections: Collections) -> None:
    infos = {i.name: i for i in collections.info()}
    assert [i.name for i in collections.info()] == list(NAMES)
    assert infos["alpha"].document_count == DOCS  # drafts/ and .txt left out
    assert infos["beta"].document_count == DOCS + 1
    assert infos["gamma"].document_count == DOCS + 2
    assert all(i.ready and i.last_indexed for i in infos.values())
    assert infos["alpha"].description == "Alpha team" and not infos["gamma"].default
    folders = {collections.settings(n).index_dir for n in NAMES}
    assert len(folders) == 3 and all((f / "index.db").is_file() for f in folders)
