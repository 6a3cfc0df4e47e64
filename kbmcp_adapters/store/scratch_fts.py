"""Empty in-memory twins of the FTS5 tables, one set per thread: how a table's tokenizer
cuts a term (``tokens``) and which of a few rows hold each term (``holders``), read on
those rows alone instead of on the whole index (``ranking``'s coverage weight, the pooled
legs, a filter's sample in ``keyword_filter``)."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from kbmcp_adapters.store.lexical import quote
from kbmcp_adapters.store.tables import FTS_GRAMS, FTS_WORDS

__all__ = ["TOKENIZERS", "holders", "scratch_conn", "tokens"]
#: The tokenizers of the FTS5 tables (migration 0001); the scratch tables must match.
TOKENIZERS = {FTS_WORDS: "porter unicode61 remove_diacritics 2", FTS_GRAMS: "trigram"}


class _Scratch(threading.local):
    """One in-memory SQLite database per thread with empty twins of the FTS5 tables."""

    conn: sqlite3.Connection | None = None


_scratch = _Scratch()


def scratch_conn() -> sqlite3.Connection:
    conn = _scratch.conn
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        for table, tokenizer in TOKENIZERS.items():
            conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(title, heading, body, "
                         f"tokenize = '{tokenizer}')")
            conn.execute(f"CREATE VIRTUAL TABLE {table}_tokens USING fts5vocab({table}, instance)")
        _scratch.conn = conn
    return conn


@functools.lru_cache(maxsize=4096)
def tokens(table: str, term: str) -> tuple[str, ...]:
    """The distinct tokens FTS5 ``table``'s tokenizer makes of ``term`` (nothing is kept)."""
    conn = scratch_conn()
    conn.execute("BEGIN")
    try:
        conn.execute(f"INSERT INTO {table}(rowid, title, heading, body) VALUES (1, '', '', ?)",
                     (term,))
        found = conn.execute(f"SELECT DISTINCT term FROM {table}_tokens").fetchall()
    finally:
        conn.execute("ROLLBACK")
    return tuple(sorted(str(t) for (t,) in found))


def holders(table: str, terms: Sequence[str], rows: Sequence[tuple[Any, ...]]
            ) -> list[set[int]]:
    """For each term, which of ``rows`` (rowid, title, heading, body) it matches."""
    conn = scratch_conn()
    conn.execute("BEGIN")
    try:
        conn.executemany(
            f"INSERT INTO {table}(rowid, title, heading, body) VALUES (?, ?, ?, ?)", rows)
        return [
            {int(r) for (r,) in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (quote(term),))}
            for term in terms
        ]
    except sqlite3.OperationalError:
        return [set() for _ in terms]
    finally:
        conn.execute("ROLLBACK")
