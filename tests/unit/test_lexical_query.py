"""The FTS5 query compiler turns any user text into a safe expression (or nothing)."""

from __future__ import annotations

import re

import pytest

from kbmcp_adapters.store.lexical import MAX_TERMS, compile_query

HOSTILE = {
    "lone quote": '"',
    "unbalanced quote": '"unbalanced',
    "near group": "NEAR(a b)",
    "operators": "a* OR b:c",
    "leading minus": "-x",
    "caret": "^start",
    "open paren": "(",
    "nul bytes": "wat\x00cher\x00 config",
    "ten megabytes": "configure the watcher " * 500_000,
    "emoji": "🙂 🚀 watcher 🙂",
    "only stop words": "the of and to",
    "only punctuation": "?!.,;:()[]{}*^-+",
    "column filter": "title:secret body:x",
    "fts keywords": "AND OR NOT NEAR",
    "doubled quotes": '"a""b" ""',
    "control characters": "\x01\x02\x1b[31mred\x7f",
    "mixed scripts": 'Reactのstate更新 "セッター" 関数',
}

_QUOTED = re.compile(r'"(?:[^"]|"")*"')


def assert_safe(expression: str | None) -> None:
    """Outside quoted strings only AND, OR and parentheses may appear."""
    if expression is None:
        return
    assert expression.strip()
    assert "\x00" not in expression
    skeleton = _QUOTED.sub("T", expression)
    assert re.fullmatch(r"[T()\s]*(?:(?:AND|OR)[T()\s]+)*", skeleton), expression
    assert len(_QUOTED.findall(expression)) <= 2 * MAX_TERMS


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_compiles_to_nothing_or_a_quoted_expression(text: str) -> None:
    query = compile_query(text)
    assert_safe(query.words)
    assert_safe(query.grams)
    for run in query.short_runs:
        assert 1 <= len(run) <= 2


def test_operators_typed_by_the_user_become_quoted_words() -> None:
    assert compile_query("NEAR(watcher config)").words == '"near" OR "watcher" OR "config"'
    assert compile_query("a* OR b:c").words == '"b" OR "c"'
    assert compile_query("title:secret").words == '"title" OR "secret"'


def test_a_natural_question_keeps_its_content_words_or_joined() -> None:
    assert compile_query("how do I configure the watcher?").words == '"configure" OR "watcher"'


def test_a_query_of_only_stop_words_still_searches_them() -> None:
    assert compile_query("to be or not to be").words == '"to" OR "be" OR "or" OR "not"'


def test_a_quoted_phrase_is_required_and_other_words_rank() -> None:
    assert compile_query('"run the tests"').words == '"run the tests"'
    assert compile_query('"run the tests" quickly').words == (
        '"run the tests" AND ("run the tests" OR "quickly")'
    )


def test_an_unbalanced_quote_is_plain_text() -> None:
    assert compile_query('"watcher config').words == '"watcher" OR "config"'
    assert compile_query('say "hello" and "bye').words == (
        '"hello" AND ("hello" OR "say" OR "bye")')


def test_nothing_searchable_compiles_to_none() -> None:
    for text in ("", "   ", "?!.", "🙂🙂", "\x00\x00", "x" * 10_000):
        query = compile_query(text)
        assert query.words is None
        assert query.grams is None


def test_cjk_runs_become_overlapping_trigrams() -> None:
    assert compile_query("セッター関数").grams == '"セッタ" OR "ッター" OR "ター関" OR "ー関数"'
    query = compile_query("セッター関数")
    assert query.has_cjk and query.words is None and query.short_runs == ()


def test_cjk_runs_too_short_for_trigrams_are_kept_for_a_substring_scan() -> None:
    query = compile_query("状態 更新")
    assert query.grams is None
    assert query.short_runs == ("状態", "更新")


def test_a_lone_particle_is_ignored_when_the_query_has_other_content() -> None:
    query = compile_query("Reactのstate")
    assert query.words == '"react" OR "state"'
    assert query.short_runs == ()


def test_a_mixed_query_is_ranked_by_one_trigram_bm25() -> None:
    assert compile_query("config watcher").grams == '"config" OR "watcher"'
    assert compile_query("config セッター関数").grams == (
        '"セッタ" OR "ッター" OR "ター関" OR "ー関数" OR "config"')


def test_the_number_of_terms_is_capped() -> None:
    words = " ".join(f"word{i}" for i in range(1000))
    expression = compile_query(words).words
    assert expression is not None
    assert expression.count('"') == 2 * MAX_TERMS
    grams = compile_query("漢字" * 1000).grams
    assert grams is not None
    assert grams.count(" OR ") < MAX_TERMS
