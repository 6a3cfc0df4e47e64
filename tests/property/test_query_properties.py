"""Properties of search queries: whatever a user or a client types, search answers.

Any text (FTS5 operators, quotes, NUL, lone surrogates, CJK, only punctuation, very long)
through ``KnowledgeBase.search`` gives a ``SearchResponse`` or, for a blank or over-long
query or one whose phrases and exclusions do not parse (decision 0035) only, an
``InvalidQuery`` (code ``invalid_argument``) — never another exception; and
the lexical compiler's output is always valid FTS5 on a real SQLite table.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.store.lexical import compile_query
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.query_syntax import parse_query
from kbmcp_core.search import SearchResponse
from kbmcp_core.search_request import MAX_QUERY_CHARS
from tests.property.support import (
    SYNTAX,
    budget,
    fragments,
    hostile_text,
    open_kb,
    recording,
    sanitized,
    write_tree,
)

#: A word that appears in exactly one document, and that document.
UNIQUE_WORDS = {
    "rotation": "guides/keys.md",
    "vault": "guides/keys.md",
    "tomatoes": "notes/garden.md",
    "basil": "notes/garden.md",
    "telemetry": "ops/near-and-not.md",
    "calibration": "ops/near-and-not.md",
}
CORPUS = {
    "guides/keys.md": "---\ntitle: Signing key rotation\ntags: [ops]\n---\n# Keys\n\n"
                      "Key rotation happens every 90 days with the vault command.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need staking in June; basil likes the sun.\n",
    "ops/near-and-not.md": "# NEAR and NOT\n\nTelemetry calibration: values near zero are "
                          "not errors (AND, OR, NEAR are just words here).\n",
    "notes/日本語.md": "# 設定\n\n設定ファイルの更新手順について説明します。Reactのstate更新。\n",
}  # fmt: skip
MODES = ("lexical", "hybrid")


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
       ) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("query-kb")
    write_tree(root, CORPUS)
    opened = open_kb(root, embedder)
    summary = opened.index()
    assert summary.added == len(CORPUS), summary.warnings
    yield opened
    opened.close()


def check_search(kb: KnowledgeBase, query: str, mode: str, **filters: Any
                 ) -> SearchResponse | None:
    """Search and check the property; the response, or None for an allowed refusal."""
    blank_or_long = len(query) > MAX_QUERY_CHARS or not sanitized(query).strip()
    with recording("kbmcp_adapters") as log:
        try:
            response = kb.search(query, mode=mode, limit=20, **filters)
        except InvalidQuery as exc:
            assert exc.code == "invalid_argument"
            assert blank_or_long or filters or bad_syntax(query), \
                f"a query with text was refused: {exc}"
            return None
        problems = [r.getMessage() for r in log.take()]
    assert isinstance(response, SearchResponse)
    assert not problems, problems  # e.g. "lexical query ... rejected by FTS5"
    json.dumps(response.as_dict(), ensure_ascii=False).encode("utf-8")  # can go on the wire
    assert len(response.results) <= 20
    for hit in response.results:
        assert hit.path in CORPUS
    assert not blank_or_long or len(query) <= MAX_QUERY_CHARS
    return response


def bad_syntax(query: str) -> bool:
    """Whether the query's phrases and exclusions do not parse (a query that only excludes...),
    once NUL and lone surrogates are the spaces search makes of them."""
    try:
        parse_query(re.sub("[\x00\ud800-\udfff]", " ", query))
    except InvalidQuery:
        return True
    return False


@settings(max_examples=budget(400))
@given(query=hostile_text(tuple(UNIQUE_WORDS)))
def test_any_query_gets_results_or_invalid_argument_lexical(kb: KnowledgeBase, query: str
                                                             ) -> None:
    check_search(kb, query, "lexical")


@settings(max_examples=budget(250))
@given(query=hostile_text(tuple(UNIQUE_WORDS)))
def test_any_query_gets_results_or_invalid_argument_hybrid(kb: KnowledgeBase, query: str
                                                            ) -> None:
    check_search(kb, query, "hybrid")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["\ud800", "watcher \udfff config", "\x00", " \x01 ",
                                   "x" * MAX_QUERY_CHARS, "x" * (MAX_QUERY_CHARS + 1)])
def test_edge_queries(kb: KnowledgeBase, query: str, mode: str) -> None:
    check_search(kb, query, mode)


filter_text = st.one_of(st.sampled_from(["ops", "OPS", "guides/*", "!notes/**", "*", "[",
                                          "2026-02-10"]), fragments())
filter_lists = st.lists(filter_text, max_size=3) | st.builds(lambda n: ["ops"] * n,
                                                             st.integers(60, 70))
search_filters = st.fixed_dictionaries({}, optional={
    "path_globs": filter_lists, "tags_any": filter_lists, "tags_all": filter_lists,
    "category": filter_text, "topic": filter_text,
    "date_from": filter_text | st.dates().map(str), "date_to": filter_text | st.dates().map(str),
    "chunks_per_document": st.integers(-1, 12),
})  # fmt: skip


@settings(max_examples=budget(250))
@given(query=st.sampled_from(sorted(UNIQUE_WORDS)) | hostile_text(), filters=search_filters)
def test_any_filters_get_results_or_invalid_argument(kb: KnowledgeBase, query: str,
                                                     filters: dict[str, Any]) -> None:
    check_search(kb, query, "lexical", **filters)


#: Junk that is not kb-mcp's own syntax (no quote, no token that starts with '-').
#: (NUL and lone surrogates count as the spaces search turns them into.)
NOISE = fragments().filter(
    lambda f: '"' not in f and len(f.split()) <= 3
    and not any(t.startswith("-") for t in re.sub("[\x00\ud800-\udfff]", " ", f).split()))


@settings(max_examples=budget(250))
@given(
    word=st.sampled_from(sorted(UNIQUE_WORDS)),
    before=st.lists(NOISE, max_size=5),
    after=st.lists(NOISE, max_size=5),
    upper=st.booleans(),
)
def test_operators_and_junk_around_a_word_never_hide_its_document(
    kb: KnowledgeBase, word: str, before: list[str], after: list[str], upper: bool
) -> None:
    """Typed syntax is literal: a word still finds its document whatever surrounds it."""
    query = " ".join([*before, word.upper() if upper else word, *after])
    response = check_search(kb, query, "lexical")
    assert response is not None
    assert UNIQUE_WORDS[word] in {h.path for h in response.results}, query


# -- the compiler against a real FTS5 table ---------------------------------------------------
@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """The two lexical tables with the index's tokenizers (migrations/versions/0001)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE fts_words USING fts5(title, heading, body, "
                 "tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE fts_grams USING fts5(title, heading, body, "
                 "tokenize = 'trigram')")
    for table in ("fts_words", "fts_grams"):
        for text in CORPUS.values():
            conn.execute(f"INSERT INTO {table} VALUES ('t', 'h', ?)", (text,))
    yield conn
    conn.close()


def assert_matches_run(conn: sqlite3.Connection, text: str) -> None:
    compiled = compile_query(text)
    statements = [("fts_words", compiled.words), ("fts_grams", compiled.grams)]
    statements += [("fts_words", t) for t in compiled.word_terms]
    statements += [("fts_grams", t) for t in compiled.gram_terms]
    for table, expression in statements:
        if expression is None:
            continue
        try:
            conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?",
                         (expression,)).fetchall()
        except (sqlite3.Error, UnicodeError) as exc:
            raise AssertionError(f"{table} MATCH {expression!r} failed: {exc}") from exc
    for run in compiled.short_runs:  # bound into instr() by the substring leg
        run.encode("utf-8")
        assert 1 <= len(run) <= 2


@settings(max_examples=budget(1500))
@given(text=hostile_text(tuple(UNIQUE_WORDS))
       | st.lists(st.sampled_from(SYNTAX), max_size=30).map("".join))
def test_compiled_lexical_query_is_valid_fts5(fts: sqlite3.Connection, text: str) -> None:
    assert_matches_run(fts, text)
