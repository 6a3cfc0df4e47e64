"""SQLite's keyword leg under a filter (decision 0058's addendum "the keyword leg under a
filter"): the filter's chunks read by id, its words counted inside it, and nothing kept
past a commit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kbmcp_adapters.store import ranking
from kbmcp_adapters.store.lexical import compile_query
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.store.tables import FTS_WORDS
from kbmcp_core.models import ChunkRecord, DocumentFilter, DocumentRecord

#: (folder, how many notes, what each note's text holds besides "runner")
NOTES = (("kept", 40, lambda n: "harbor " * (1 + n % 4) if n < 12 else ""),
         ("other", 60, lambda n: ("lantern " if n < 50 else "") + ("beacon " if n < 45 else "")
          + ("harbor" if n < 60 else "")))


def _doc(path: str, n: int, tags: tuple[str, ...] = ()) -> DocumentRecord:
    return DocumentRecord(path=path, title=f"Note {n}", content_hash=path, size_bytes=1,
                          date=f"202{n % 5}-01-01", topic=None, category=None, tags=tags,
                          metadata={}, last_indexed="x")


def _chunk(cid: int, body: str) -> ChunkRecord:
    return ChunkRecord(cid, 0, "Heading", ("Heading",), body,
                       hashlib.sha256(body.encode()).hexdigest(), 1, 1, None)


def _write(store: SqlIndexStore) -> None:
    cid = 1
    for folder, notes, holds in NOTES:
        for n in range(notes):
            store.write_document(_doc(f"{folder}/{n:03d}.md", n, ("even",) if n % 2 else ()),
                                 [_chunk(cid, f"the runner {holds(n)} part {n}")])
            cid += 1


def _whole_query(store: SqlIndexStore, query: str, limit: int, paths: set[str]
                 ) -> list[tuple[int, float]]:
    """The leg scored on the whole query within the paths, as before any budget."""
    c = compile_query(query)
    assert c.words is not None
    with store._engine.connect() as conn:  # noqa: SLF001 - the leg before the budget
        leg = ranking._fts_leg(conn, FTS_WORDS, c.words, limit,  # noqa: SLF001
                               json.dumps(sorted(paths)))
        return ranking._weigh_by_coverage(conn, FTS_WORDS, c.word_coverage, leg)  # noqa: SLF001


FILTERS = [DocumentFilter(path_globs=("kept/**",)), DocumentFilter(path_globs=("*/0*.md",)),
           DocumentFilter(tags_any=("even",)), DocumentFilter(date_from="2022-01-01"),
           DocumentFilter(path_globs=("*", "!other/*"))]


@pytest.mark.parametrize("spec", FILTERS, ids=[repr(f) for f in FILTERS])
def test_below_the_budget_a_filtered_leg_answers_as_before(tmp_path: Path,
                                                           spec: DocumentFilter) -> None:
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        paths = store.matching_paths(spec)  # kept: the leg reads the filter's chunk ids
        for query in ("runner harbor", "harbor lantern beacon", "beacon"):
            assert store.lexical_search(query, 10, paths) == _whole_query(store, query, 10,
                                                                          paths)


def test_over_the_budget_a_filter_still_gets_its_best_hits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget of 30; "lantern" (50 chunks) and "beacon" (45) are the rarest words of the
    index but no note of ``kept/`` holds them, and 12 of its 40 notes hold "harbor" (72 in
    the index). Counted in the filter, the budget scores "harbor": the filter's 10 best
    (the whole query's best there), not the two words the filter lacks."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        paths = store.matching_paths(DocumentFilter(path_globs=("kept/**",)))
        query = "runner harbor lantern beacon"
        found = store.lexical_search(query, 10, paths)
        best = _whole_query(store, query, 10, paths)
        assert [cid for cid, _ in found] == [cid for cid, _ in best]
        chunks = store.get_chunks([cid for cid, _ in found])
        assert all("harbor" in chunk.content for chunk in chunks.values())


@pytest.mark.parametrize("query", ["runner harbor", "harbor runner lantern",
                                   "runner harbor lantern beacon"])
def test_over_the_budget_a_filtered_leg_is_still_the_whole_querys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str) -> None:
    """200 notes, 40 of them in ``kept/``: there 20 hold "runner" and 12 "harbor", over a
    budget of 30 together. They are scored group by group (the notes holding both words,
    then those holding only "harbor", until no note holding only "runner" could place):
    the same hits, order and scores as the whole query scored on every match there."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        for n in range(200):
            kept = n < 40
            body = " ".join(w for w, holds in (
                ("runner", n % 2 == 0 if kept else n % 4 == 0),
                ("harbor " * (1 + n % 4), n < 12 if kept else n % 16 == 0),
                ("lantern", not kept and n % 3 == 0)) if holds)
            store.write_document(_doc(f"{'kept' if kept else 'other'}/{n:03d}.md", n),
                                 [_chunk(n + 1, f"the note {body} part {n}")])
        paths = store.matching_paths(DocumentFilter(path_globs=("kept/**",)))
        found = store.lexical_search(query, 10, paths)
        assert len(found) == 10
        assert found == _whole_query(store, query, 10, paths)


def test_over_the_budget_a_filter_holding_only_common_words_gets_as_many_hits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every note holds "runner": the filter's 40 matches are over a budget of 30, so a
    sample of them is scored, and the leg still returns as many as asked, all kept."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", 30)
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        paths = store.matching_paths(DocumentFilter(path_globs=("kept/**",)))
        found = store.lexical_search("runner lantern beacon", 20, paths)
        assert len({cid for cid, _ in found}) == 20
        assert {c.document_path for c in store.get_chunks([c for c, _ in found]).values()
                } <= paths


@pytest.mark.parametrize("budget", [30, 20_000])
def test_a_commit_that_moves_documents_into_a_filter_is_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    """The filter's paths and chunk ids are kept until the next commit: a note written
    into the folder afterwards is found by the same filter, and one moved out is not."""
    monkeypatch.setattr(ranking, "KEYWORD_BUDGET", budget)
    spec = DocumentFilter(path_globs=("kept/**",))
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        first = store.matching_paths(spec)
        assert not {c for c, _ in store.lexical_search("compass runner", 5, first)} & {9001}
        store.write_document(_doc("kept/new.md", 1), [_chunk(9001, "runner compass " * 3)])
        store.delete_documents(["kept/000.md"])
        now = store.matching_paths(spec)
        assert "kept/new.md" in now and "kept/000.md" not in now
        found = store.lexical_search("compass runner", 5, now)
        assert found[0][0] == 9001
        assert store.chunk_ids_for(now) == sorted({*store.chunk_ids_for(first), 9001} - {1})
