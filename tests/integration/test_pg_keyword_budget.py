"""PostgreSQL's keyword budget once the planner has statistics (decision 0058's addendum
"PostgreSQL's keyword leg"): a word they put at twice the budget or more is not counted,
the words that fit still are, and the leg within the budget is unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event, text

from kbmcp_adapters.store import keyword_budget
from kbmcp_adapters.store.sql_store import SqlIndexStore
from tests.contract.test_keyword_budget_contract import _write


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlIndexStore]:
    with SqlIndexStore(pg_url, create=True) as opened:
        _write(opened)
        with opened._engine.begin() as conn:  # noqa: SLF001 - what autovacuum would do
            conn.execute(text("ANALYZE lexical"))
        yield opened


def _counted_words(store: SqlIndexStore, query: str, limit: int
                   ) -> tuple[list[str], list[tuple[int, float]]]:
    counted: list[str] = []

    def seen(_c: object, _cur: object, sql: str, params: object, *_a: object) -> None:
        # a count of more than a first match (whether a word is held is always read)
        if "count(*)" in sql and isinstance(params, dict) and (params.get("cap") or 0) > 1:
            counted.extend(str(v) for k, v in params.items() if k.startswith("t"))

    event.listen(store._engine, "before_cursor_execute", seen)  # noqa: SLF001
    try:
        return counted, store.lexical_search(query, limit)
    finally:
        event.remove(store._engine, "before_cursor_execute", seen)  # noqa: SLF001


def test_a_word_the_statistics_put_far_past_the_budget_is_not_counted(
        store: SqlIndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_budget, "KEYWORD_BUDGET", 30)
    counted, found = _counted_words(store, "service runner lantern", 10)
    assert "lantern" in counted  # 12 chunks: it fits, so it is counted
    assert "service" not in counted and "runner" not in counted  # 120 chunks each
    chunks = store.get_chunks([cid for cid, _ in found])
    assert len(found) == 10 and all("lantern" in c.content for c in chunks.values())


def test_within_the_budget_the_leg_is_unchanged_with_statistics(
        store: SqlIndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_budget, "KEYWORD_BUDGET", 10**9)
    whole = store.lexical_search("lantern harbor", 50)
    monkeypatch.setattr(keyword_budget, "KEYWORD_BUDGET", 30)
    assert store.lexical_search("lantern harbor", 50) == whole
    assert len(whole) == 28
