"""The keyword leg's budget of scored matches (decision 0058 and its addendum "PostgreSQL's
keyword leg"), the same rules on SQLite and PostgreSQL: while a query's words hold no
more matches together than the budget, the leg answers exactly as the whole query did;
past it, the rarest words are scored, or a sample of the matches with the highest ids;
under a filter the counts are the filter's share; the counts follow every write."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.store import keyword_budget, ranking
from kbmcp_core.keyword_pool import pooled_relevance
from kbmcp_core.models import ChunkRecord, DocumentRecord
from kbmcp_core.ports import IndexStore
from tests.contract.conftest import INDEX_STORES

COMMON = "the service runner deploys the configuration"
#: words held by fewer chunks than the small budget together, and words past it
WITHIN = ("lantern harbor", "harbor lantern", "harbor")
BUDGET = 30


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexStore]:
    with INDEX_STORES[request.param](request, tmp_path) as under_test:
        _write(under_test.store)
        yield under_test.store


def _doc(d: int) -> DocumentRecord:
    return DocumentRecord(path=f"d/{d:03d}.md", title=f"Note {d}", content_hash=str(d),
                          size_bytes=1, date=None, topic=None, category=None, tags=(),
                          metadata={}, last_indexed="x")


def _write(store: IndexStore, documents: int = 60) -> None:
    """60 notes of two chunks (120): every chunk holds the common words, every 10th note
    "lantern" (12 chunks), every 7th otherwise "harbor" (16)."""
    for d in range(documents):
        rare = " lantern" if d % 10 == 0 else (" harbor" if d % 7 == 0 else "")
        chunks = [ChunkRecord(d * 10 + o + 1, o, "Heading", ("Heading",),
                              f"{COMMON}{rare} part {o} " + "word " * (d % 5),
                              hashlib.sha256(f"{d}{o}".encode()).hexdigest(), 1, 1, None)
                  for o in range(2)]
        store.write_document(_doc(d), chunks)


def _budget(monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", budget)  # SQLite's leg
    monkeypatch.setattr(keyword_budget, "KEYWORD_BUDGET", budget)  # PostgreSQL's


@pytest.mark.parametrize("limit", [3, 50])
def test_within_the_budget_the_leg_is_the_whole_querys(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """120 chunks, a budget of 30: the words of these queries hold at most 28 matches, so
    the leg is the one an unbounded budget gives: the same hits, order and scores."""
    _budget(monkeypatch, 10**9)
    whole = {q: store.lexical_search(q, limit) for q in WITHIN}
    _budget(monkeypatch, BUDGET)
    for query in WITHIN:
        assert store.lexical_search(query, limit) == whole[query]
        assert whole[query]


def test_past_the_budget_only_the_rarest_words_are_scored(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """"service runner lantern" holds 252 matches; only "lantern" (12 chunks) fits in 30,
    so every hit holds it, and the best is still 1.0."""
    _budget(monkeypatch, BUDGET)
    found = store.lexical_search("service runner lantern", 10)
    chunks = store.get_chunks([cid for cid, _ in found])
    assert len(found) == 10
    assert all("lantern" in chunks[cid].content for cid, _ in found)
    assert found[0][1] == 1.0
    _budget(monkeypatch, 10**9)
    unbounded = store.lexical_search("service runner lantern", 10)
    assert {cid for cid, _ in unbounded} == {cid for cid, _ in found}  # lantern first anyway


def test_with_only_common_words_the_matches_with_the_highest_ids_are_scored(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chunk holds "service" and "runner": the 30 matches with the highest ids are
    scored, and the leg still returns as many hits as asked, all among them."""
    _budget(monkeypatch, BUDGET)
    found = store.lexical_search("service runner", 20)
    highest = sorted(store.chunk_ids(), reverse=True)[:BUDGET]
    assert len({cid for cid, _ in found}) == 20
    assert {cid for cid, _ in found} <= set(highest)


