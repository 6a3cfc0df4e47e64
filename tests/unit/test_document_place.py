"""The model reads each chunk under its document's place (decision 0056, sixth addendum):
the folders of its path lead the text embedded, so that a question naming a program finds
that program's notes where their text never names it; the text shown, cited and hashed is
unchanged, and an index embedded the old way is embedded again by its next run."""

from __future__ import annotations

from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_EMBED_TEXT
from kbmcp_core.models import (
    EMBED_TEXT,
    EMBED_TEXT_UNPLACED,
    place_of,
    vector_text_of,
    whole_text_of,
)
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.fakes import FakeEmbedder, FakeFileSystem, FakeIndexStore, FakeRegistry, fake_deps

#: two programs' notes, neither naming its program; strace's holds more of the question's
#: other words
NOTES = {"strace/NEWS.md": b"# Changes\nThe TUI changed.\n",
         "gdb/NEWS.md": b"# Changes\nThe TUI.\n"}
QUESTION = "what changed in the tui in gdb"


def test_a_place_is_the_folders_of_the_path() -> None:
    assert place_of("gdb/13.txt") == "gdb"
    assert place_of("docs/src/a.b.md") == "docs/src"
    assert place_of("2.39.0.txt") == ""
    assert vector_text_of(("Changes",), "Body.", "gdb/13.md") == "gdb > Changes\nBody."
    # a file at the top is read as before
    assert vector_text_of(("Changes",), "Body.", "13.md") == vector_text_of(("Changes",), "Body.")


def test_a_question_naming_a_program_finds_its_notes() -> None:
    store = FakeIndexStore()
    deps = fake_deps(FakeFileSystem(dict(NOTES)), store=store)
    run_index(deps)
    searcher = Searcher(store, deps.vectors, deps.embedder, OfferRules(store, FakeRegistry()))
    res = searcher.search(SearchRequest(QUESTION, mode="vector"))
    assert [h.path for h in res.results] == ["gdb/NEWS.md", "strace/NEWS.md"]
    # what is shown, cited and hashed is the file's own text, without the place
    assert res.results[0].content == "The TUI."
    chunk = next(c for c in store.get_chunks(store.chunk_ids()).values()
                 if c.document_path == "gdb/NEWS.md")
    assert whole_text_of(chunk.heading_path, chunk.content) == "Changes\nThe TUI."


def test_the_same_words_in_two_documents_are_embedded_under_each_place() -> None:
    files = {"strace/NEWS.md": b"# Changes\nThe TUI.\n", "gdb/NEWS.md": b"# Changes\nThe TUI.\n"}
    emb = FakeEmbedder()
    deps = fake_deps(FakeFileSystem(files), embedder=emb)
    run_index(deps)
    assert sorted(emb.embedded) == ["gdb > Changes\nThe TUI.", "strace > Changes\nThe TUI."]


def test_an_index_embedded_without_places_is_embedded_again_by_its_next_run() -> None:
    emb = FakeEmbedder()
    store = FakeIndexStore()
    deps = fake_deps(FakeFileSystem(dict(NOTES)), store=store, embedder=emb)
    run_index(deps)
    chunks = store.chunk_ids()
    # what the previous kb-mcp left: its mark, and vectors of the text without the place
    store.set_meta(META_EMBED_TEXT, EMBED_TEXT_UNPLACED)
    old = {cid: emb.embed_documents([whole_text_of(c.heading_path, c.content)])[0]
           for cid, c in store.get_chunks(chunks).items()}
    deps.vectors.delete(chunks)
    deps.vectors.append(list(old), list(old.values()))
    emb.embedded.clear()
    summary = run_index(deps)
    assert summary.unchanged == 2 and summary.chunks_embedded == len(chunks)
    assert sorted(emb.embedded) == ["gdb > Changes\nThe TUI.",
                                    "strace > Changes\nThe TUI changed."]
    assert store.get_meta(META_EMBED_TEXT) == EMBED_TEXT
    searcher = Searcher(store, deps.vectors, deps.embedder, OfferRules(store, FakeRegistry()))
    res = searcher.search(SearchRequest(QUESTION, mode="vector"))
    assert res.results[0].path == "gdb/NEWS.md"


def test_an_index_of_files_at_the_top_keeps_its_vectors() -> None:
    """Nothing has a place there: 0020's text is this one's, so nothing is embedded again."""
    emb = FakeEmbedder()
    store = FakeIndexStore()
    files = {"12.md": b"# Changes\nThe TUI changed.\n", "13.md": b"# Changes\nThe TUI.\n"}
    deps = fake_deps(FakeFileSystem(files), store=store, embedder=emb)
    run_index(deps)
    store.set_meta(META_EMBED_TEXT, EMBED_TEXT_UNPLACED)
    emb.embedded.clear()
    summary = run_index(deps)
    assert summary.chunks_embedded == 0 and emb.embedded == []
    assert store.get_meta(META_EMBED_TEXT) == EMBED_TEXT
