"""Filtered searches on the real SQLite store and LanceDB table (issue 14, item 3): a
filter returns exactly the documents it keeps, in the unfiltered order, exactly also on an
approximate vector index; a repeated filter is not evaluated again until the index changes,
and every change (this process or another) is seen by the next search."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event

from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.models import ChunkRecord, DocumentRecord
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchDefaults, SearchRequest, document_filter
from tests.hashing_embedder import HashingEmbedder

DIM = 16
WORDS = ("lantern", "harbor", "compass", "ledger", "orchard", "beacon")
FILTERS: list[dict[str, Any]] = [
    {"tags_any": ("t3",)},
    {"tags_all": ("t1", "even")},
    {"date_from": "2022-01-01", "date_to": "2022-12-31"},
    {"path_globs": ("*/doc-*3.md",)},
    {"path_globs": ("notes/*", "!*/doc-00*")},
    {"topic": "ops"},
    {"category": "cat2"},
]


def _document(d: int, tags: tuple[str, ...] | None = None) -> DocumentRecord:
    return DocumentRecord(
        path=f"{('notes', 'archive')[d % 2]}/doc-{d:03d}.md", title=f"{WORDS[d % 6]} {d}",
        content_hash=str(d), size_bytes=100, date=f"{2020 + d % 4}-{1 + d % 12:02d}-01",
        topic=("Ops", "dev", "misc")[d % 3], category=f"cat{d % 5}",
        tags=tags if tags is not None else (f"t{d % 5}", ("even", "odd")[d % 2]),
        metadata={}, last_indexed="2026-01-01T00:00:00Z")


def _chunks(d: int) -> list[ChunkRecord]:
    out = []
    for o in range(2):
        text = f"{WORDS[(d + o) % 6]} and {WORDS[(d * 5 + o) % 6]} near the {WORDS[d % 4]} {d}"
        out.append(ChunkRecord(2 * d + o + 1, o, "H", ("H",), text,
                               hashlib.sha256(text.encode()).hexdigest(), 1, 2, None))
    return out


Indexed = tuple[SqlIndexStore, LanceVectorStore, Searcher]


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[Indexed]:
    """The corpus for a test that changes it."""
    yield from _indexed(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    """The same corpus, built once for the tests that only search it."""
    yield from _indexed(tmp_path_factory.mktemp("filtered"))


def _indexed(tmp_path: Path) -> Iterator[Indexed]:
    store = SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True)
    vectors = LanceVectorStore(tmp_path / "vectors", DIM)
    embedder = HashingEmbedder(dimension=DIM)
    for d in range(40):
        chunks = _chunks(d)
        store.write_document(_document(d), chunks)
        vectors.add([c.id for c in chunks], embedder.embed_documents([c.content for c in chunks]))
    vectors.compact()
    searcher = Searcher(store, vectors, embedder, OfferRules(store, build_registry(["md"])),
                        defaults=SearchDefaults(max_limit=200))
    yield store, vectors, searcher
    store.close()


def _hits(searcher: Searcher, **kwargs: Any) -> list[tuple[str, int]]:
    response = searcher.search(SearchRequest("lantern harbor compass", limit=200, **kwargs))
    return [(h.path, h.chunk_id) for h in response.results]


@pytest.mark.parametrize("mode", ["vector", "lexical"])
@pytest.mark.parametrize("filters", FILTERS, ids=[str(f) for f in FILTERS])
def test_a_filtered_search_is_the_unfiltered_one_restricted_to_the_filter(
    shared: Indexed, filters: dict[str, Any], mode: str,
) -> None:
    store, _vectors, searcher = shared
    docs = {d.path: d for d in store.documents()}
    request = SearchRequest("x", **filters)
    unfiltered = _hits(searcher, mode=mode)
    expected = [hit for hit in unfiltered if document_filter(request).matches(docs[hit[0]])]
    assert expected, "the filter keeps something the query finds"
    for _ in range(2):  # the second time answered from what the first one kept
        assert _hits(searcher, mode=mode, **filters) == expected


@pytest.mark.parametrize("filters", FILTERS, ids=[str(f) for f in FILTERS])
def test_a_filtered_hybrid_search_never_returns_a_document_outside_the_filter(
    shared: Indexed, filters: dict[str, Any],
) -> None:
    store, _vectors, searcher = shared
    docs = {d.path: d for d in store.documents()}
    request = SearchRequest("x", **filters)
    kept = {p for p, d in docs.items() if document_filter(request).matches(d)}
    for _ in range(2):
        got = _hits(searcher, **filters)
        assert got and {path for path, _ in got} <= kept


def test_a_filter_sees_every_change_to_the_index(
    indexed: Indexed, tmp_path: Path,
) -> None:
    store, vectors, searcher = indexed
    embedder = HashingEmbedder(dimension=DIM)
    tagged = {path for path, _ in _hits(searcher, tags_any=("new",))}
    assert tagged == set()
    # this process changes a document's tags: the same filter finds it next time
    store.write_document(_document(7, ("new",)), _chunks(7))
    assert {p for p, _ in _hits(searcher, tags_any=("new",))} == {"archive/doc-007.md"}
    assert {p for p, _ in _hits(searcher, mode="vector", tags_any=("new",))} == {
        "archive/doc-007.md"}
    # another process (its own store and table) tags a second document and moves a vector
    other = SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}")
    other.write_document(_document(8, ("new",)), _chunks(8))
    other.close()
    assert {p for p, _ in _hits(searcher, tags_any=("new",))} == {
        "archive/doc-007.md", "notes/doc-008.md"}
    query = embedder.embed_query("lantern harbor compass")
    before = _hits(searcher, mode="vector", tags_any=("new",))
    LanceVectorStore(tmp_path / "vectors", DIM).add([before[-1][1]], [query])
    after = _hits(searcher, mode="vector", tags_any=("new",))
    assert after[0][1] == before[-1][1]
    # and a document the filter kept is deleted
    store.delete_documents(["archive/doc-007.md"])
    vectors.delete([c.id for c in _chunks(7)])
    assert {p for p, _ in _hits(searcher, tags_any=("new",))} == {"notes/doc-008.md"}


def test_a_repeated_filter_is_evaluated_once_until_the_index_changes(
    indexed: Indexed,
) -> None:
    store, _vectors, searcher = indexed
    statements: list[str] = []
    event.listen(store._engine, "before_cursor_execute",
                 lambda _c, _cur, sql, *_a: statements.append(sql))

    def filter_queries() -> int:
        return sum("FROM documents" in s and "tags" in s for s in statements)

    _hits(searcher, tags_any=("t3",))
    first = filter_queries()
    assert first >= 1
    for _ in range(3):
        _hits(searcher, tags_any=("t3",))
    assert filter_queries() == first, "the same filter on an unchanged index is not run again"
    store.write_document(_document(3, ("t4",)), _chunks(3))
    assert "archive/doc-003.md" not in {p for p, _ in _hits(searcher, tags_any=("t3",))}
    assert filter_queries() > first


CENTRES = np.random.default_rng(0).normal(size=(12, DIM))


def test_a_filtered_vector_search_is_exact_on_an_approximate_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    m = CENTRES[rng.integers(0, 12, size=1200)] + 0.35 * rng.normal(size=(1200, DIM))
    m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    vectors = LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=600)
    vectors.add(list(range(1, 1201)), m.tolist())
    vectors.compact()
    assert vectors.ann_state() is not None
    allowed = list(range(1, 1201, 7))
    missed = 0
    for q in rng.normal(size=(20, DIM)):
        sims = m[np.array(allowed) - 1] @ q / np.linalg.norm(q)
        exact = [allowed[j] for j in sorted(range(len(allowed)), key=lambda j: -sims[j])[:10]]
        got = vectors.search(q.tolist(), 10, allowed)
        missed += len(set(exact) - {cid for cid, _ in got})
        assert [cid for cid, _ in got] == exact
        assert [s for _, s in got] == pytest.approx(sorted(sims, reverse=True)[:10], abs=1e-5)
    assert missed == 0
