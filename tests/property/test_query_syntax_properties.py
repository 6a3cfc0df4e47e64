"""Properties of the query syntax parser (``kbmcp_core.query_syntax``, decision 0035).

Whatever the text: the parser either names a character of it in an ``invalid_argument``
error, or hands the legs a text of the same length in which nothing excludes any more;
a query built from terms, phrases and exclusions parses back into exactly those; and a
query with no quote and no token starting with ``-`` is handed over unchanged.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.query_syntax import parse_query
from tests.property.support import budget, hostile_text

_AT = re.compile(r"at character (\d+): ")

#: Words as people type them: letters, digits, inner hyphens, dots, CJK.
word = st.from_regex(r"[A-Za-z設定手順][A-Za-z0-9設定手順._-]{0,11}", fullmatch=True)
#: A plain term: a word, or '--option', '-5', '->' or a one-letter option ('-T').
term = word | st.from_regex(r"--[a-z][a-z-]{0,8}|-[0-9]{1,3}|->|-[A-Za-z]", fullmatch=True)
phrase = st.lists(word, min_size=1, max_size=3).map(" ".join)
space = st.sampled_from([" ", "  ", "\t", "\n", "\u3000"])


@settings(max_examples=budget(800))
@given(text=hostile_text() | st.text(alphabet=' "-ab\t設', max_size=30))
def test_any_text_parses_or_names_a_character_of_it(text: str) -> None:
    try:
        parsed = parse_query(text)
    except InvalidQuery as exc:
        assert exc.code == "invalid_argument"
        found = _AT.search(str(exc))
        assert found, str(exc)
        assert 1 <= int(found.group(1)) <= len(text)
        return
    assert len(parsed.text) == len(text)
    again = parse_query(parsed.text)
    assert again.excluded == ()
    assert (again.terms, again.phrases) == (parsed.terms, parsed.phrases)
    if not parsed.excluded:
        assert parsed.text == text


@settings(max_examples=budget(300))
@given(
    parts=st.lists(st.one_of(term.map(lambda t: ("term", t)),
                             phrase.map(lambda p: ("phrase", p)),
                             word.filter(lambda w: len(w) > 1).map(lambda w: ("excluded", w)),
                             phrase.map(lambda p: ("excluded phrase", p))),
                   min_size=1, max_size=8),
    gap=space,
)
def test_a_built_query_parses_back_into_its_parts(parts: list[tuple[str, str]],
                                                  gap: str) -> None:
    written = {"term": "{}", "phrase": '"{}"', "excluded": "-{}", "excluded phrase": '-"{}"'}
    text = gap.join(written[kind].format(value) for kind, value in parts)
    # a term of marks alone (``->``) finds nothing, so it is no search of its own
    positive = [v for k, v in parts
                if k == "phrase" or (k == "term" and any(c.isalnum() for c in v))]
    if not positive and any(k.startswith("excluded") for k, _ in parts):
        try:
            parse_query(text)
        except InvalidQuery as exc:
            assert "only excludes" in str(exc)
            return
        raise AssertionError(f"{text!r} only excludes and was accepted")
    parsed = parse_query(text)
    assert parsed.terms == tuple(v for k, v in parts if k == "term")
    assert parsed.phrases == tuple(v for k, v in parts if k == "phrase")
    excluded = [v for k, v in parts if k.startswith("excluded")]
    assert parsed.excluded == tuple(dict.fromkeys(excluded))


@settings(max_examples=budget(800))
@given(text=st.text(max_size=60).filter(
    lambda t: '"' not in t and not any(tok.startswith("-") for tok in t.split())))
def test_a_query_without_quotes_or_leading_hyphens_is_unchanged(text: str) -> None:
    parsed = parse_query(text)
    assert parsed.text == text
    assert parsed.excluded == () and parsed.phrases == ()
