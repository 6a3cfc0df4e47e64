"""A query naming a release puts that release's notes first (``kbmcp_core/releases.py``;
decision 0056, tenth part)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from kbmcp_core.evaluation import Ranked
from kbmcp_core.fusion import Fusion
from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules
from kbmcp_core.releases import (
    announced_release_first,
    folded,
    named,
    named_release_first,
    release_of,
)
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from kbmcp_core.tuning import Legs, ranked
from tests.fakes import (
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeVectorStore,
    fake_deps,
)


def test_a_release_is_one_number_however_it_is_written() -> None:
    assert folded("v2.0") == folded("2.0.0") == folded("2.0") == "2"
    assert folded("2.1.0") == "2.1"
    assert folded("2.1.10") == "2.1.10" != folded("2.1")
    assert folded("1.10") == "1.10"  # a zero that is not trailing stays
    assert named("after upgrading to gnupg 2.1, and in V1.9.0?") == {"2.1", "1.9"}
    assert named("can I still build gdb against python 2") == set()
    assert named("") == set()


def test_a_file_name_is_a_releases_notes_when_it_holds_one_release_number() -> None:
    assert release_of("gnupg/2.1.0.txt") == "2.1"
    assert release_of("RelNotes/v2.0.md") == "2"
    assert release_of("docs/CHANGES-1.9.txt") == "1.9"
    assert release_of("gdb/13.txt") is None  # no dot: not read as a release
    assert release_of("upgrade-1.2-to-1.3.md") is None  # two releases: neither
    assert release_of("2.1/README.md") is None  # the folder's release is not the file's
    assert release_of("README") is None


def _searcher_over(files: dict[str, bytes], lexical: list[tuple[str, float]],
                   near: list[tuple[str, float]]) -> Searcher:
    """A searcher over ``files`` whose legs give each document's one chunk these scores."""
    store, vectors = FakeIndexStore(), FakeVectorStore()
    deps = fake_deps(FakeFileSystem(files), store=store, vectors=vectors)
    run_index(deps)
    ids = {c.document_path: cid for cid, c in store.get_chunks(store.chunk_ids()).items()}

    def lexical_search(query: str, limit: int,
                       document_paths: Collection[str] | None = None
                       ) -> list[tuple[int, float]]:
        return [(ids[path], score) for path, score in lexical]

    def vector_search(vector: list[float], limit: int,
                      allowed_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        return [(ids[path], score) for path, score in near]

    store.lexical_search = lexical_search  # type: ignore[method-assign]
    vectors.search = vector_search  # type: ignore[method-assign]
    return Searcher(store, vectors, deps.embedder, OfferRules(store, FakeRegistry()))


def _searcher() -> Searcher:
    # three notes of one program and a guide: the model reads the later notes (which
    # mention the same keys again) nearer than the notes of the release the question names
    files = {"notes/2.1.0.md": b"# Changes in 2.1.0\nold PGP-2 keys are no longer imported\n",
             "notes/2.1.10.md": b"# Changes in 2.1.10\nkeys import faster\n",
             "notes/2.2.1.md": b"# Changes in 2.2.1\nreporting of PGP-2 keys improved\n",
             "guide.md": b"# Keys\nhow keys are imported\n"}
    return _searcher_over(files, [("notes/2.2.1.md", 1.0), ("notes/2.1.0.md", 0.4)],
                          [("notes/2.2.1.md", 0.66), ("notes/2.1.10.md", 0.62),
                           ("notes/2.1.0.md", 0.60), ("guide.md", 0.55)])


@pytest.mark.parametrize("query", [
    "what happened to my old PGP 2 keys after upgrading to 2.1",
    "PGP-2 keys v2.1.0",
])
def test_a_query_naming_a_release_gets_that_releases_notes_first(query: str) -> None:
    searcher = _searcher()
    before = searcher.search(SearchRequest("what happened to my old PGP 2 keys"))
    res = searcher.search(SearchRequest(query))
    assert res.results[0].path == "notes/2.1.0.md"
    # the other documents keep their order, and the scores stay in the printed order
    rest = [h.path for h in before.results if h.path != "notes/2.1.0.md"]
    assert [h.path for h in res.results[1:]] == rest
    assert [h.score for h in res.results] == sorted((h.score for h in res.results),
                                                    reverse=True)
    # the first place keeps the best fused score; the moved hit shows its own, lower
    own = [h.score if h.fused_score is None else h.fused_score for h in res.results]
    assert res.results[0].score == max(own)
    assert res.results[0].fused_score is not None
    assert res.results[0].fused_score < res.results[0].score


def test_a_query_naming_no_release_or_another_keeps_the_fused_order() -> None:
    searcher = _searcher()
    fused = [h.path for h in searcher.search(SearchRequest("old PGP 2 keys")).results]
    assert fused[0] == "notes/2.2.1.md"
    # "2.1" is not "2.1.10", and a release no file is the notes of moves nothing
    for query in ("old PGP 2 keys", "old PGP 2 keys after upgrading to 2.3",
                  "is 2.1.1 affected by the PGP 2 keys change"):
        assert [h.path for h in searcher.search(SearchRequest(query)).results] == fused


def test_each_place_keeps_its_score() -> None:
    paths = {1: "n/2.2.1.txt", 2: "n/2.1.10.txt", 3: "n/2.1.0.txt", 4: "n/2.1.0.txt"}
    order = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    assert named_release_first(order, paths, "in 2.1") == [(3, 0.9), (1, 0.8), (2, 0.7),
                                                           (4, 0.6)]
    assert named_release_first(order, paths, "in 2.1.10") == [(2, 0.9), (1, 0.8), (3, 0.7),
                                                              (4, 0.6)]
    assert named_release_first(order, paths, "nothing named") == order


def test_tune_puts_a_named_releases_notes_first_as_search_does() -> None:
    sections = {1: Ranked("n/2.2.1.txt", "Changes", 1, 2),
                2: Ranked("n/2.1.0.txt", "Changes", 1, 2)}
    legs = Legs(((1, 0.66), (2, 0.60)), ((1, 1.0), (2, 0.4)), 1.0, "keys in 2.1")
    assert [r.path for r in ranked(legs, Fusion(), sections, 1, 10)] == [
        "n/2.1.0.txt", "n/2.2.1.txt"]
    plain = Legs(legs.vector, legs.lexical, 1.0, "keys")
    assert [r.path for r in ranked(plain, Fusion(), sections, 1, 10)] == [
        "n/2.2.1.txt", "n/2.1.0.txt"]


def test_the_notes_a_release_announces_come_before_the_announcement() -> None:
    # 1.8.2's notes announce what 2.0 will change; 2.0's notes say it changed
    paths = {1: "RelNotes/1.8.2.txt", 2: "RelNotes/1.9.0.txt", 3: "RelNotes/2.0.0.txt",
             4: "RelNotes/2.0.0.txt"}
    texts = {1: "Backward compatibility notes (for Git 2.0)\n'git add -u' will change",
             2: "In Git 2.0 'git add -u' will operate on the whole tree",
             3: "'git add -u' now operates on the whole tree", 4: "other changes"}
    order = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    assert announced_release_first(order, paths, texts) == [(3, 0.9), (1, 0.8), (2, 0.7),
                                                            (4, 0.6)]
    # a release named that is earlier than the notes' own, or whose notes are not
    # candidates, or another folder's (another program), moves nothing
    assert announced_release_first(order, paths, {1: "a regression of 1.7.1 fixed"}) == order
    assert announced_release_first(order[:2], paths, texts) == order[:2]
    elsewhere = {**paths, 3: "gdb/2.0.txt", 4: "gdb/2.0.txt"}
    assert announced_release_first(order, elsewhere, texts) == order
    # notes that are not a release's, naming one, move nothing either
    guide = {**paths, 1: "guide.md"}
    assert announced_release_first(order, guide, {1: "since Git 2.0"}) == order


def test_search_puts_the_announced_releases_notes_first() -> None:
    files = {"RelNotes/1.8.2.md": b"# Git 1.8.2\nBackward compatibility notes (for Git 2.0):"
                                  b" add -u will work on the whole tree\n",
             "RelNotes/2.0.0.md": b"# Git 2.0\nadd -u now works on the whole tree\n"}
    searcher = _searcher_over(files, [("RelNotes/1.8.2.md", 1.0), ("RelNotes/2.0.0.md", 0.9)],
                              [("RelNotes/1.8.2.md", 0.78), ("RelNotes/2.0.0.md", 0.76)])
    res = searcher.search(SearchRequest("git add -u in a subdirectory affects the whole tree?"))
    assert [h.path for h in res.results] == ["RelNotes/2.0.0.md", "RelNotes/1.8.2.md"]
    assert res.results[0].score > res.results[1].score
