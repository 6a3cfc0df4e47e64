"""Declared front-matter fields end to end on the real SQLite store and LanceDB (decision
0036): ``[fields]`` indexes only the declared keys, a search filters on them in every mode
(also on an approximate vector index), a declaration added later is filled by the next run
without one embedding call, and one removed takes its rows with it."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.errors import ConfigError, InvalidQuery
from kbmcp_core.field_filters import conditions
from kbmcp_core.fields import Declared, values_of
from kbmcp_core.models import ChunkRecord, DocumentRecord
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchDefaults, SearchRequest
from tests.conftest import write_files
from tests.fakes import FakeEmbedder

DECLARED = {"status": "string", "year": "number", "reviewed": "date", "owners": "list"}
FILES = {
    "a.md": "---\nstatus: Draft\nyear: 2021\nreviewed: 2024-03-01\nowners: [ana, bo]\n"
            "secret: hidden\n---\n# Lantern\n\nThe lantern guide for the harbour.\n",
    "b.md": "---\nstatus: final\nyear: 2019\nreviewed: 2023-01-10\nowners: bo\n---\n"
            "# Lantern\n\nAnother lantern note about the harbour.\n",
    "c.md": "---\nstatus: draft\nyear: soon\nreviewed: someday\n---\n# Lantern\n\n"
            "A third lantern page near the harbour.\n",
    "d.md": "# Lantern\n\nNo front matter, only the lantern and the harbour.\n",
}  # fmt: skip


def _open(root: Path, embedder: FakeEmbedder, **settings: Any) -> KnowledgeBase:
    s = build_settings(None, cwd=root, kb_path=root, **settings)
    return KnowledgeBase(bootstrap(s, embedder=embedder))


def _paths(kb: KnowledgeBase, **params: Any) -> set[str]:
    response = kb.search("lantern harbour", limit=20, **params)
    return {hit.path for hit in response.results}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    write_files(root, FILES)
    return root


def _field_rows(root: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(root / ".kb-mcp" / "index.db") as conn:
        rows = conn.execute("SELECT name, value_text, value_num, value_date "
                            "FROM document_fields ORDER BY 1, 2, 3, 4").fetchall()
    conn.close()
    return rows


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_a_search_filters_on_declared_fields_in_every_mode(root: Path, mode: str) -> None:
    kb = _open(root, FakeEmbedder(), declared_fields=DECLARED)
    try:
        summary = kb.index()
        assert summary.added == 4
        # values that do not convert are left out with a warning naming the file and key
        assert any(w.startswith("c.md: front matter 'year'") for w in summary.warnings)
        assert any(w.startswith("c.md: front matter 'reviewed'") for w in summary.warnings)
        assert _paths(kb, mode=mode) == set(FILES)
        assert _paths(kb, mode=mode, fields={"status": "DRAFT"}) == {"a.md", "c.md"}
        assert _paths(kb, mode=mode, fields={"owners": ["bo"]}) == {"a.md", "b.md"}
        assert _paths(kb, mode=mode, fields={"year": {"gte": 2020, "lt": 2024}}) == {"a.md"}
        assert _paths(kb, mode=mode, fields={"reviewed": {"lt": "2024-01-01"}}) == {"b.md"}
        assert _paths(kb, mode=mode, fields_not={"status": "draft"}) == {"b.md", "d.md"}
        response = kb.search("lantern", mode=mode, fields={"year": "2021"},
                             fields_not={"owners": "zed"})
        assert response.filter_applied == {"fields": {"year": 2021},
                                           "fields_not": {"owners": "zed"}}
    finally:
        kb.close()
    # only declared keys are indexed: "secret" is front matter, but not a field
    assert {row[0] for row in _field_rows(root)} == {"owners", "reviewed", "status", "year"}


def test_undeclared_keys_and_wrong_types_are_refused_naming_what_to_fix(root: Path) -> None:
    kb = _open(root, FakeEmbedder(), declared_fields=DECLARED)
    try:
        kb.index()
        with pytest.raises(InvalidQuery) as undeclared:
            kb.search("lantern", fields={"secret": "hidden"})
        assert "'secret' is not a declared field" in str(undeclared.value)
        assert "owners (list), reviewed (date), status (string), year (number)" in str(
            undeclared.value)
        with pytest.raises(InvalidQuery, match=r"fields\.year: 'abc' is not a number"):
            kb.search("lantern", fields={"year": "abc"})
        with pytest.raises(InvalidQuery, match=r"fields_not\.reviewed: .* ISO 8601 date"):
            kb.search("lantern", fields_not={"reviewed": "March"})
        with pytest.raises(InvalidQuery, match="a range applies to number and date fields"):
            kb.search("lantern", fields={"status": {"gte": "a"}})
    finally:
        kb.close()


def test_a_bad_declaration_is_a_config_error_naming_the_key(root: Path) -> None:
    (root / "kb-mcp.toml").write_text('[fields]\nstatus = "string"\nyear = "integer"\n',
                                      encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[fields\]\.year must be one of string, number, "
                                          r"date, list, got 'integer'"):
        build_settings(None, cwd=root, kb_path=root)
    (root / "kb-mcp.toml").write_text('[fields]\n"9 lives" = "string"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="'9 lives' is not a field name"):
        build_settings(None, cwd=root, kb_path=root)
    (root / "kb-mcp.toml").write_text('[fields]\nstatus = "string"\n', encoding="utf-8")
    assert build_settings(None, cwd=root, kb_path=root).declared_fields == (
        ("status", "string"),)


def test_a_field_declared_later_is_filled_without_embedding_and_removed_with_its_rows(
    root: Path,
) -> None:
    embedder = FakeEmbedder()
    kb = _open(root, embedder)
    try:
        assert kb.index().added == 4
    finally:
        kb.close()
    embedded = len(embedder.embedded)
    assert embedded > 0 and _field_rows(root) == []
    # declared afterwards: the next run fills the rows from the stored front matter
    kb = _open(root, embedder, declared_fields={"status": "string", "year": "number"})
    try:
        summary = kb.index()
        assert (summary.added, summary.updated, summary.unchanged) == (0, 0, 4)
        assert summary.chunks_embedded == 0
        assert len(embedder.embedded) == embedded, "no text was given to the model"
        assert any(w.startswith("c.md: front matter 'year'") for w in summary.warnings)
        assert _paths(kb, fields={"status": "draft"}) == {"a.md", "c.md"}
        assert _paths(kb, mode="vector", fields={"year": {"lt": 2020}}) == {"b.md"}
        # the same declarations again: nothing to fill, no warning repeated
        assert kb.index().warnings == []
    finally:
        kb.close()
    assert {row[0] for row in _field_rows(root)} == {"status", "year"}
    # one declaration removed: its rows go, and a filter on it is refused
    kb = _open(root, embedder, declared_fields={"status": "string"})
    try:
        kb.index()
        with pytest.raises(InvalidQuery, match="declared fields: status \\(string\\)"):
            kb.search("lantern", fields={"year": 2019})
    finally:
        kb.close()
    assert {row[0] for row in _field_rows(root)} == {"status"}
    # none left: no row either
    kb = _open(root, embedder)
    try:
        kb.index()
    finally:
        kb.close()
    assert _field_rows(root) == []
    assert len(embedder.embedded) == embedded


# -- the vector leg on an approximate (IVF_PQ) index ------------------------------------------
DIM = 16
WORDS = ("lantern", "harbor", "compass", "ledger", "orchard", "beacon")
ANN_DECLARED: Declared = (("status", "string"), ("year", "number"))


def _ann_document(d: int) -> DocumentRecord:
    front = {"status": ("draft", "final", "review")[d % 3], "year": 2000 + d % 25}
    rows, _ = values_of(front, ANN_DECLARED)
    return DocumentRecord(path=f"notes/doc-{d:03d}.md", title=f"{WORDS[d % 6]} {d}",
                          content_hash=str(d), size_bytes=100, date=None, topic=None,
                          category=None, tags=(), metadata=front,
                          last_indexed="2026-01-01T00:00:00Z", fields=rows)


def _ann_chunks(d: int) -> list[ChunkRecord]:
    out = []
    for o in range(2):
        text = f"{WORDS[(d + o) % 6]} and {WORDS[(d * 5 + o) % 6]} near the {WORDS[d % 4]} {d}"
        out.append(ChunkRecord(2 * d + o + 1, o, "H", ("H",), text,
                               hashlib.sha256(text.encode()).hexdigest(), 1, 2, None))
    return out


@pytest.fixture(scope="module")
def ann_searcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searcher]:
    tmp_path = tmp_path_factory.mktemp("ann")
    store = SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True)
    vectors = LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=300)
    embedder = FakeEmbedder()
    for d in range(200):
        chunks = _ann_chunks(d)
        store.write_document(_ann_document(d), chunks)
        vectors.add([c.id for c in chunks], embedder.embed_documents([c.content for c in chunks]))
    vectors.compact()
    assert vectors.ann_state() is not None, "the vector leg runs on the approximate index"
    yield Searcher(store, vectors, embedder, OfferRules(store, build_registry(["md"])),
                   defaults=SearchDefaults(max_limit=400, fields=ANN_DECLARED))
    store.close()


@pytest.mark.parametrize("raw", [{"status": "review"}, {"year": {"gte": 2010, "lt": 2013}},
                                 {"status": ["draft", "final"], "year": {"gt": 2020}}])
def test_a_field_filtered_vector_search_on_an_approximate_index_finds_every_kept_chunk(
    ann_searcher: Searcher, raw: dict[str, Any],
) -> None:
    def hits(**params: Any) -> list[tuple[str, int, float]]:
        found = ann_searcher.search(SearchRequest("lantern harbor compass", limit=400,
                                                  mode="vector", **params))
        return [(h.path, h.chunk_id, h.score) for h in found.results]

    kept = {d for d in range(200)
            if all(c.matches(_ann_document(d).fields) for c in conditions(raw, ANN_DECLARED))}
    assert 0 < len(kept) < 200
    got = hits(fields=raw)
    # every chunk of every kept document, and nothing else: an approximate index searched
    # and then filtered would miss some
    assert {cid for _, cid, _ in got} == {c.id for d in kept for c in _ann_chunks(d)}
    scores = [s for _, _, s in got]
    assert all(a >= b - 1e-6 for a, b in zip(scores, scores[1:], strict=False))
    # fields_not drops a document any one of its tests holds for
    spared = {d for d in range(200)
              if not any(c.matches(_ann_document(d).fields)
                         for c in conditions(raw, ANN_DECLARED))}
    assert {cid for _, cid, _ in hits(fields_not=raw)} == {
        c.id for d in spared for c in _ann_chunks(d)}