def test_under_a_filter_the_counts_are_the_filters_share(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter keeping 6 of 60 notes: "service runner" holds 240 matches in the index
    but about 24 in the filter, so the whole query is scored there, as without a budget."""
    kept = [f"d/{d:03d}.md" for d in range(0, 60, 10)]
    _budget(monkeypatch, 10**9)
    whole = store.lexical_search("service runner", 10, kept)
    _budget(monkeypatch, BUDGET)
    assert store.lexical_search("service runner", 10, kept) == whole
    assert len(whole) == 10


def test_the_counts_follow_every_write(store: IndexStore,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the notes holding "lantern" are gone, a query that scored only "lantern"
    scores a sample of the common word instead (counts kept from before the delete would
    score "lantern" alone and find nothing)."""
    _budget(monkeypatch, BUDGET)
    assert len(store.lexical_search("runner lantern", 10)) == 10
    store.delete_documents([f"d/{d:03d}.md" for d in range(0, 60, 10)])
    found = store.lexical_search("runner lantern", 10)
    assert len(found) == 10
    assert not any("lantern" in c.content
                   for c in store.get_chunks([cid for cid, _ in found]).values())


def _joint(store: IndexStore, query: str, limit: int,
           paths: list[str] | None = None) -> list[tuple[int, float]]:
    """What a joint search over this one collection finds: its counts pooled (decision
    0052), its hits scored on them and made relative."""
    pooled = store.keyword_statistics(query, paths)
    hits = store.keyword_hits(query, limit, paths, pooled)
    return pooled_relevance(((h.chunk_id, h) for h in hits), limit)


def _same(got: list[tuple[int, float]], leg: list[tuple[int, float]]) -> None:
    assert [c for c, _ in got] == [c for c, _ in leg]
    assert [s for _, s in got] == pytest.approx([s for _, s in leg], abs=1e-9)


def test_within_the_budget_a_joint_search_scores_the_whole_query(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """"lantern harbor" holds 28 matches: a joint search over one collection finds what
    the leg finds, as without a budget: every match, the leg's order and scores."""
    _budget(monkeypatch, BUDGET)
    got = _joint(store, "lantern harbor", 50)
    chunks = store.get_chunks(store.chunk_ids())
    holding = {cid for cid, c in chunks.items()
               if "lantern" in c.content or "harbor" in c.content}
    assert len(holding) == 28
    assert {cid for cid, _ in got} == holding  # the whole query scored: no match left out
    leg = store.lexical_search("lantern harbor", 50)
    assert [cid for cid, _ in got] == [cid for cid, _ in leg]
    assert [score for _, score in got] == pytest.approx([score for _, score in leg], abs=1e-9)


@pytest.mark.parametrize("query", ["service runner lantern", "service runner"])
def test_past_the_budget_a_joint_search_scores_what_the_leg_scores(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch, query: str) -> None:
    """Past the budget a joint search's pooled legs score what the single leg scores (the
    rarest word; with only common words the matches with the highest ids): over one
    collection its hits, order and scores are the leg's (before: every match scored)."""
    _budget(monkeypatch, BUDGET)
    got = _joint(store, query, 20)
    _same(got, store.lexical_search(query, 20))
    if query == "service runner":
        assert {c for c, _ in got} <= set(sorted(store.chunk_ids(), reverse=True)[:BUDGET])


def test_past_the_budget_under_a_filter_a_joint_search_scores_what_the_leg_scores(
        store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter keeping 40 of 60 notes (80 chunks, more than the budget of 30), every one
    holding "service" and "runner": the leg scores within the budget in the filter, and a
    joint search's pooled leg over one collection finds its hits, order and scores (before:
    every match in the filter scored)."""
    kept = [f"d/{d:03d}.md" for d in range(40)]
    _budget(monkeypatch, 10**9)
    every = store.lexical_search("service runner", 20, kept)
    _budget(monkeypatch, BUDGET)
    leg = store.lexical_search("service runner", 20, kept)
    assert leg != every  # the budget narrows the leg in this filter
    got = _joint(store, "service runner", 20, kept)
    _same(got, leg)
    assert {f"d/{c // 10:03d}.md" for c, _ in got} <= set(kept)
