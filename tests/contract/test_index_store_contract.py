"""The IndexStore contract: the same assertions over the fake and every real store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kbmcp_core.errors import StoreError
from kbmcp_core.keyword_pool import pooled_relevance
from kbmcp_core.meta_keys import META_DIMENSION, META_MODEL
from kbmcp_core.models import ChunkRecord, DocumentRecord, IndexedState
from kbmcp_core.ports import (
    ChunkRows,
    ConversionRows,
    ConvertedText,
    DocumentRows,
    DocumentWrite,
    FieldRows,
    IndexMeta,
    IndexStore,
    IndexWriter,
    RunBookkeeping,
)
from tests.contract.conftest import StoreUnderTest
from tests.fakes import FakeIndexStore


def doc(path: str, title: str = "A title", *, size: int = 100, digest: str = "") -> DocumentRecord:
    return DocumentRecord(
        path=path,
        title=title,
        content_hash=digest or f"hash-of-{path}",
        size_bytes=size,
        date="2026-03-01",
        topic="guides",
        category="notes",
        tags=("alpha", "beta"),
        metadata={"author": "kim", "draft": False},
        last_indexed="2026-11-30T12:00:00Z",
    )


def chunk(cid: int, ordinal: int, content: str, heading: str = "Intro") -> ChunkRecord:
    return ChunkRecord(
        id=cid,
        ordinal=ordinal,
        heading=heading,
        heading_path=("Top", heading),
        content=content,
        text_hash=f"text-{content}",
        start_line=ordinal * 10 + 1,
        end_line=ordinal * 10 + 9,
        page=None,
    )


def fill(store: IndexStore) -> None:
    """Three documents with distinct words; 'deploy.md' has two chunks."""
    store.write_document(doc("guide/deploy.md", "Deployment", size=3000), [
        chunk(11, 0, "kubernetes clusters roll out gradually"),
        chunk(12, 1, "rollback restores the previous release", heading="Rollback"),
    ])
    store.write_document(doc("guide/watch.md", "Watcher", size=40), [
        chunk(21, 0, "the watcher debounces filesystem events"),
    ])
    store.write_document(doc("notes/tea.md", "Tea", size=2_000_000), [
        chunk(31, 0, "green tea steeps for two minutes"),
    ])


# -- write, read ----------------------------------------------------------------------


def test_a_written_document_reads_back_with_its_chunks(store: IndexStore) -> None:
    record = doc("guide/deploy.md", "Deployment", size=1234)
    chunks = [chunk(7, 0, "first part"), chunk(8, 1, "second part", heading="More")]
    assert store.write_document(record, chunks) == []

    stored = store.get_document("guide/deploy.md")
    assert stored is not None
    assert (stored.path, stored.title, stored.content_hash, stored.size_bytes) == (
        "guide/deploy.md", "Deployment", record.content_hash, 1234)
    assert (stored.date, stored.topic, stored.category) == ("2026-03-01", "guides", "notes")
    assert stored.tags == ("alpha", "beta")
    assert dict(stored.metadata) == {"author": "kim", "draft": False}
    assert stored.last_indexed == "2026-11-30T12:00:00Z"

    got = store.get_chunks({7, 8, 999})
    assert set(got) == {7, 8}
    second = got[8]
    assert (second.document_path, second.title, second.heading) == (
        "guide/deploy.md", "Deployment", "More")
    assert second.heading_path == ("Top", "More")
    assert second.content == "second part"
    assert (second.start_line, second.end_line, second.page) == (11, 19, None)
    assert (second.tags, second.date, second.topic, second.category) == (
        ("alpha", "beta"), "2026-03-01", "guides", "notes")

    assert store.document_paths() == ["guide/deploy.md"]
    assert store.chunk_ids() == {7, 8}
    assert store.document_chunk_hashes("guide/deploy.md") == ["text-first part",
                                                              "text-second part"]
    stats = store.stats()
    assert (stats.documents, stats.chunks) == (1, 2)


def test_unknown_paths_read_as_absent(store: IndexStore) -> None:
    fill(store)
    assert store.get_document("nope.md") is None
    assert store.document_chunk_hashes("nope.md") is None
    assert store.get_chunks({424242}) == {}


def test_chunk_hashes_come_back_in_ordinal_order(store: IndexStore) -> None:
    # neither the id order nor the write order is the ordinal order
    store.write_document(doc("a.md"), [chunk(20, 1, "second"), chunk(10, 2, "third"),
                                       chunk(30, 0, "first")])
    assert store.document_chunk_hashes("a.md") == ["text-first", "text-second", "text-third"]


def test_writing_a_path_again_replaces_its_rows(store: IndexStore) -> None:
    store.write_document(doc("a.md", "Old"), [chunk(1, 0, "old words"), chunk(2, 1, "more")])
    removed = store.write_document(doc("a.md", "New"), [chunk(2, 0, "kept id"),
                                                        chunk(3, 1, "fresh")])
    assert removed == [1]  # id 2 was written again: not reported as removed
    assert store.document_paths() == ["a.md"]
    assert store.chunk_ids() == {2, 3}
    assert store.get_chunks({2})[2].content == "kept id"
    assert store.stats().documents == 1


def _found(store: IndexStore, words: str) -> list[int]:
    return sorted(cid for cid, _ in store.lexical_search(words, 10))


def test_an_id_written_again_is_found_by_what_it_holds_now(store: IndexStore) -> None:
    """A chunk written again under its id keeps its lexical rows only when its title,
    heading trail and text are the same (an edit then rewrites only the rows that
    changed); any difference, even under the same text hash, is written again."""
    store.write_document(doc("a.md", "Harbour"), [chunk(1, 0, "anchors hold ships"),
                                                  chunk(2, 1, "lighthouses guide sailors")])
    store.write_document(doc("a.md", "Harbour"), [chunk(1, 0, "anchors hold ships"),
                                                  chunk(2, 1, "buoys mark channels")])
    assert (_found(store, "anchors"), _found(store, "buoys")) == ([1], [2])
    assert _found(store, "lighthouses") == []
    store.write_document(doc("a.md", "Marina"), [chunk(1, 0, "anchors hold ships"),
                                                 chunk(2, 1, "buoys mark channels")])
    assert (_found(store, "marina"), _found(store, "harbour")) == ([1, 2], [])
    moved = replace(chunk(1, 0, "anchors hold ships", heading="Moorings"),
                    text_hash="text-anchors hold ships")  # the same hash, another trail
    store.write_document(doc("a.md", "Marina"), [moved, chunk(2, 1, "buoys mark channels")])
    assert (_found(store, "moorings"), _found(store, "anchors")) == ([1], [1])
    assert store.get_chunks({1})[1].heading_path == ("Top", "Moorings")
    assert (store.stats().chunks, store.chunk_ids()) == (2, {1, 2})


def test_the_chunks_of_many_documents_come_back_at_once(store: IndexStore) -> None:
    fill(store)
    store.write_document(doc("empty.md"), [])
    got = store.chunks_of(["guide/deploy.md", "notes/tea.md", "empty.md", "nope.md"])
    assert got == {
        "guide/deploy.md": [(11, "text-kubernetes clusters roll out gradually"),
                            (12, "text-rollback restores the previous release")],
        "notes/tea.md": [(31, "text-green tea steeps for two minutes")],
        "empty.md": []}
    assert [h for _, h in got["guide/deploy.md"]] == store.document_chunk_hashes(
        "guide/deploy.md")


def test_any_number_of_chunks_come_back_by_id_at_once(store: IndexStore) -> None:
    """More ids than one IN list of old held (500), ids with no chunk and repeated ids:
    each existing chunk once, whole, with its document's fields (decision 0058's addendum
    "the last 50 ms": one statement)."""
    ids = []
    for d in range(12):
        rows = [chunk(10_000 + d * 100 + n, n, f"part {n} of {d}") for n in range(60)]
        store.write_document(doc(f"many/{d:02d}.md", f"Doc {d}"), rows)
        ids += [c.id for c in rows]
    got = store.get_chunks([*ids, *ids[:30], 7, 999_999])
    assert sorted(got) == sorted(ids)
    one = got[10_000 + 3 * 100 + 59]
    assert (one.document_path, one.title, one.content, one.heading_path, one.tags,
            one.date, one.start_line) == ("many/03.md", "Doc 3", "part 59 of 3",
                                          ("Top", "Intro"), ("alpha", "beta"),
                                          "2026-03-01", 591)
    assert store.get_chunks([]) == {}


def test_meta_values_are_kept_and_overwritten(store: IndexStore) -> None:
    assert store.get_meta(META_MODEL) is None
    store.set_meta(META_MODEL, "model-a")
    store.set_meta(META_DIMENSION, "384")
    store.set_meta(META_MODEL, "model-b")
    assert store.get_meta(META_MODEL) == "model-b"
    stats = store.stats()
    assert (stats.model_id, stats.dimension) == ("model-b", 384)


# -- metadata-only update, rename, delete ---------------------------------------------


def test_a_metadata_update_keeps_the_chunks_and_refreshes_title_and_size(
    store: IndexStore,
) -> None:
    fill(store)
    store.write_document(doc("blimp.md", "Zeppelin", size=40), [chunk(61, 0, "plain body")])
    newer = replace(doc("blimp.md", "Observer", size=77), tags=("gamma",))
    store.update_document_metadata(newer)

    stored = store.get_document("blimp.md")
    assert stored is not None
    assert (stored.title, stored.size_bytes, stored.tags) == ("Observer", 77, ("gamma",))
    assert store.chunk_ids_for(["blimp.md"]) == [61]
    assert store.get_chunks({61})[61].title == "Observer"
    # the lexical rows carry the new title, not the old one
    assert [cid for cid, _ in store.lexical_search("observer", 5)] == [61]
    assert store.lexical_search("zeppelin", 5) == []
    assert store.stats().documents == 4


def test_a_metadata_update_of_an_unknown_path_is_a_store_error(store: IndexStore) -> None:
    fill(store)
    with pytest.raises(StoreError):
        store.update_document_metadata(doc("ghost.md"))
    assert store.get_document("ghost.md") is None


def test_a_rename_moves_the_document_and_drops_the_old_path(store: IndexStore) -> None:
    store.write_document(doc("old/name.md", "Moved"), [chunk(1, 0, "alpha"),
                                                       chunk(2, 1, "beta")])
    removed = store.write_document(doc("new/name.md", "Moved"),
                                   [chunk(2, 0, "alpha"), chunk(3, 1, "beta")],
                                   replaces="old/name.md")
    assert removed == [1]
    assert store.get_document("old/name.md") is None
    assert store.document_paths() == ["new/name.md"]
    assert set(store.indexed_states()) == {"new/name.md"}
    assert store.chunk_ids() == {2, 3}
    assert {c.document_path for c in store.get_chunks({2, 3}).values()} == {"new/name.md"}


def test_delete_returns_the_chunk_ids_and_leaves_the_rest(store: IndexStore) -> None:
    fill(store)
    removed = store.delete_documents(["guide/deploy.md", "never/indexed.md"])
    assert sorted(removed) == [11, 12]
    assert store.document_paths() == ["guide/watch.md", "notes/tea.md"]
    assert store.chunk_ids() == {21, 31}
    assert store.lexical_search("kubernetes", 5) == []
    assert store.delete_documents([]) == []
    assert store.chunk_ids() == {21, 31}


# -- sizes ----------------------------------------------------------------------------


def test_backfill_fills_only_sizes_never_recorded(backend: StoreUnderTest) -> None:
    store = backend.store
    fill(store)
    backend.forget_size("guide/watch.md")
    assert store.consistency().null_size_paths == ("guide/watch.md",)
    assert store.indexed_states()["guide/watch.md"].size_bytes is None

    changed = store.backfill_sizes({"guide/deploy.md": 1, "guide/watch.md": 55, "ghost.md": 9})

    assert changed == 1
    sizes = {p: s.size_bytes for p, s in store.indexed_states().items()}
    assert sizes == {"guide/deploy.md": 3000, "guide/watch.md": 55, "notes/tea.md": 2_000_000}
    assert store.get_document("ghost.md") is None
    assert store.consistency().null_size_paths == ()
    assert store.backfill_sizes({}) == 0


def test_record_size_overwrites_an_existing_row_only(store: IndexStore) -> None:
    fill(store)
    assert store.record_size("guide/watch.md", 60_000_000) is True
    watched = store.get_document("guide/watch.md")
    assert watched is not None and watched.size_bytes == 60_000_000
    assert store.record_size("ghost.md", 5) is False
    assert store.get_document("ghost.md") is None


def test_sizes_over_lists_rows_strictly_past_the_bound_sorted(backend: StoreUnderTest) -> None:
    store = backend.store
    fill(store)
    store.write_document(doc("a/exact.md", size=3000), [chunk(41, 0, "exact")])
    store.write_document(doc("a/unsized.md", size=9_000_000), [chunk(51, 0, "unsized")])
    backend.forget_size("a/unsized.md")
    assert store.sizes_over(2999) == [("a/exact.md", 3000), ("guide/deploy.md", 3000),
                                      ("notes/tea.md", 2_000_000)]
    assert store.sizes_over(3000) == [("notes/tea.md", 2_000_000)]
    assert store.sizes_over(10_000_000) == []


# -- planner and reuse lookups --------------------------------------------------------


def test_indexed_states_hold_hash_and_size_of_every_document(store: IndexStore) -> None:
    fill(store)
    assert store.indexed_states() == {
        "guide/deploy.md": IndexedState("guide/deploy.md", "hash-of-guide/deploy.md", 3000),
        "guide/watch.md": IndexedState("guide/watch.md", "hash-of-guide/watch.md", 40),
        "notes/tea.md": IndexedState("notes/tea.md", "hash-of-notes/tea.md", 2_000_000),
    }


def test_chunk_hashes_map_known_hashes_to_a_chunk_carrying_them(store: IndexStore) -> None:
    store.write_document(doc("a.md"), [chunk(1, 0, "shared"), chunk(2, 1, "only in a")])
    store.write_document(doc("b.md"), [chunk(3, 0, "shared")])
    found = store.chunk_hashes({"text-shared", "text-only in a", "text-nowhere"})
    assert set(found) == {"text-shared", "text-only in a"}
    assert found["text-shared"] in {1, 3}
    assert found["text-only in a"] == 2
    assert store.chunk_hashes([]) == {}


def test_documents_by_paths_are_the_rows_asked_for_sorted(store: IndexStore) -> None:
    fill(store)
    assert [d.path for d in store.documents()] == ["guide/deploy.md", "guide/watch.md",
                                                  "notes/tea.md"]
    many = [f"missing/{i}.md" for i in range(1500)] + ["notes/tea.md", "guide/deploy.md"]
    assert [d.path for d in store.documents(many)] == ["guide/deploy.md", "notes/tea.md"]
    assert store.documents([]) == []
    assert store.documents(["guide/watch.md"])[0].title == "Watcher"


def test_chunk_ids_for_paths(store: IndexStore) -> None:
    fill(store)
    assert sorted(store.chunk_ids_for(["guide/deploy.md", "notes/tea.md", "x.md"])) == [
        11, 12, 31]
    assert store.chunk_ids_for([]) == []


def test_chunk_ids_by_path_groups_each_documents_chunks(store: IndexStore) -> None:
    fill(store)
    every = {path: sorted(ids) for path, ids in store.chunk_ids_by_path().items()}
    assert every == {"guide/deploy.md": [11, 12], "guide/watch.md": [21], "notes/tea.md": [31]}
    some = store.chunk_ids_by_path(["notes/tea.md", "x.md"])
    assert some == {"notes/tea.md": [31]}
    assert store.chunk_ids_by_path([]) == {}


def test_prune_on_a_whole_store_removes_nothing(store: IndexStore) -> None:
    fill(store)
    assert store.prune_dangling() == 0
    assert store.chunk_ids() == {11, 12, 21, 31}
    assert store.consistency().lexical_ids == frozenset({11, 12, 21, 31})


# -- lexical search -------------------------------------------------------------------


def test_lexical_search_finds_a_word_best_first_with_scores_in_range(store: IndexStore) -> None:
    fill(store)
    hits = store.lexical_search("kubernetes", 5)
    assert hits and hits[0][0] == 11
    assert all(0.0 < score <= 1.0 for _, score in hits)
    two = store.lexical_search("green tea", 5)
    assert two[0][0] == 31
    scores = [s for _, s in two]
    assert scores == sorted(scores, reverse=True)


def test_lexical_search_finds_titles_and_headings(store: IndexStore) -> None:
    fill(store)
    assert 31 in {cid for cid, _ in store.lexical_search("tea", 5)}
    assert store.lexical_search("rollback", 5)[0][0] == 12


@pytest.mark.parametrize(("query", "expected"), [("what changed in git 2.0", 71),
                                                  ("what changed in v1.9", 72)])
def test_a_release_number_finds_its_notes_written_either_way(
        store: IndexStore, query: str, expected: int) -> None:
    # release notes title "v2.0" where a question says "2.0", and the other way round (the
    # real stores' keyword query, ``store/lexical.py``; the fake's leg counts whole words)
    if isinstance(store, FakeIndexStore):
        pytest.skip("the fake's keyword leg reads the words as typed")
    for cid, title in ((71, "Git v2.0"), (72, "Git 1.9"), (73, "Git v1.8.0"), (74, "Git v2.1"),
                       (75, "Git 2.1.0")):
        store.write_document(doc(f"notes/{title.split()[1]}.txt", f"{title} Release Notes"), [
            chunk(cid, 0, "what changed: updates to push, fetch and merge", heading="Changes")])
    hits = store.lexical_search(query, 5)
    assert hits and hits[0][0] == expected, hits


@pytest.mark.parametrize("query", ["kubernetes", "green tea", "the watcher tea rollback",
                                   '"green tea" minutes', "release"])
@pytest.mark.parametrize("paths", [None, ["guide/deploy.md", "notes/tea.md"]])
def test_keyword_hits_on_the_store_s_own_statistics_rank_as_its_keyword_leg(
        store: IndexStore, query: str, paths: list[str] | None) -> None:
    # what a joint search pools (decision 0052): with one store's own counts, its hits made
    # relative (``pooled_relevance``) are its keyword leg
    fill(store)
    own = store.keyword_statistics(query, paths)
    hits = store.keyword_hits(query, 5, paths, own)
    leg = store.lexical_search(query, 5, paths)
    got = pooled_relevance(((h.chunk_id, h) for h in hits), 5)
    assert [c for c, _ in got] == [c for c, _ in leg]
    assert [s for _, s in got] == pytest.approx([s for _, s in leg], abs=1e-9)


#: Four chunks of the same lengths (so every store's average chunk length, the one count
#: BM25 keeps per store, is the whole's): two in one store, two in another.
_SPLIT = {"a/one.md": (1, "Cloud", "cloud river stone green"),
          "a/two.md": (2, "River", "river river tulip roses"),
          "b/one.md": (3, "Green", "green tulip cloud stone"),
          "b/two.md": (4, "Roses", "roses roses roses cloud")}


#: "ulip" and "iver" are substrings of words: the trigram leg of a real store (the fake's
#: leg reads whole words and finds nothing), on the substrings' counts over both stores.
@pytest.mark.parametrize("query", ["cloud", "river stone", "roses green tulip",
                                   '"cloud river" stone', "ulip", "ulip iver", "tulip -river"])
def test_stores_scored_on_pooled_counts_rank_as_one_store_holding_all(
        store: IndexStore, two_more: tuple[IndexStore, IndexStore], query: str) -> None:
    # a folder split into collections ranks as the one folder (decision 0052): each store's
    # hits on the summed counts, made relative over both, are the one store's keyword leg
    for path, (cid, title, content) in _SPLIT.items():
        part = two_more[0] if path.startswith("a/") else two_more[1]
        for target in (store, part):
            target.write_document(doc(path, title), [chunk(cid, 0, content)])
    pooled = two_more[0].keyword_statistics(query) + two_more[1].keyword_statistics(query)
    hits = [(h.chunk_id, h) for part in two_more
            for h in part.keyword_hits(query, 5, None, pooled)]
    got = pooled_relevance(hits, 5)
    leg = store.lexical_search(query, 5)
    assert leg or ("ulip" in query and isinstance(store, FakeIndexStore))
    assert [c for c, _ in got] == [c for c, _ in leg]
    assert [s for _, s in got] == pytest.approx([s for _, s in leg], abs=1e-9)


def test_pooled_counts_are_the_sum_of_the_stores(store: IndexStore) -> None:
    fill(store)
    own = store.keyword_statistics("tea kubernetes")
    doubled = own + own
    assert doubled.chunks == 2 * own.chunks
    assert doubled.holding == {k: 2 * n for k, n in own.holding.items()}


@pytest.mark.parametrize("query", ["kubernetes", "green tea", "tea minutes zzyzx",
                                   '"green tea" minutes', "atch", "nothing-here qqq"])
def test_presence_statistics_hold_the_same_terms_as_the_counts(
        store: IndexStore, query: str) -> None:
    # what ``low_confidence`` asks (the words no chunk holds): a term is held, or not,
    # alike in both; the chunks and the legs that matched are the same
    fill(store)
    counted = store.keyword_statistics(query)
    held = store.keyword_statistics(query, presence=True)
    assert held.chunks == counted.chunks and held.found == counted.found
    assert held.holding.keys() == counted.holding.keys()
    assert {k for k, n in held.holding.items() if n} == {
        k for k, n in counted.holding.items() if n}
    assert all(0 <= held.holding[k] <= n for k, n in counted.holding.items())


def test_lexical_search_honours_paths_and_limit(store: IndexStore) -> None:
    fill(store)
    assert store.lexical_search("kubernetes", 5, ["notes/tea.md"]) == []
    assert [c for c, _ in store.lexical_search("kubernetes", 5, ["guide/deploy.md"])] == [11]
    assert store.lexical_search("kubernetes", 5, []) == []
    assert len(store.lexical_search("the watcher tea kubernetes rollback", 2)) == 2
    assert store.lexical_search("kubernetes", 0) == []
    assert store.lexical_search("   ", 5) == []


HOSTILE = [
    'kubernetes AND', 'NOT kubernetes', '"kubernetes', 'kubernetes*', 'NEAR(kubernetes)',
    'title:kubernetes', '^kubernetes', '(((kubernetes', "kubernetes') OR 1=1 --",
    'kubernetes\x00', '{kubernetes}', 'kubernetes + - : ;', '"" kubernetes ""',
]


@pytest.mark.parametrize("query", HOSTILE)
def test_operator_junk_around_a_word_is_just_text(store: IndexStore, query: str) -> None:
    fill(store)
    hits = store.lexical_search(query, 5)
    assert hits and hits[0][0] == 11


@pytest.mark.parametrize("query", ["AND", "OR NOT", "*", '"', "(", ")", "NEAR", ":", "\x00",
                                   "-", "x" * 10_000, "'; DROP TABLE chunks; --"])
def test_a_query_of_operators_alone_never_raises(store: IndexStore, query: str) -> None:
    fill(store)
    assert len(store.lexical_search(query, 5)) <= 5
    assert store.chunk_ids() == {11, 12, 21, 31}


# -- consistency ----------------------------------------------------------------------


def test_consistency_facts_of_a_whole_store(store: IndexStore) -> None:
    fresh = store.consistency()
    assert fresh.chunk_ids == frozenset() and fresh.lexical_ids == frozenset()
    assert fresh.schema_revision == fresh.head_revision
    fill(store)
    store.write_document(doc("empty.md"), [])
    facts = store.consistency()
    assert facts.chunk_ids == frozenset({11, 12, 21, 31})
    assert facts.lexical_ids == facts.chunk_ids
    assert facts.chunks_without_document == ()
    assert facts.documents_without_chunks == ("empty.md",)
    assert facts.null_size_paths == ()
    assert facts.schema_revision == facts.head_revision


def test_quick_check_of_a_healthy_store_finds_nothing(store: IndexStore) -> None:
    fill(store)
    assert store.quick_check(5.0) == []


# -- chunk windows (search context) -----------------------------------------------------


def test_chunk_windows_return_the_neighbours_in_document_order(store: IndexStore) -> None:
    store.write_document(doc("guide/long.md", "Long"), [
        chunk(104, 3, "fourth"), chunk(101, 0, "first"), chunk(103, 2, "third"),
        chunk(102, 1, "second"), chunk(105, 4, "fifth"),
    ])
    fill(store)
    windows = store.chunk_windows([103, 101, 31, 999], 1)
    assert set(windows) == {101, 103, 31}
    assert [c.content for c in windows[103]] == ["second", "third", "fourth"]
    assert [c.content for c in windows[101]] == ["first", "second"]
    assert [c.id for c in windows[31]] == [31]  # a one-chunk document: itself only
    assert windows[103][0].document_path == "guide/long.md"
    assert windows[103][0].heading_path == ("Top", "Intro")
    assert [c.id for c in store.chunk_windows([103], 0)[103]] == [103]
    assert len(store.chunk_windows([103], 10)[103]) == 5


# -- batched writes -------------------------------------------------------------------


def test_a_batch_writes_every_document_with_its_own_chunks(store: IndexStore) -> None:
    store.write_document(doc("old/moved.md", "Moved"), [chunk(1, 0, "alpha"),
                                                        chunk(2, 1, "beta")])
    store.write_document(doc("edited.md", "Before"), [chunk(5, 0, "stale words")])
    removed = store.write_documents([
        DocumentWrite(doc("new/one.md", "One"), [chunk(10, 0, "kubernetes rollout"),
                                                 chunk(11, 1, "rollback plan")]),
        DocumentWrite(doc("new/moved.md", "Moved"), [chunk(2, 0, "alpha"),
                                                     chunk(3, 1, "beta")],
                      replaces="old/moved.md"),
        DocumentWrite(doc("edited.md", "After"), [chunk(6, 0, "fresh words")]),
        DocumentWrite(doc("new/two.md", "Two"), [chunk(20, 0, "green tea steeps")]),
    ])
    assert sorted(removed) == [1, 5]  # 2 was written again under the new path
    assert store.document_paths() == ["edited.md", "new/moved.md", "new/one.md", "new/two.md"]
    owners = {cid: c.document_path for cid, c in store.get_chunks({2, 3, 6, 10, 11, 20}).items()}
    assert owners == {2: "new/moved.md", 3: "new/moved.md", 6: "edited.md",
                      10: "new/one.md", 11: "new/one.md", 20: "new/two.md"}
    assert store.document_chunk_hashes("new/one.md") == ["text-kubernetes rollout",
                                                         "text-rollback plan"]
    assert [cid for cid, _ in store.lexical_search("steeps", 5)] == [20]
    assert [cid for cid, _ in store.lexical_search("fresh", 5)] == [6]
    assert store.lexical_search("stale", 5) == []
    assert store.write_documents([]) == []


def test_a_batch_that_fails_leaves_none_of_its_documents(store: IndexStore) -> None:
    fill(store)
    before = {p: store.document_chunk_hashes(p) for p in store.document_paths()}
    with pytest.raises(StoreError):  # chunk 31 belongs to notes/tea.md, which stays
        store.write_documents([
            DocumentWrite(doc("batch/first.md", "First"), [chunk(40, 0, "zeppelin hangar")]),
            DocumentWrite(doc("guide/watch.md", "Watcher II"), [chunk(41, 0, "inotify")]),
            DocumentWrite(doc("batch/third.md", "Third"), [chunk(31, 0, "a stolen id")]),
        ])
    assert {p: store.document_chunk_hashes(p) for p in store.document_paths()} == before
    assert store.get_document("guide/watch.md").title == "Watcher"  # type: ignore[union-attr]
    assert store.lexical_search("zeppelin", 5) == []
    assert store.chunk_ids() == {11, 12, 21, 31}


def test_a_path_twice_in_one_batch_is_refused_before_any_write(store: IndexStore) -> None:
    with pytest.raises(ValueError):
        store.write_documents([
            DocumentWrite(doc("a.md"), [chunk(1, 0, "one")]),
            DocumentWrite(doc("b.md"), [chunk(2, 0, "two")], replaces="a.md"),
        ])
    assert store.document_paths() == []


# -- converted texts (decision 0023) --------------------------------------------------


def converted(digest: str, text: str, chars: int | None = None) -> ConvertedText:
    return ConvertedText(digest, text, len(text) if chars is None else chars)


def test_a_converted_text_written_with_its_document_reads_back_exactly(
        store: IndexStore) -> None:
    text = "# Table\n\n| a | b |\n|---|---|\n| ☃ | \U0001f600 |\n" + "x" * 70_000
    store.write_documents([DocumentWrite(doc("page.html", digest="h1"), [chunk(1, 0, "t")],
                                         converted=converted("h1", text, 2_000_000))])
    got = store.converted_text("h1")
    assert got is not None
    assert (got.text, got.chars, got.truncated) == (text, 2_000_000, True)
    assert store.converted_text("h2") is None
    assert store.converted_hashes({"h1", "h2"}) == {"h1"}


def test_a_converted_text_lives_while_a_document_carries_its_hash(store: IndexStore) -> None:
    # two files with the same bytes share one text
    store.write_documents([
        DocumentWrite(doc("a.html", digest="same"), [chunk(1, 0, "one")],
                      converted=converted("same", "the text")),
        DocumentWrite(doc("b.html", digest="same"), [chunk(2, 0, "two")],
                      converted=converted("same", "the text")),
    ])
    store.delete_documents(["a.html"])
    assert store.converted_text("same") == converted("same", "the text")
    # an edit (new bytes, new hash): the old text goes in the same write
    store.write_documents([DocumentWrite(doc("b.html", digest="new"), [chunk(3, 0, "three")],
                                         converted=converted("new", "new text"))])
    assert store.converted_text("same") is None
    assert store.converted_text("new") == converted("new", "new text")
    store.delete_documents(["b.html"])
    assert store.converted_hashes({"same", "new"}) == set()


def test_a_rewrite_with_the_same_bytes_keeps_the_text_and_a_metadata_update_renews_it(
        store: IndexStore) -> None:
    store.write_documents([DocumentWrite(doc("p.html", digest="h1"), [chunk(1, 0, "one")],
                                         converted=converted("h1", "first"))])
    store.write_document(doc("p.html", digest="h1"), [chunk(2, 0, "one")])
    assert store.converted_text("h1") == converted("h1", "first")
    store.update_document_metadata(doc("p.html", "New title", digest="h2"),
                                   converted("h2", "second"))
    assert store.converted_hashes({"h1", "h2"}) == {"h2"}
    store.update_document_metadata(doc("p.html", "Newer title", digest="h3"))
    assert store.converted_hashes({"h1", "h2", "h3"}) == set()


def test_keep_conversions_keeps_only_texts_a_document_carries(store: IndexStore) -> None:
    fill(store)
    kept = store.keep_conversions([converted("hash-of-guide/deploy.md", "deploy text"),
                                   converted("no-such-hash", "nobody's")])
    assert kept == 1
    assert store.converted_hashes({"hash-of-guide/deploy.md", "no-such-hash"}) == {
        "hash-of-guide/deploy.md"}
    assert store.keep_conversions([converted("hash-of-guide/deploy.md", "renewed")]) == 1
    assert store.converted_text("hash-of-guide/deploy.md") == converted(
        "hash-of-guide/deploy.md", "renewed")
    assert store.prune_dangling() == 0


@pytest.mark.parametrize("port", [DocumentRows, FieldRows, ChunkRows, ConversionRows,
                                  RunBookkeeping])
def test_the_store_plays_every_write_port(store: IndexStore, port: type) -> None:
    # the write side is split as the read side is (decision 0052 addendum): each smaller
    # port is one the store (and the fake) implements whole
    members = {name for name in vars(port) if not name.startswith("_")}
    assert members
    assert all(callable(getattr(store, name, None)) for name in members), port.__name__


def test_the_write_ports_together_are_the_index_writer() -> None:
    ports = (DocumentRows, FieldRows, ChunkRows, ConversionRows, RunBookkeeping, IndexMeta)
    own = [{n for n in vars(p) if not n.startswith("_")} for p in ports]
    assert sum(len(names) for names in own) == len(set().union(*own))  # no method twice
    assert all(p in IndexWriter.__mro__ for p in ports)
    assert not {n for n in vars(IndexWriter) if not n.startswith("_")}  # nothing of its own
