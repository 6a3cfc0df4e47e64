"""SQLite's keyword leg within its budget of scored matches (decision 0058): an index the
budget does not bind answers exactly as the whole query's BM25 did; over the budget, the
rarest words are scored and what the leg returns still holds them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kbmcp_adapters.store import ranking
from kbmcp_adapters.store.lexical import compile_query
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.store.tables import FTS_WORDS
from kbmcp_core.models import ChunkRecord, DocumentRecord

COMMON = "the service runner deploys the configuration"
QUERIES = ("service runner lantern", "deploys configuration harbor", "runner lantern harbor",
           "how does the service deploy", "lantern")


def _write(store: SqlIndexStore, documents: int = 60) -> None:
    for d in range(documents):
        rare = " lantern" if d % 10 == 0 else (" harbor" if d % 7 == 0 else "")
        doc = DocumentRecord(path=f"d/{d:03d}.md", title=f"Note {d}", content_hash=str(d),
                             size_bytes=1, date=None, topic=None, category=None, tags=(),
                             metadata={}, last_indexed="x")
        chunks = [ChunkRecord(d * 10 + o + 1, o, "Heading", ("Heading",),
                              f"{COMMON}{rare} part {o} " + "word " * (d % 5),
                              hashlib.sha256(f"{d}{o}".encode()).hexdigest(), 1, 1, None)
                  for o in range(2)]
        store.write_document(doc, chunks)


def _whole_query(store: SqlIndexStore, query: str, limit: int) -> list[tuple[int, float]]:
    """The leg as it was before the budget: the whole query's BM25, weighed by coverage."""
    c = compile_query(query)
    with store._engine.connect() as conn:  # noqa: SLF001 - the leg before the budget
        assert c.words is not None
        leg = ranking._fts_leg(conn, FTS_WORDS, c.words, limit, None)  # noqa: SLF001
        return ranking._weigh_by_coverage(conn, FTS_WORDS, c.word_coverage, leg)  # noqa: SLF001


@pytest.mark.parametrize("limit", [3, 50])
def test_below_the_budget_the_leg_is_the_whole_querys(tmp_path: Path, limit: int) -> None:
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        for query in QUERIES:
            assert store.lexical_search(query, limit) == _whole_query(store, query, limit)
            assert store.lexical_search(query, limit)  # each query finds something


def test_over_the_budget_the_rarest_words_are_scored(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """120 chunks, a budget of 30: "service runner lantern" holds 240 matches together, so
    only "lantern" (12 chunks) is scored, and the leg's hits all hold it."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        found = store.lexical_search("service runner lantern", 10)
        chunks = store.get_chunks([cid for cid, _ in found])
        assert len(found) == 10
        assert all("lantern" in chunks[cid].content for cid, _ in found)
        assert found[0][1] == 1.0  # still relative to the best


def test_over_the_budget_with_only_common_words_a_sample_is_scored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chunk holds "service" and "runner": 30 of their matches are scored, and the
    leg still returns as many hits as asked."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        found = store.lexical_search("service runner", 20)
        assert len(found) == 20
        assert len({cid for cid, _ in found}) == 20


def test_under_a_filter_the_budget_counts_the_filters_share(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget of 30 and a filter keeping 6 of 60 notes: "service runner" holds 240
    matches in the index but about 24 in the filter, so the whole query is scored there,
    as before the budget."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    kept = [f"d/{d:03d}.md" for d in range(0, 60, 10)]
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        found = store.lexical_search("service runner", 10, kept)
        with store._engine.connect() as conn:  # noqa: SLF001 - the leg before the budget
            c = compile_query("service runner")
            assert c.words is not None
            leg = ranking._fts_leg(conn, FTS_WORDS, c.words, 10, json.dumps(kept))  # noqa: SLF001
            whole = ranking._weigh_by_coverage(  # noqa: SLF001
                conn, FTS_WORDS, c.word_coverage, leg)
        assert found == whole
        assert len(found) == 10


def test_presence_statistics_stop_at_the_first_match(tmp_path: Path) -> None:
    # ``low_confidence`` asks only whether a word is held: a substring held by all 120
    # chunks counts 1 instead of being counted match by match (most of a search at a
    # million chunks), and one no chunk holds is 0 either way
    from sqlalchemy import event

    from kbmcp_adapters.store.tables import FTS_GRAMS

    store = SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True)
    try:
        _write(store)
        statements: list[str] = []
        event.listen(store._engine, "before_cursor_execute",  # noqa: SLF001
                     lambda _c, _cur, sql, *_a: statements.append(sql))
        held = store.keyword_statistics("ervic zqxw", presence=True)
        assert held.holding[(FTS_GRAMS, "ervic")] == 1
        assert held.holding[(FTS_GRAMS, "zqxw")] == 0
        assert not any("count(*)" in s and "MATCH" in s for s in statements), statements
        counted = store.keyword_statistics("ervic zqxw")
        assert counted.holding[(FTS_GRAMS, "ervic")] == 120
        assert counted.holding[(FTS_GRAMS, "zqxw")] == 0
    finally:
        store.close()
