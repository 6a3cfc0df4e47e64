"""One compiled query feeds both stores: the FTS5 expressions and the plain terms that
PostgreSQL binds as parameters are the same terms."""

from __future__ import annotations

import pytest

from kbmcp_adapters.store.lexical import Terms, compile_query, quote

QUERIES = [
    "kubernetes rollout", '"blue green" deploy', "Reactのstate", "状態 更新", "東京都の事務所",
    "the", 'kubernetes" AND (NOT x', "setState関数 \"レンダー\"",
]


@pytest.mark.parametrize("text", QUERIES)
def test_the_plain_terms_are_the_terms_of_the_fts5_expressions(text: str) -> None:
    compiled = compile_query(text)
    assert compiled.word_match.fts5() == compiled.words
    assert compiled.gram_match.fts5() == compiled.grams
    assert compiled.word_terms == tuple(quote(t) for t in compiled.word_coverage)
    assert compiled.gram_terms == tuple(quote(t) for t in compiled.gram_coverage)


def test_a_phrase_is_required_and_free_words_are_optional() -> None:
    compiled = compile_query('"blue green" deploy services')
    assert compiled.word_match == Terms(("blue green",), ("deploy", "services"))
    assert compiled.gram_match.required == ("blue green",)


def test_japanese_text_becomes_trigram_substrings() -> None:
    compiled = compile_query("東京都の事務所")
    assert compiled.word_match == Terms()
    assert compiled.gram_match.optional == ("東京都", "京都の", "都の事", "の事務", "事務所")


def test_operators_never_reach_a_term() -> None:
    compiled = compile_query('kubernetes" AND (NOT x* OR title:y')
    for term in (*compiled.word_match.all, *compiled.gram_match.all, *compiled.word_coverage):
        assert not set(term) & set('"()*:^'), term
