"""Search filters run in SQL: the same hits as the Python filter over every document row,
without reading every document row per query (issue 14, item 2)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.models import ChunkRecord, DocumentFilter, DocumentRecord, StoredDocument
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest, document_filter
from tests.fakes import FakeVectorStore
from tests.hashing_embedder import HashingEmbedder

WORDS = ("lantern", "harbor", "compass", "ledger", "orchard", "beacon")


def _fill(store: SqlIndexStore, vectors: FakeVectorStore, embedder: HashingEmbedder) -> None:
    cid = 1
    for d in range(60):
        folder = ("notes", "Notes/sub", "archive/2023", "x[1]")[d % 4]
        doc = DocumentRecord(
            path=f"{folder}/doc-{d:03d}.md", title=f"{WORDS[d % 6]} note {d}",
            content_hash=str(d), size_bytes=100,
            date=None if d % 7 == 0 else f"{2020 + d % 5}-{1 + d % 12:02d}-{1 + d % 28:02d}",
            topic=("Ops", "dev", None)[d % 3], category=("Guide", "ref", "")[d % 3],
            tags=(("Alpha", "beta"), ("ALPHA",), (), ("gamma", "Beta"))[d % 4],
            metadata={}, last_indexed="2026-01-01T00:00:00Z")
        chunks = []
        for o in range(2):
            text = f"{WORDS[(d + o) % 6]} and {WORDS[(d * 5 + o) % 6]} in chapter {d}"
            chunks.append(ChunkRecord(cid, o, "H", ("H",), text,
                                      hashlib.sha256(text.encode()).hexdigest(), 1, 2, None))
            cid += 1
        store.write_document(doc, chunks)
        vectors.add([c.id for c in chunks], embedder.embed_documents([c.content for c in chunks]))


class PythonFiltered:
    """The store as searches used it before: every document row, filtered in Python."""

    def __init__(self, store: SqlIndexStore) -> None:
        self._store = store

    def matching_paths(self, spec: DocumentFilter) -> set[str]:
        return {d.path for d in self._store.documents() if spec.matches(d)}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class CountingDocuments:
    """Counts how often the whole document table is read."""

    def __init__(self, store: SqlIndexStore) -> None:
        self._store = store
        self.full_reads = 0

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        if paths is None:
            self.full_reads += 1
        return self._store.documents(paths)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


REQUESTS = [
    {"path_globs": ("notes/*",)},
    {"path_globs": ("*", "!Notes/*")},
    {"path_globs": ("x[[]1]/*", "archive/*")},
    {"tags_any": ("alpha",)},
    {"tags_all": ("alpha", "BETA")},
    {"date_from": "2021-01-01", "date_to": "2023-06-30"},
    {"date_from": "2024-01-01"},
    {"category": "GUIDE"},
    {"topic": "ops"},
    {"path_globs": ("*.md",), "tags_any": ("beta",), "date_to": "2023-12-31", "topic": "OPS"},
    {"tags_any": ("nothing-like-this",)},
]


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[SqlIndexStore, FakeVectorStore, HashingEmbedder]:
    store = SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True)
    vectors, embedder = FakeVectorStore(), HashingEmbedder(dimension=16)
    _fill(store, vectors, embedder)
    return store, vectors, embedder


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
@pytest.mark.parametrize("filters", REQUESTS, ids=[str(r) for r in REQUESTS])
def test_a_filtered_search_finds_what_the_python_filter_found(
    indexed: tuple[SqlIndexStore, FakeVectorStore, HashingEmbedder], filters: dict[str, Any],
    mode: str,
) -> None:
    store, vectors, embedder = indexed
    rules = OfferRules(store, build_registry(["md"]))
    before = Searcher(PythonFiltered(store), vectors, embedder, rules)
    now = Searcher(store, vectors, embedder, rules)
    request = SearchRequest("lantern harbor compass", limit=20, mode=mode,  # type: ignore[arg-type]
                            chunks_per_document=3, **filters)
    expected = before.search(request).as_dict()
    got = now.search(request).as_dict()
    assert got == expected
    docs = {d.path: d for d in store.documents()}
    assert all(document_filter(request).matches(docs[h["path"]])
               for h in got["results"])  # type: ignore[attr-defined]
    store.close()


def test_a_filtered_search_does_not_read_every_document_row(
    indexed: tuple[SqlIndexStore, FakeVectorStore, HashingEmbedder],
) -> None:
    store, vectors, embedder = indexed
    counting = CountingDocuments(store)
    searcher = Searcher(counting, vectors, embedder,
                        OfferRules(store, build_registry(["md"])))
    response = searcher.search(SearchRequest("lantern", limit=5, tags_any=("gamma",)))
    assert response.results and all("gamma" in h.tags for h in response.results)
    assert counting.full_reads == 0
    store.close()


def test_tags_and_category_fold_case_beyond_ascii(tmp_path: Path) -> None:
    """SQLite's own lower() folds ASCII letters only; the filter folds as str.lower does."""
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        for path, tags, category in (("a.md", ("Ärger", "Ωmega"), "Éco"),
                                     ("b.md", ("ärger",), "éco"), ("c.md", ("arger",), "eco")):
            store.write_document(DocumentRecord(
                path=path, title=path, content_hash=path, size_bytes=1, date=None, topic=None,
                category=category, tags=tags, metadata={}, last_indexed="x"), [])
        assert store.matching_paths(DocumentFilter(tags_any=("ÄRGER",))) == {"a.md", "b.md"}
        assert store.matching_paths(DocumentFilter(tags_all=("ärger", "ωMEGA"))) == {"a.md"}
        assert store.matching_paths(DocumentFilter(category="ÉCO")) == {"a.md", "b.md"}


