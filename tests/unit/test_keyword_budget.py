"""Which expression SQLite's keyword leg scores on a large index (decision 0058): the whole
query below the budget, else its rarest words."""

from __future__ import annotations

from kbmcp_adapters.store.keyword_budget import Narrowed, TermCounts, narrow
from kbmcp_adapters.store.lexical import Terms

WORDS = Terms((), ("steps", "restore", "firewall", "old"))
DF = {"steps": 700_000, "restore": 290_000, "firewall": 9_000, "old": 590_000}


def test_an_index_within_the_budget_scores_the_whole_query() -> None:
    assert narrow(WORDS, DF, total=20_000, limit=50, budget=20_000) is None


def test_words_holding_fewer_matches_than_the_budget_together_score_the_whole_query() -> None:
    few = {w: 4_000 for w in WORDS.optional}
    assert narrow(WORDS, few, total=1_000_000, limit=50, budget=20_000) is None


def test_over_the_budget_the_rarest_words_that_fit_are_scored() -> None:
    df = {"steps": 700_000, "restore": 12_000, "firewall": 6_000, "old": 590_000}
    assert narrow(WORDS, df, total=1_000_000, limit=50, budget=20_000) == Narrowed(
        Terms((), ("firewall", "restore")), sampled=False)


def test_when_no_word_fits_the_rarest_is_scored_on_a_sample() -> None:
    big = {w: n + 100_000 for w, n in DF.items()}
    assert narrow(WORDS, big, total=1_000_000, limit=50, budget=20_000) == Narrowed(
        Terms((), ("firewall",)), sampled=True)


def test_rare_words_holding_fewer_matches_than_asked_take_the_next_on_a_sample() -> None:
    df = {"steps": 700_000, "restore": 290_000, "firewall": 10, "old": 590_000}
    assert narrow(WORDS, df, total=1_000_000, limit=50, budget=20_000) == Narrowed(
        Terms((), ("firewall", "restore")), sampled=True)


def test_a_phrase_or_a_word_of_unknown_count_scores_the_whole_query() -> None:
    phrase = Terms(("restore the firewall",), ("old",))
    assert narrow(phrase, DF, total=1_000_000, limit=50, budget=20_000) is None
    unknown = {w: n for w, n in DF.items() if w != "old"}
    assert narrow(WORDS, unknown, total=1_000_000, limit=50, budget=20_000) is None


def test_counts_are_forgotten_when_the_table_changes() -> None:
    counts = TermCounts()
    table = ("sqlite:///index.db", "fts_words")
    counts.keep(table, b"state 1", {"lantern": 3})
    assert counts.known(table, b"state 1", ["lantern", "harbor"]) == {"lantern": 3}
    assert counts.known(table, b"state 2", ["lantern"]) == {}
    assert counts.known(("sqlite:///other.db", "fts_words"), b"state 1", ["lantern"]) == {}
