"""The query syntax parser (decision 0035): phrases, ``-term``, and the errors that name
the character."""

from __future__ import annotations

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.query_syntax import MAX_EXCLUDED, parse_query


def test_a_plain_query_is_handed_over_unchanged() -> None:
    for text in ["how do I undo a bad deploy", "OTM-4471", "x-ray vision",
                 "valgrind --track-origins=yes", "temperature -5 degrees", "a -> b",
                 "設定ファイルの更新", "NEAR(a b) OR c:*", "trailing-"]:
        parsed = parse_query(text)
        assert parsed.text == text
        assert parsed.excluded == ()
        assert not parsed.has_syntax


def test_hyphens_inside_words_and_double_dashes_stay_terms() -> None:
    parsed = parse_query("x-ray --track-origins kb-mcp -5 ->")
    assert parsed.terms == ("x-ray", "--track-origins", "kb-mcp", "-5", "->")
    assert parsed.excluded == ()


def test_a_one_letter_option_is_a_term_not_an_exclusion() -> None:
    """A real question of the no-answer sets (tests/fixtures/no-answer/faq.yml)."""
    text = "What does the -T flag of ssh do"
    parsed = parse_query(text)
    assert parsed.excluded == ()
    assert parsed.text == text
    assert "-T" in parsed.terms
    assert parse_query("ls -la -v").terms == ("ls", "-v")
    assert parse_query("ls -la -v").excluded == ("la",)  # two letters or more exclude
    assert parse_query('ls "-la"').phrases == ("-la",)  # ... unless quoted


def test_a_dash_before_a_word_at_a_token_start_excludes_it() -> None:
    parsed = parse_query("deploy rollback -staging -設定")
    assert parsed.terms == ("deploy", "rollback")
    assert parsed.excluded == ("staging", "設定")
    assert parsed.text.split() == ["deploy", "rollback"]
    assert parsed.applied() == {"terms": ["deploy", "rollback"], "phrases": [],
                                "excluded": ["staging", "設定"]}


def test_an_excluded_word_keeps_its_inner_hyphens() -> None:
    assert parse_query("scan -x-ray").excluded == ("x-ray",)


def test_phrases_keep_their_quotes_in_the_text_the_legs_get() -> None:
    parsed = parse_query('"key rotation" schedule -"dry run"')
    assert parsed.phrases == ("key rotation",)
    assert parsed.terms == ("schedule",)
    assert parsed.excluded == ("dry run",)
    assert parsed.text.rstrip() == '"key rotation" schedule'
    assert parsed.has_syntax


def test_a_dash_inside_a_phrase_is_text() -> None:
    parsed = parse_query('"-v flag" verbose')
    assert parsed.phrases == ("-v flag",)
    assert parsed.excluded == ()


def test_repeated_exclusions_are_applied_once() -> None:
    assert parse_query("alpha -beta -beta").excluded == ("beta",)


@pytest.mark.parametrize(("text", "terms"), [
    ('key "rotation schedule', ("key", "rotation", "schedule")),
    ('"', ()),
    ('ok "" then', ("ok", "then")),
    ("deploy - staging", ("deploy", "-", "staging")),
    ("-", ("-",)),
    ("deploy -", ("deploy", "-")),
    ('a -"unclosed', ("a", "unclosed")),
    ('a 12" pipe', ("a", "12", "pipe")),
])  # fmt: skip
def test_stray_marks_of_natural_text_are_read_as_text(text: str,
                                                      terms: tuple[str, ...]) -> None:
    """A question cut short, an inch mark or prose's dash is never refused: no phrase, no
    exclusion, and the legs get the query exactly as typed (it ranks as it always did)."""
    parsed = parse_query(text)
    assert (parsed.terms, parsed.phrases, parsed.excluded) == (terms, (), ())
    assert parsed.text == text
    assert not parsed.has_syntax


def test_a_stray_quote_after_a_closed_phrase_keeps_the_phrase() -> None:
    parsed = parse_query('"dry run" then 5" more')
    assert parsed.phrases == ("dry run",)
    assert parsed.terms == ("then", "5", "more")


@pytest.mark.parametrize(("text", "position", "what"), [
    ("-staging", 1, "the query only excludes"),
    ('  -ab -"b c"', 3, "the query only excludes"),
    ('-ab - "', 1, "the query only excludes"),
])  # fmt: skip
def test_bad_syntax_names_the_character(text: str, position: int, what: str) -> None:
    with pytest.raises(InvalidQuery) as exc:
        parse_query(text)
    assert exc.value.code == "invalid_argument"
    message = str(exc.value)
    assert what in message
    assert f"at character {position}:" in message


def test_too_many_exclusions_are_refused() -> None:
    text = "keep " + " ".join(f"-w{i}x" for i in range(MAX_EXCLUDED + 1))
    with pytest.raises(InvalidQuery, match="exclusions"):
        parse_query(text)
    assert len(parse_query("keep " + " ".join(f"-w{i}x" for i in range(MAX_EXCLUDED))
                           ).excluded) == MAX_EXCLUDED
