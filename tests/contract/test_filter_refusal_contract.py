"""A search filter holding NUL or another control character is refused the same way on
every store: ``invalid_argument`` naming the parameter, decided before the store is asked
(PostgreSQL used to fail with ``store_error``, SQLite to answer nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.models import ChunkRecord, DocumentRecord
from kbmcp_core.offer import OfferRules
from kbmcp_core.ports import IndexStore
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.fakes import FakeEmbedder, FakeRegistry, FakeVectorStore

#: (request fields, the parameter the refusal names)
HOSTILE: list[tuple[dict[str, Any], str]] = [
    ({"category": "guide\x00"}, "category"),
    ({"topic": "\x00"}, "topic"),
    ({"topic": "ops\x1b[31m"}, "topic"),
    ({"tags_any": ("ops", "\x00")}, "tags_any"),
    ({"tags_all": ("a\x07b",)}, "tags_all"),
    ({"path_globs": ("notes/\x00*",)}, "path_globs"),
    ({"path_globs": ("*.md", "line\nbreak")}, "path_globs"),
    ({"category": "del\x7f"}, "category"),
]


@pytest.fixture
def searcher(store: IndexStore) -> Searcher:
    """One indexed document that every plain filter value below would keep."""
    store.write_document(
        DocumentRecord(path="notes/a.md", title="A", content_hash="h", size_bytes=40,
                       date="2026-01-01", topic="ops", category="guide", tags=("ops",),
                       metadata={}, last_indexed="2026-01-01T00:00:00Z"),
        [ChunkRecord(id=7, ordinal=0, heading="A", heading_path=("A",),
                     content="rotate the signing keys", text_hash="c7", start_line=1,
                     end_line=2, page=None)])
    return Searcher(store, FakeVectorStore(), FakeEmbedder(),
                    OfferRules(store, FakeRegistry()))


@pytest.mark.parametrize(("fields", "parameter"), HOSTILE,
                         ids=[repr(f) for f, _ in HOSTILE])
def test_a_control_character_in_a_filter_is_invalid_argument_on_every_store(
        searcher: Searcher, fields: dict[str, Any], parameter: str) -> None:
    with pytest.raises(InvalidQuery) as refused:
        searcher.search(SearchRequest(query="signing keys", mode="lexical", **fields))
    assert refused.value.code == "invalid_argument"
    assert refused.value.message.startswith(parameter)
    assert "control characters" in refused.value.message


def test_the_same_filters_without_the_control_character_find_the_document(
        searcher: Searcher) -> None:
    plain: dict[str, Any] = {"category": "guide", "topic": "ops", "tags_any": ("ops",),
                             "tags_all": ("ops",), "path_globs": ("notes/*",)}
    found = searcher.search(SearchRequest(query="signing keys", mode="lexical", **plain))
    assert [hit.path for hit in found.results] == ["notes/a.md"]
