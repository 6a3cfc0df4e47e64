"""IndexReader.matching_paths: every store keeps exactly the documents
``DocumentFilter.matches`` keeps (the meaning a search had when it filtered in Python)."""

from __future__ import annotations

import pytest

from kbmcp_core.models import DocumentFilter, DocumentRecord
from kbmcp_core.ports import IndexStore

#: path, tags, date, topic, category: every filter kind has rows on both sides of it
ROWS: list[tuple[str, tuple[str, ...], str | None, str | None, str | None]] = [
    ("notes/a.md", ("Alpha", "beta"), "2024-01-05", "Ops", "Guide"),
    ("notes/sub/b.md", ("ALPHA",), "2023-12-31", "ops", None),
    ("Notes/C.MD", (), None, None, "guide"),
    ("x[1]/y.md", ("gamma", "beta", "Beta"), "2024-06-30", "Dev", "ref"),
    ("dot.dir/z-1.md", ("delta",), "2024-01-01", "", "Guide"),
    ("日本/メモ.md", ("日本語", "beta"), "2022-02-02", "言語", None),
    ("space dir/q?.md", ("alpha", "gamma"), "2024-12-31", "dev", "REF"),
    ("a]b/c.txt", ("Gamma",), "2025-01-01", None, None),
]

SPECS: list[DocumentFilter] = [
    DocumentFilter(path_globs=("notes/*",)),
    DocumentFilter(path_globs=("*.md",)),
    DocumentFilter(path_globs=("*/b.md",)),
    DocumentFilter(path_globs=("notes/?.md",)),
    DocumentFilter(path_globs=("x[[]1]/*",)),
    DocumentFilter(path_globs=("[!n]*",)),
    DocumentFilter(path_globs=("*[a-c].md",)),
    DocumentFilter(path_globs=("[z-a]*",)),
    DocumentFilter(path_globs=("[!z-a]*",)),
    DocumentFilter(path_globs=("!notes/*",)),
    DocumentFilter(path_globs=("notes/*", "!*/sub/*")),
    DocumentFilter(path_globs=("*.MD", "日本/*")),
    DocumentFilter(path_globs=("[]]*", "a[]]b/*")),
    DocumentFilter(path_globs=("space dir/q[?].md",)),
    DocumentFilter(path_globs=("dot.dir/z-?.md", "[x", "*.txt")),
    DocumentFilter(path_globs=("*[.-/]*",)),
    DocumentFilter(tags_any=("alpha",)),
    DocumentFilter(tags_any=("BETA", "delta")),
    DocumentFilter(tags_any=("日本語",)),
    DocumentFilter(tags_any=("nothing",)),
    DocumentFilter(tags_all=("alpha", "beta")),
    DocumentFilter(tags_all=("beta", "BETA", "gamma")),
    DocumentFilter(tags_all=("gamma",)),
    DocumentFilter(date_from="2024-01-01"),
    DocumentFilter(date_to="2023-12-31"),
    DocumentFilter(date_from="2024-01-01", date_to="2024-06-30"),
    DocumentFilter(category="guide"),
    DocumentFilter(category="REF"),
    DocumentFilter(category=""),
    DocumentFilter(topic="OPS"),
    DocumentFilter(topic=""),
    DocumentFilter(topic="言語"),
    DocumentFilter(path_globs=("*.md", "!notes/sub/*"), tags_any=("beta", "gamma"),
                   tags_all=("beta",), date_from="2022-01-01", date_to="2024-12-31",
                   topic="dev", category="ref"),
    DocumentFilter(),
]


def _record(path: str, tags: tuple[str, ...], date: str | None, topic: str | None,
            category: str | None) -> DocumentRecord:
    return DocumentRecord(path=path, title=path, content_hash=path, size_bytes=10, date=date,
                          topic=topic, category=category, tags=tags, metadata={},
                          last_indexed="2026-01-01T00:00:00Z")


@pytest.fixture
def filled(store: IndexStore) -> IndexStore:
    for row in ROWS:
        store.write_document(_record(*row), [])
    return store


@pytest.mark.parametrize("spec", SPECS, ids=[repr(s) for s in SPECS])
def test_a_store_keeps_the_documents_the_filter_keeps(filled: IndexStore,
                                                      spec: DocumentFilter) -> None:
    expected = {d.path for d in filled.documents() if spec.matches(d)}
    assert filled.matching_paths(spec) == expected


def test_every_filter_kind_changes_what_is_kept(filled: IndexStore) -> None:
    """The fixture discriminates: no spec but the empty one keeps everything."""
    everything = {row[0] for row in ROWS}
    for spec in SPECS[:-1]:
        kept = filled.matching_paths(spec)
        assert kept != everything or spec.path_globs in {("*[.-/]*",), ("[!z-a]*",)}, spec
