"""The store's half of the query syntax (decision 0035), the same on every store: a phrase
is required by the lexical leg, and ``paths_containing`` finds the documents a ``-term``
leaves out of both legs (title, heading or text; Latin words as a phrase, CJK text as a
substring)."""

from __future__ import annotations

import pytest

from kbmcp_core.ports import IndexStore
from tests.contract.test_index_store_contract import chunk, doc, fill


@pytest.fixture
def filled(store: IndexStore) -> IndexStore:
    fill(store)
    store.write_document(doc("notes/xray.md", "Imaging"), [
        chunk(41, 0, "an x-ray image of the valgrind --track-origins output"),
    ])
    store.write_document(doc("ja/設定.md", "設定"), [
        chunk(51, 0, "設定ファイルの更新手順について説明します"),
    ])
    return store


def test_a_word_finds_the_documents_holding_it(filled: IndexStore) -> None:
    assert filled.paths_containing(["kubernetes"]) == {"guide/deploy.md"}
    assert filled.paths_containing(["KUBERNETES"]) == {"guide/deploy.md"}
    assert filled.paths_containing(["zeppelin"]) == set()
    assert filled.paths_containing([]) == set()


def test_titles_and_headings_count(filled: IndexStore) -> None:
    assert filled.paths_containing(["tea"]) == {"notes/tea.md"}  # body and title
    assert filled.paths_containing(["imaging"]) == {"notes/xray.md"}  # title only
    assert filled.paths_containing(["rollback"]) == {"guide/deploy.md"}


def test_several_terms_find_any_of_them(filled: IndexStore) -> None:
    assert filled.paths_containing(["watcher", "tea"]) == {"guide/watch.md", "notes/tea.md"}


def test_a_phrase_needs_its_words_in_order(filled: IndexStore) -> None:
    assert filled.paths_containing(["previous release"]) == {"guide/deploy.md"}
    assert filled.paths_containing(["release previous"]) == set()


def test_hyphenated_words_and_options_are_words_in_a_row(filled: IndexStore) -> None:
    assert filled.paths_containing(["x-ray"]) == {"notes/xray.md"}
    assert filled.paths_containing(["track-origins"]) == {"notes/xray.md"}


def test_cjk_text_is_a_substring(filled: IndexStore) -> None:
    assert filled.paths_containing(["設定ファイル"]) == {"ja/設定.md"}
    assert filled.paths_containing(["手順"]) == {"ja/設定.md"}  # shorter than a trigram
    assert filled.paths_containing(["更新作業"]) == set()


def test_the_lexical_leg_requires_a_quoted_phrase(filled: IndexStore) -> None:
    assert [cid for cid, _ in filled.lexical_search('"previous release"', 5)] == [12]
    assert filled.lexical_search('"release previous"', 5) == []
    found = {cid for cid, _ in filled.lexical_search('"green tea" kubernetes', 5)}
    assert found == {31}