def test_tags_with_pattern_characters_and_the_kelvin_sign_filter_exactly(
    tmp_path: Path,
) -> None:
    """The LIKE shortcut before json_each never drops or adds a document."""
    rows = {"a.md": ("50%_OFF", 'say "Hi"'), "b.md": ("50x_off", "back\\slash"),
            "c.md": ("\u212a9",), "d.md": ("k9x",)}
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        for path, tags in rows.items():
            store.write_document(DocumentRecord(
                path=path, title=path, content_hash=path, size_bytes=1, date=None, topic=None,
                category=None, tags=tags, metadata={}, last_indexed="x"), [])
        for wanted in (("50%_off",), ('SAY "hi"',), ("50__off",), ("back\\slash",), ("k9",),
                       ("K9X", "nothing")):
            spec = DocumentFilter(tags_any=wanted)
            expected = {d.path for d in store.documents() if spec.matches(d)}
            assert store.matching_paths(spec) == expected, wanted
        assert store.matching_paths(DocumentFilter(tags_any=("k9",))) == {"c.md"}
        assert store.matching_paths(DocumentFilter(tags_any=("50%_off",))) == {"a.md"}


TRICKY = ("a.md", "a/x.md", "a/b/y.md", "a0.md", "ab/x.md", "A/x.md", "a/\U0010ffff.md",
          "é/x.md", "éa/x.md", "ê/x.md", "\ud7ff/x.md", "x/a/z.md")


@pytest.mark.parametrize("glob", ["a/**", "a/*", "a*", "é/**", "\ud7ff/*", "\ud7ff*", "x/a/*",
                                  "a/\U0010ffff*", "a/b/*.md", "?/x.md", "[aé]/*"])
def test_a_glob_read_from_the_path_index_keeps_what_fnmatch_keeps(tmp_path: Path,
                                                                  glob: str) -> None:
    # a glob's literal start bounds the paths read from the index on path (0058's addendum
    # "the keyword leg under a filter"); the bounds must never leave a matching path out
    import fnmatch

    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        for n, path in enumerate(TRICKY):
            doc = DocumentRecord(path=path, title=path, content_hash=str(n), size_bytes=1,
                                 date=None, topic=None, category=None, tags=(), metadata={},
                                 last_indexed="x")
            store.write_document(doc, [ChunkRecord(n + 1, 0, "H", ("H",), f"text {n}",
                                                   str(n), 1, 1, None)])
        expected = {p for p in TRICKY if fnmatch.fnmatchcase(p, glob)}
        assert store.matching_paths(DocumentFilter(path_globs=(glob,))) == expected
        assert store.matching_paths(DocumentFilter(path_globs=(glob, "x/*"))) == expected | {
            p for p in TRICKY if p.startswith("x/")}
