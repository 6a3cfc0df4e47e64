"""Chunk labels (decision 0058's addendum): which search filters the vector store's labels
express, and that on them a filter keeps exactly the documents ``DocumentFilter`` keeps."""

from __future__ import annotations

import itertools

import pytest

from kbmcp_core.chunk_labels import (
    ChunkLabels,
    LabelFilter,
    folder_of_glob,
    label_filter,
    labels_of,
)
from kbmcp_core.field_filters import FieldCondition
from kbmcp_core.models import DocumentFilter, StoredDocument


def _doc(path: str, tags: tuple[str, ...] = (), date: str | None = None,
         category: str | None = None, topic: str | None = None) -> StoredDocument:
    return StoredDocument(id=1, path=path, title=path, content_hash="h", size_bytes=1,
                          date=date, topic=topic, category=category, tags=tags, metadata={},
                          last_indexed="2026-01-01T00:00:00Z")


DOCS = [
    _doc("top.md"),
    _doc("notes/a.md", ("Ops", "deploy"), "2024-03-01", "Guide", "Infra"),
    _doc("notes/2024/b.md", ("ops",), "2024-12-31", "guide"),
    _doc("notes/2024/deep/c.md", ("Misc",), "2023-12-31", None, "infra"),
    _doc("notes-old/d.md", ("deploy", "ops"), None, "", "other"),
    _doc("archive/notes/e.md", ("OPS",), "2025-01-01", "Ref"),
]
FILTERS = [
    DocumentFilter(path_globs=("notes/**",)),
    DocumentFilter(path_globs=("notes/*",)),
    DocumentFilter(path_globs=("notes/2024/**", "archive/**")),
    DocumentFilter(tags_any=("OPS",)),
    DocumentFilter(tags_all=("ops", "Deploy")),
    DocumentFilter(tags_any=("misc", "deploy"), tags_all=("ops",)),
    DocumentFilter(date_from="2024-01-01", date_to="2024-12-31"),
    DocumentFilter(date_from="2024-06-01"),
    DocumentFilter(date_to="2023-12-31"),
    DocumentFilter(category="GUIDE"),
    DocumentFilter(category=""),
    DocumentFilter(topic="infra", path_globs=("notes/**",)),
    DocumentFilter(path_globs=("notes/**",), tags_any=("ops",), date_from="2024-06-01"),
]


def test_labels_name_every_folder_above_a_document_and_fold_the_text() -> None:
    assert labels_of(DOCS[3]) == ChunkLabels(("notes", "notes/2024", "notes/2024/deep"),
                                             ("misc",), "2023-12-31", "", "infra")
    assert labels_of(DOCS[0]) == ChunkLabels()
    assert labels_of(DOCS[1]).tags == ("deploy", "ops")


@pytest.mark.parametrize("spec", FILTERS, ids=range(len(FILTERS)))
def test_on_the_labels_a_filter_keeps_exactly_what_the_document_filter_keeps(
        spec: DocumentFilter) -> None:
    where = label_filter(spec)
    assert where is not None
    kept = [d.path for d in DOCS if where.matches(labels_of(d))]
    assert kept == [d.path for d in DOCS if spec.matches(d)]


def test_only_whole_folder_globs_are_folders() -> None:
    assert folder_of_glob("notes/**") == "notes"
    assert folder_of_glob("notes/2024/*") == "notes/2024"
    for glob in ("notes/*.md", "*/notes/**", "notes", "notes/**/x", "no?es/**", "**"):
        assert folder_of_glob(glob) is None, glob


@pytest.mark.parametrize("spec", [
    DocumentFilter(path_globs=("notes/*.md",)),
    DocumentFilter(path_globs=("notes/**", "!notes/2024/**")),
    DocumentFilter(tags_any=("ops",),
                   fields=(FieldCondition("status", "string", values=("draft",)),)),
    DocumentFilter(fields_not=(FieldCondition("status", "string", values=("draft",)),)),
    DocumentFilter(),
], ids=["file glob", "excluded glob", "declared field", "field excluded", "nothing"])
def test_what_labels_cannot_say_falls_back_to_the_allowed_ids(spec: DocumentFilter) -> None:
    assert label_filter(spec) is None


def test_a_label_filter_is_the_same_whatever_the_order_or_case_of_its_values() -> None:
    filters = [label_filter(DocumentFilter(tags_any=tags, path_globs=globs))
               for tags in itertools.permutations(("Ops", "deploy"))
               for globs in itertools.permutations(("b/**", "a/*"))]
    assert filters[0] == LabelFilter(folders_any=("a", "b"), tags_any=("deploy", "ops"))
    assert all(f == filters[0] for f in filters)
