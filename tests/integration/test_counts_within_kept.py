"""The words' counts in a filter (``keyword_filter.counts_within``) are kept under the
filter's set of chunks until the next commit (decision 0058's addendum "the last 50 ms"):
a word asked again under the same filter is not counted again, and a commit that changes
the filter counts anew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.store import keyword_filter, ranking
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.models import DocumentFilter
from tests.integration.test_keyword_leg_filtered import _chunk, _doc, _whole_query, _write


def test_a_filters_counts_are_kept_until_a_commit_changes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over a budget of 30 every word of the query is counted in ``kept/`` on a sample of
    its chunks: once for two searches; after a note holding them is written there, again,
    and the leg is still the whole query's best there."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    sampled: list[tuple[str, ...]] = []
    holders = keyword_filter.holders

    def counting(table: str, terms: Any, rows: Any) -> Any:
        sampled.append(tuple(terms))
        return holders(table, terms, rows)

    monkeypatch.setattr(keyword_filter, "holders", counting)
    spec = DocumentFilter(path_globs=("kept/**",))
    query = "runner harbor lantern beacon"
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        first = store.lexical_search(query, 10, store.matching_paths(spec))
        again = store.lexical_search(query, 10, store.matching_paths(spec))
        assert first == again
        assert len(sampled) == 1
        store.write_document(_doc("kept/new.md", 1),
                             [_chunk(9001, "runner harbor lantern beacon " * 2)])
        paths = store.matching_paths(spec)
        found = store.lexical_search(query, 10, paths)
        assert len(sampled) == 2
        assert found[0][0] == 9001
        assert [c for c, _ in found] == [c for c, _ in _whole_query(store, query, 10, paths)]
