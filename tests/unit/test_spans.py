"""Match spans: where the query matched in a hit's content, as a client sees them."""

from __future__ import annotations

import sqlite3

from kbmcp_core.porter import stem
from kbmcp_core.spans import match_spans
from tests.unit.test_search import build


def marked(text: str, query: str) -> list[str]:
    return [text[s:e] for s, e in match_spans(text, query)]


def test_words_match_by_their_stem_and_case() -> None:
    text = "Running the app: each Runner runs one release."
    # "runner" has another stem than "run" for Porter, as for the lexical index
    assert marked(text, "how are runs started") == ["Running", "runs"]


def test_stop_words_of_the_query_mark_nothing_unless_they_are_all_it_has() -> None:
    text = "Rotate the keys in the vault."
    assert marked(text, "how do I rotate the keys") == ["Rotate", "keys"]
    assert marked(text, "the") == ["the", "the"]


def test_accents_fold_as_the_lexical_index_folds_them() -> None:
    assert marked("Un café crème.", "cafe creme") == ["café", "crème"]


def test_japanese_matches_as_substrings_and_overlaps_merge() -> None:
    text = "設定ファイルを編集してから、もう一度設定します。ファイル名"
    spans = match_spans(text, "設定ファイル")
    # three-character pieces, as the trigram index matches: 設定し is not one of them
    assert [text[s:e] for s, e in spans] == ["設定ファイル", "ファイル"]
    assert spans[0] == (0, 6)
    assert marked("鍵を回す", "鍵") == ["鍵"]  # shorter than a trigram: the run itself


def test_operators_and_quotes_are_plain_text() -> None:
    assert marked("rollback NEAR the release", '"rollback" AND NEAR(release') == [
        "rollback", "NEAR", "release"]


def test_no_match_gives_no_spans() -> None:
    assert match_spans("Tomatoes need staking.", "kubernetes") == []


def test_the_stemmer_agrees_with_sqlites_porter_tokenizer() -> None:
    """The lexical leg stems with FTS5's porter: a span must mark what it matched."""
    words = """caresses ponies ties caress cats feed agreed plastered bled motoring sing
    conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky
    relational conditional rational valenci hesitanci digitizer conformabli radicalli
    differentli vileli analogousli vietnamization predication operator feudalism
    decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate
    formative formalize electriciti electrical hopeful goodness revival allowance inference
    airliner gyroscopic adjustable defensible irritant replacement adjustment dependent
    adoption homologou communism activate angulariti homologous effective bowdlerize
    probate rate cease controll roll generalizations oscillators running runs ran
    configuration configured indexing indexes searches searching analogy logical""".split()  # noqa: SIM905 - a word block
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    for word in words:
        con.execute("DELETE FROM t")
        con.execute("INSERT INTO t VALUES (?)", (word,))
        assert [r[0] for r in con.execute("SELECT term FROM v")] == [stem(word)], word
    con.close()


def test_each_search_hit_carries_its_matches() -> None:
    searcher, _ = build({"a.md": b"# Keys\nRotating signing keys every quarter\n",
                         "b.md": b"# Garden\nTomatoes and basil\n"})
    from kbmcp_core.search_request import SearchRequest

    hit = searcher.search(SearchRequest("rotate keys", mode="lexical")).results[0]
    assert [hit.content[s:e] for s, e in hit.matches] == ["Rotating", "keys"]
    assert hit.as_dict()["matches"] == [list(m) for m in hit.matches]


def _pieces_char_by_char(text: str) -> list[tuple[int, int, bool]]:
    """The definition of ``word_pieces``: each word cut wherever the script changes."""
    import re

    from kbmcp_core.cjk import is_cjk

    out = []
    for m in re.finditer(r"[^\W_]+", text):
        start, token, begin = m.start(), m.group(), 0
        for i in range(1, len(token) + 1):
            if i == len(token) or is_cjk(token[i]) != is_cjk(token[begin]):
                out.append((start + begin, start + i, is_cjk(token[begin])))
                begin = i
    return out


def test_words_are_cut_where_the_script_changes_as_the_lexical_leg_cuts_them() -> None:
    import random

    from kbmcp_core.spans import word_pieces

    alphabet = "abcÉé09_ -.日本語のテストｶﾀ한국어𠀋\n"
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert word_pieces(text) == _pieces_char_by_char(text), text
    assert marked("Reactのフックを使うuseEffect", "useEffect フック") == ["フック", "useEffect"]


def test_a_snippet_never_cuts_a_match_in_two() -> None:
    from kbmcp_cli.highlight import snippet

    content = "x" * 190 + " documentation follows here and more text after it"
    spans = match_spans(content, "documentation")
    out = snippet(content, spans, width=200)
    assert "⟦documentation⟧" in out
    assert "⟦documen" not in out.replace("⟦documentation⟧", "")
