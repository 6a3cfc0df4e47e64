"""Which documents hold a query's excluded terms (``-term``), asked of the keyword index.

A query's exclusions (``kbmcp_core.query_syntax``) leave out every document that holds one
of them, from both search legs: the searcher asks the store for those documents here and
keeps them out of the paths both legs may return. A term is matched the way the keyword
leg matches it, on the title, heading trail and text of every chunk:

* a term of Latin (or any non-CJK) words: the words as one phrase on the stemmed word
  index (``-deploy`` also leaves out "deploys" and "deploying"; ``-x-ray`` the phrase
  "x ray"); SQLite FTS5 ``fts_words``, PostgreSQL ``phraseto_tsquery('english')``;
* a term with Chinese, Japanese or Korean text: a substring (the trigram index from three
  characters on, a scan below), case-folded; SQLite ``fts_grams``, PostgreSQL ``ILIKE``
  on the trigram-indexed text.

Every term reaches the database as a bound parameter, never as query syntax.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.lexical import quote
from kbmcp_adapters.store.pg_lexical import HAYSTACK
from kbmcp_adapters.store.tables import FTS_GRAMS, FTS_WORDS, JOIN_DOCUMENTS, PG_LEXICAL
from kbmcp_core.cjk import is_cjk

__all__ = ["pg_paths_containing", "sqlite_paths_containing"]

_WORD = re.compile(r"[^\W_]+")
_SHORT_HAYSTACK = ("documents.title || ' ' || coalesce(chunks.heading, '') || ' ' "
                   "|| coalesce(chunks.content, '')")


def _is_cjk_term(term: str) -> bool:
    return any(is_cjk(c) for c in term)


def _phrase(term: str) -> str | None:
    """The term's words as one phrase, or None when it holds no word at all."""
    words = _WORD.findall(term)
    return " ".join(words) if words else None


def sqlite_paths_containing(conn: Connection, terms: Collection[str]) -> set[str]:
    """Paths of the documents holding any of ``terms``, from the FTS5 tables."""
    found: set[str] = set()
    for term in terms:
        needle = " ".join(term.split())
        if _is_cjk_term(needle):
            if len(needle) >= 3:
                sql = (f"SELECT DISTINCT documents.path FROM {FTS_GRAMS} JOIN chunks ON "
                       f"chunks.id = {FTS_GRAMS}.rowid {JOIN_DOCUMENTS} "
                       f"WHERE {FTS_GRAMS} MATCH :t")
                params = {"t": quote(needle)}
            else:
                sql = (f"SELECT DISTINCT documents.path FROM chunks {JOIN_DOCUMENTS} "
                       f"WHERE instr(lower({_SHORT_HAYSTACK}), lower(:t)) > 0")
                params = {"t": needle}
        else:
            phrase = _phrase(needle)
            if phrase is None:
                continue
            sql = (f"SELECT DISTINCT documents.path FROM {FTS_WORDS} JOIN chunks ON "
                   f"chunks.id = {FTS_WORDS}.rowid {JOIN_DOCUMENTS} "
                   f"WHERE {FTS_WORDS} MATCH :t")
            params = {"t": quote(phrase)}
        found.update(str(p) for p in conn.execute(text(sql), params).scalars())
    return found


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def pg_paths_containing(conn: Connection, terms: Collection[str]) -> set[str]:
    """Paths of the documents holding any of ``terms``, from the PostgreSQL lexical table."""
    found: set[str] = set()
    source = f"FROM {PG_LEXICAL} AS lx JOIN chunks ON chunks.id = lx.id {JOIN_DOCUMENTS}"
    for term in terms:
        needle = " ".join(term.split())
        if _is_cjk_term(needle):
            sql = f"SELECT DISTINCT documents.path {source} WHERE {HAYSTACK} ILIKE :t"
            params = {"t": _like(needle)}
        else:
            phrase = _phrase(needle)
            if phrase is None:
                continue
            sql = (f"SELECT DISTINCT documents.path {source} "
                   "WHERE lx.words @@ phraseto_tsquery('english', :t)")
            params = {"t": phrase}
        found.update(str(p) for p in conn.execute(text(sql), params).scalars())
    return found
