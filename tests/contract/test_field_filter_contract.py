"""Declared-field filters (decision 0036) keep the same documents on every index store:
exact, any-of and range tests on text, list, number and date fields, ``fields_not``, and
the rows following every write (metadata-only update, delete, ``replace_fields``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kbmcp_core.field_filters import conditions
from kbmcp_core.fields import Declared, front_matter, values_of
from kbmcp_core.models import DocumentFilter, DocumentRecord
from kbmcp_core.ports import IndexStore

DECLARED: Declared = (("due", "date"), ("status", "string"), ("tags", "list"),
                      ("year", "number"))
#: path -> front matter (``tags`` is lifted into the row, as the Markdown parser does)
FRONT: dict[str, dict[str, Any]] = {
    "a.md": {"status": "Draft", "year": 2020, "due": "2024-01-05", "tags": ["Alpha", "beta"]},
    "b.md": {"status": "final", "year": 2023.5, "due": "2023-12-31T23:00:00", "tags": ["ALPHA"]},
    "c.md": {"status": "draft", "year": "2024", "tags": []},
    "d.md": {},
    "e.md": {"status": "Ünïcode", "year": -1, "due": "2025-01-01", "tags": ["gamma", "beta"]},
    "f.md": {"status": ["not", "text"], "year": "soon", "due": "someday"},
}
#: (fields, fields_not) -> the paths kept
CASES: list[tuple[dict[str, Any] | None, dict[str, Any] | None, set[str]]] = [
    ({"status": "draft"}, None, {"a.md", "c.md"}),
    ({"status": "DRAFT"}, None, {"a.md", "c.md"}),
    ({"status": ["final", "ünïcode"]}, None, {"b.md", "e.md"}),
    ({"tags": "alpha"}, None, {"a.md", "b.md"}),
    ({"tags": ["gamma", "ALPHA"]}, None, {"a.md", "b.md", "e.md"}),
    ({"year": 2020}, None, {"a.md"}),
    ({"year": [2024, 2023.5]}, None, {"b.md", "c.md"}),
    ({"year": {"gte": 2020, "lt": 2024}}, None, {"a.md", "b.md"}),
    ({"year": {"gt": 2020}}, None, {"b.md", "c.md"}),
    ({"year": {"lte": "2020"}}, None, {"a.md", "e.md"}),
    ({"due": "2023-12-31"}, None, {"b.md"}),
    ({"due": {"gte": "2024-01-01"}}, None, {"a.md", "e.md"}),
    ({"due": {"gt": "2023-12-31", "lte": "2024-06-30"}}, None, {"a.md"}),
    ({"status": "draft", "year": {"gte": 2021}}, None, {"c.md"}),
    (None, {"status": "draft"}, {"b.md", "d.md", "e.md", "f.md"}),
    (None, {"tags": ["beta"], "year": {"lt": 2000}}, {"b.md", "c.md", "d.md", "f.md"}),
    ({"tags": "beta"}, {"status": "draft"}, {"e.md"}),
    ({"status": "nothing"}, None, set()),
]


def _record(path: str) -> DocumentRecord:
    front = dict(FRONT[path])
    tags = tuple(front.pop("tags", ()))
    rows, _ = values_of(front_matter(front, path, None, tags, None, None), DECLARED)
    return DocumentRecord(path=path, title=path, content_hash=path, size_bytes=1, date=None,
                          topic=None, category=None, tags=tags, metadata=front,
                          last_indexed="2026-01-01T00:00:00Z", fields=rows)


def _spec(fields: dict[str, Any] | None, fields_not: dict[str, Any] | None) -> DocumentFilter:
    return DocumentFilter(fields=conditions(fields, DECLARED),
                          fields_not=conditions(fields_not, DECLARED, "fields_not"))


@pytest.fixture
def filled(store: IndexStore) -> IndexStore:
    for path in FRONT:
        store.write_document(_record(path), [])
    return store


@pytest.mark.parametrize(("fields", "fields_not", "kept"), CASES,
                         ids=[f"{f}-not{n}" for f, n, _ in CASES])
def test_a_store_keeps_the_documents_a_field_filter_keeps(
    filled: IndexStore, fields: dict[str, Any] | None, fields_not: dict[str, Any] | None,
    kept: set[str],
) -> None:
    spec = _spec(fields, fields_not)
    assert filled.matching_paths(spec) == kept
    # and the meaning every store follows says the same
    assert {p for p in FRONT if spec.matches(filled.get_document(p),  # type: ignore[arg-type]
                                             _record(p).fields)} == kept


def test_field_rows_follow_updates_deletes_and_replacement(filled: IndexStore) -> None:
    draft = _spec({"status": "draft"}, None)
    # a metadata-only update rewrites the rows
    filled.update_document_metadata(replace(_record("a.md"), fields=()))
    assert filled.matching_paths(draft) == {"c.md"}
    # a deleted document leaves no row behind for the next one written at that path
    filled.delete_documents(["c.md"])
    filled.write_document(replace(_record("c.md"), fields=()), [])
    assert filled.matching_paths(draft) == set()
    # replace_fields rewrites only the paths it names
    assert filled.replace_fields({"a.md": _record("a.md").fields, "gone.md": ()}) == 1
    assert filled.matching_paths(draft) == {"a.md"}
    assert filled.matching_paths(_spec({"year": 2023.5}, None)) == {"b.md"}
    # None drops every row
    filled.replace_fields(None)
    assert filled.matching_paths(_spec({"year": {"gte": -10}}, None)) == set()
    assert filled.matching_paths(_spec(None, {"year": {"gte": -10}})) == set(FRONT)
