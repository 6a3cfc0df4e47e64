"""The search use-case against fakes: validation, filters before truncation, offer, fusion."""

from __future__ import annotations

import re

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.fusion import fuse
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules
from kbmcp_core.ports import ChunkBudget
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchDefaults, SearchRequest
from tests.fakes import (
    FakeClock,
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeScanner,
    FakeVectorStore,
)


def build(files: dict[str, bytes]) -> tuple[Searcher, FakeIndexStore]:
    fs = FakeFileSystem(files)
    store, vectors, emb = FakeIndexStore(), FakeVectorStore(), FakeEmbedder()
    deps = IndexDeps(store=store, vectors=vectors, embedder=emb, registry=FakeRegistry(),
                     fs=fs, scanner=FakeScanner(fs), clock=FakeClock(),
                     budget=ChunkBudget(64, 1, lambda t: len(t.split())))
    run_index(deps)
    rules = OfferRules(store, FakeRegistry())
    return Searcher(store, vectors, emb, rules,
                    defaults=SearchDefaults(max_limit=20, chunks_per_document=2)), store


def doc(i: int, extra: str = "") -> bytes:
    return (f"# A\ncommon words apple {i} {extra}\n# B\ncommon words banana {i}\n"
            "# C\ncommon cherry\n").encode()


@pytest.fixture
def searcher() -> Searcher:
    files = {f"notes/n{i:02d}.md": doc(i) for i in range(12)}
    files.update({f"other/o{i:02d}.md": doc(i, "special") for i in range(6)})
    return build(files)[0]


@pytest.mark.parametrize("bad", [
    SearchRequest(query=""),
    SearchRequest(query="   "),
    SearchRequest(query="x" * 2001),
    SearchRequest(query="x", path_globs=()),
    SearchRequest(query="x", date_from="2026-13-01"),
    SearchRequest(query="x", date_from="yesterday"),
    SearchRequest(query="x", date_from="2026-02-01", date_to="2026-01-01"),
    SearchRequest(query="x", tags_any=("",)),
    SearchRequest(query="x", chunks_per_document=0),
])
def test_malformed_requests_are_refused_with_a_reason(searcher: Searcher,
                                                      bad: SearchRequest) -> None:
    with pytest.raises(InvalidQuery) as exc:
        searcher.search(bad)
    assert str(exc.value)


def test_limit_is_clamped(searcher: Searcher) -> None:
    assert len(searcher.search(SearchRequest("common words", limit=500)).results) == 20
    assert len(searcher.search(SearchRequest("common words", limit=0)).results) == 1


def test_at_most_n_chunks_per_document_unless_lifted(searcher: Searcher) -> None:
    res = searcher.search(SearchRequest("common words apple banana", limit=20))
    per_doc: dict[str, int] = {}
    for h in res.results:
        per_doc[h.path] = per_doc.get(h.path, 0) + 1
    assert max(per_doc.values()) == 2
    small, _ = build({"a.md": doc(1), "b.md": doc(2)})
    capped = small.search(SearchRequest("common words apple banana cherry", limit=10))
    assert len(capped.results) == 4
    lifted = small.search(SearchRequest("common words apple banana cherry", limit=10,
                                        chunks_per_document=3))
    assert len(lifted.results) == 6


def test_filters_apply_before_truncation(searcher: Searcher) -> None:
    res = searcher.search(SearchRequest("common words", limit=5, path_globs=("other/*",)))
    assert len(res.results) == 5
    assert all(h.path.startswith("other/") for h in res.results)
    assert res.filter_applied == {"path_globs": ["other/*"]}
    excl = searcher.search(SearchRequest("common", limit=20, path_globs=("!notes/*",)))
    assert excl.results and all(h.path.startswith("other/") for h in excl.results)


def test_a_filter_that_matches_nothing_returns_nothing(searcher: Searcher) -> None:
    res = searcher.search(SearchRequest("common", tags_all=("nope",)))
    assert res.results == () and res.low_confidence


def test_uri_only_on_offered_documents() -> None:
    s, store = build({"a.md": doc(1), "b.md": doc(2), "c.md": doc(3)})
    store.docs["b.md"].size_bytes = 51 * 1024 * 1024  # grew past the 50 MiB index cap
    store.docs["c.md"].size_bytes = 2 * 1024 * 1024  # past the 1 MiB read cap: read in ranges
    hits = s.search(SearchRequest("common words", limit=10)).results
    uris = {h.path: h.uri for h in hits}
    assert uris["a.md"] == "kb://doc/a.md"
    assert uris["c.md"] == "kb://doc/c.md"
    assert uris["b.md"] is None
    assert "uri" not in next(h for h in hits if h.path == "b.md").as_dict()


def test_hostile_query_text_is_just_text(searcher: Searcher) -> None:
    """FTS5 syntax typed by a user is not obeyed: a query answers as its words do
    (``NEAR(...)`` is two words, ``x:y`` two words). kb-mcp's own syntax (phrases and
    ``-term``, decision 0035) is pinned in test_query_syntax_search.py."""
    for q in ["NEAR(special apple)", "special* OR x:y",
              "special ^apple (z", "special\x00\x00", "special --apple x-ray -5"]:
        words = " ".join(re.findall(r"\w+", q))
        for mode in ("hybrid", "lexical"):
            got = searcher.search(SearchRequest(q, mode=mode)).results
            assert [(h.path, h.heading) for h in got] == [
                (h.path, h.heading)
                for h in searcher.search(SearchRequest(words, mode=mode)).results], (q, mode)
            assert got and got[0].path.startswith("other/"), (q, mode)


def test_fusion_rewards_agreement_and_keeps_single_leg_finds() -> None:
    vector = [(1, 0.9), (2, 0.5), (3, 0.4)]
    lexical = [(3, 1.0), (4, 0.5)]
    ranked = [cid for cid, _ in fuse(vector, lexical)]
    assert ranked[0] == 3  # found by both
    assert set(ranked) == {1, 2, 3, 4}
    assert fuse([], []) == []
    assert [c for c, _ in fuse([], lexical)] == [3, 4]
