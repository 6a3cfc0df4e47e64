"""One CJK table (kbmcp_core.cjk): every reader of it classifies a character alike."""

from __future__ import annotations

import pytest

from kbmcp_adapters.store.lexical import compile_query
from kbmcp_core.cjk import is_cjk, readable_share
from kbmcp_core.diversity import word_similarity
from kbmcp_core.spans import match_spans, query_terms, word_pieces

#: The code points two tables once disagreed on: the iteration mark 々, a Katakana
#: phonetic extension, a fullwidth Latin A and an ideograph of Extension B.
DISPUTED = ["\u3005", "\u31f0", "\uff21", "\U0002000b"]


@pytest.mark.parametrize("char", DISPUTED)
def test_every_reader_of_the_table_counts_these_as_cjk(char: str) -> None:
    run = char * 3
    assert is_cjk(char)
    assert word_pieces(f"ab {run} cd") == [(0, 2, False), (3, 6, True), (7, 9, False)]
    assert query_terms(run).substrings == (run,) and not query_terms(run).stems
    assert match_spans(f"x {run} y", run) == [(2, 5)]
    lexical = compile_query(run)
    assert lexical.has_cjk and lexical.words is None and lexical.grams is not None
    assert readable_share(run) == 0.0
    assert readable_share(f"ab{char}") == pytest.approx(2 / 3)
    # MMR's word similarity compares CJK runs by their pairs of characters, not as words
    assert word_similarity({1: run, 2: char * 2})(1, 2) == 1.0


@pytest.mark.parametrize("char", ["a", "\u00e9", "7", "\u0416"])
def test_and_latin_or_cyrillic_as_readable_words(char: str) -> None:
    assert not is_cjk(char)
    assert word_pieces(f"{char}{char}") == [(0, 2, False)]
    assert not compile_query(f"{char}{char}q").has_cjk
    assert readable_share(char) == 1.0
    assert word_similarity({1: char * 3, 2: char * 2})(1, 2) == 0.0
