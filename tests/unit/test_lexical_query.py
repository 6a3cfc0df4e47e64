"""The FTS5 query compiler turns any user text into a safe expression (or nothing)."""

from __future__ import annotations

import re

import pytest

from kbmcp_adapters.store.lexical import (
    MAX_TERMS,
    compile_grams,
    compile_query,
    compile_words,
    short_cjk_runs,
)

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
    assert_safe(compile_words(text))
    assert_safe(compile_grams(text))
    for run in short_cjk_runs(text):
        assert 1 <= len(run) <= 2


def test_operators_typed_by_the_user_become_quoted_words() -> None:
    assert compile_words("NEAR(watcher config)") == '"near" OR "watcher" OR "config"'
    assert compile_words("a* OR b:c") == '"b" OR "c"'
    assert compile_words("title:secret") == '"title" OR "secret"'


def test_a_natural_question_keeps_its_content_words_or_joined() -> None:
    assert compile_words("how do I configure the watcher?") == '"configure" OR "watcher"'


def test_a_query_of_only_stop_words_still_searches_them() -> None:
    assert compile_words("to be or not to be") == '"to" OR "be" OR "or" OR "not"'


def test_a_quoted_phrase_is_required_and_other_words_rank() -> None:
    assert compile_words('"run the tests"') == '"run the tests"'
    assert compile_words('"run the tests" quickly') == (
        '"run the tests" AND ("run the tests" OR "quickly")'
    )


def test_an_unbalanced_quote_is_plain_text() -> None:
    assert compile_words('"watcher config') == '"watcher" OR "config"'
    assert compile_words('say "hello" and "bye') == '"hello" AND ("hello" OR "say" OR "bye")'


def test_nothing_searchable_compiles_to_none() -> None:
    for text in ("", "   ", "?!.", "🙂🙂", "\x00\x00", "x" * 10_000):
        assert compile_words(text) is None
        assert compile_grams(text) is None


def test_cjk_runs_become_overlapping_trigrams() -> None:
    assert compile_grams("セッター関数") == '"セッタ" OR "ッター" OR "ター関" OR "ー関数"'
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
    assert compile_grams("config watcher") == '"config" OR "watcher"'
    assert compile_grams("config セッター関数") == (
        '"セッタ" OR "ッター" OR "ター関" OR "ー関数" OR "config"')


def test_the_number_of_terms_is_capped() -> None:
    words = " ".join(f"word{i}" for i in range(1000))
    expression = compile_words(words)
    assert expression is not None
    assert expression.count('"') == 2 * MAX_TERMS
    grams = compile_grams("漢字" * 1000)
    assert grams is not None
    assert grams.count(" OR ") < MAX_TERMS
