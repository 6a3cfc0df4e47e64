"""SQLite's filtered keyword leg checks its matches against a temporary table of a large
filter's chunk ids, made once per connection and set of ids (decision 0058's addendum "the
last 50 ms"): the same hits as the JSON list in every statement gave, the table made once
while the index is unchanged, a commit seen, and a read-only index served by the list.
The sets here are small: every test makes a table from one id (``TABLE_FROM``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from kbmcp_adapters.store import keyword_filter, ranking
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.models import DocumentFilter
from tests.integration.test_keyword_leg_filtered import FILTERS, _chunk, _doc, _write

QUERIES = ("runner harbor", "harbor lantern beacon", "runner harbor lantern beacon", "beacon")


@pytest.fixture(autouse=True)
def _tables_from_one_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_filter, "TABLE_FROM", 0)


@contextmanager
def _statements(store: SqlIndexStore) -> Iterator[list[str]]:
    """Every statement ``store`` sends while the block runs."""
    sent: list[str] = []

    def keep(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        sent.append(statement)

    engine = store._engine  # noqa: SLF001 - what the store sends is the point
    event.listen(engine, "before_cursor_execute", keep)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", keep)


@pytest.mark.parametrize("budget", [30, 20_000])
def test_a_filtered_leg_answers_as_the_json_list_did(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    """Over a budget of 30 (the words counted in the filter, group by group, runs of the
    filter's chunks) and below it: hits, order and scores equal to the leg checking each
    match against the JSON list of ids, as before the tables."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", budget)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        for spec in FILTERS:
            paths = store.matching_paths(spec)
            with _statements(store) as sent:
                tabled = {q: store.lexical_search(q, 10, paths) for q in QUERIES}
            assert any("temp.kb_within_" in s for s in sent)
            with monkeypatch.context() as m:
                m.setattr(keyword_filter, "id_table", lambda *_: None)
                listed = {q: store.lexical_search(q, 10, paths) for q in QUERIES}
            assert tabled == listed, spec


def test_the_filters_table_is_made_once_until_a_commit_changes_the_filter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three searches under one folder make its table once; a note written into the
    folder afterwards is found by the same filter (a new table: nothing stale), and one
    deleted from it is gone."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    spec = DocumentFilter(path_globs=("kept/**",))
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        with _statements(store) as sent:
            for query in QUERIES[:3]:
                assert store.lexical_search(query, 10, store.matching_paths(spec))
        assert sum("CREATE TEMP TABLE" in s for s in sent) == 1
        store.write_document(_doc("kept/new.md", 1), [_chunk(9001, "runner harbor " * 4)])
        store.delete_documents(["kept/011.md"])  # chunk 12: "harbor" four times
        with _statements(store) as sent:
            found = store.lexical_search("runner harbor", 10, store.matching_paths(spec))
        assert sum("CREATE TEMP TABLE" in s for s in sent) == 1
        assert found[0][0] == 9001
        assert 12 not in {cid for cid, _ in found}
        owners = {c.document_path for c in store.get_chunks([c for c, _ in found]).values()}
        assert owners <= store.matching_paths(spec)


def test_a_read_only_index_checks_the_json_list(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that may not make a table (``query_only``) answers as a writable
    index does."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    url = f"sqlite:///{tmp_path / 'index.db'}"
    with SqlIndexStore(url, create=True) as store:
        _write(store)
        paths = store.matching_paths(FILTERS[0])
        written = {q: store.lexical_search(q, 10, paths) for q in QUERIES}
    with SqlIndexStore(url, read_only=True) as reader:
        assert reader.read_only
        with _statements(reader) as sent:
            read = {q: reader.lexical_search(q, 10, reader.matching_paths(FILTERS[0]))
                    for q in QUERIES}
        assert not any("temp.kb_within_" in s for s in sent)
    assert read == written


def test_a_filter_used_again_after_others_still_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection keeps the tables it used last: the first filter, used again after
    more others than it keeps, is made again and answers as it did (it was dropped as
    it was made, when tables were dropped by age of their filter)."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    monkeypatch.setattr(keyword_filter, "KEPT_TABLES", 2)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        specs = FILTERS[:4]  # each keeps other notes: four sets, read in this order
        kept = {spec: store.matching_paths(spec) for spec in specs}
        assert len({frozenset(paths) for paths in kept.values()}) == len(specs)
        first = {q: store.lexical_search(q, 10, kept[specs[0]]) for q in QUERIES}
        for spec in specs[1:]:
            store.lexical_search(QUERIES[0], 10, kept[spec])
        assert {q: store.lexical_search(q, 10, kept[specs[0]]) for q in QUERIES} == first


def test_a_small_filter_is_checked_against_its_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter of no more chunks than ``TABLE_FROM`` makes no table (its list is soon
    made, and SQLite's look-up table of it is Bloom-filtered)."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    monkeypatch.setattr(keyword_filter, "TABLE_FROM", 100)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        with _statements(store) as sent:
            for query in QUERIES:
                store.lexical_search(query, 10, store.matching_paths(FILTERS[0]))
        assert not any("kb_within_" in s for s in sent)


def test_a_table_whose_ids_could_not_be_written_is_not_left(tmp_path: Path) -> None:
    """Filling a table that fails (here a damaged list) drops it: the next statement
    never finds an empty table under the set's name and keeps nothing."""
    broken = keyword_filter.Within("[1, 2", [1, 2])
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        with store._engine.connect() as conn:  # noqa: SLF001 - one connection throughout
            with pytest.raises(OperationalError):
                keyword_filter.id_table(conn, broken)
            left = conn.exec_driver_sql(
                "SELECT name FROM temp.sqlite_master WHERE name LIKE 'kb_within_%'").all()
            assert left == []
