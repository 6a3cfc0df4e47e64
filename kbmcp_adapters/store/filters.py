"""A search's document filters (``DocumentFilter``) as one SQL condition on ``documents``.

SQLite gets two Python functions on the connection (``register_functions``):
``kb_fnmatch`` is ``fnmatch.fnmatchcase`` itself and ``kb_lower`` is ``str.lower``, so a
glob or a tag compares exactly as ``DocumentFilter.matches`` says. PostgreSQL runs no
Python: a glob becomes an anchored regular expression (``glob_regex``) and ``lower()``
folds case (the database's locale decides for letters outside ASCII).

``FilterCache`` keeps the answers of recent filters on a SQLite index for as long as
nothing was committed to it, so a search repeating a filter does not evaluate it again,
and the keyword leg reads the filter's chunk ids (``keyword_filter.Within``) instead of
its paths.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sqlite3
import threading
from array import array
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kbmcp_adapters.store import field_rows
from kbmcp_adapters.store.keyword_filter import Within
from kbmcp_core.models import DocumentFilter

__all__ = ["FilterCache", "Kept", "glob_regex", "prefix_bounds", "register_functions", "where"]

#: A ``FilterCache`` holds at most this many chunk ids over all its filters (the least
#: recently used filters go first); a filter keeping more is not kept. About 28 bytes an
#: id (8 in the array, about 20 as the keyword leg's JSON): a folder, a tag and a year of
#: a million chunks held together (decision 0058's addendum on the keyword leg).
CACHE_MAX_IDS = 500_000
#: ... and at most this many filters.
CACHE_MAX_FILTERS = 32


@dataclass(frozen=True, slots=True)
class Kept:
    """What one filter keeps: document paths, and their chunks as the keyword leg reads
    them (``within``: the ids ascending, in an array of 8 bytes an id, and as JSON)."""

    paths: frozenset[str]
    within: Within

    @property
    def chunk_ids(self) -> Sequence[int]:
        return self.within.sorted_ids

    @classmethod
    def read(cls, paths: str, chunk_ids: str) -> Kept:
        """From the JSON lists SQLite made (``json_group_array``): the paths, and the chunk
        ids ascending."""
        ids = array("q", json.loads(chunk_ids))
        return cls(frozenset(json.loads(paths)), Within(chunk_ids, ids))


class FilterCache:
    """Recent filters' answers on one SQLite file, valid while it has seen no commit.

    The generation of the file is its identity (device, inode: a file put in its place is
    another index) and ``PRAGMA data_version`` read on a connection of the cache's own,
    which changes with every commit made by any other connection, of this process or
    another. A caller reads ``generation()`` before it reads the database and files the
    answer under that generation: a commit that lands in between makes the next
    generation differ, so an answer is never used after a change. ``generation()`` is
    None (nothing is kept) when the file cannot be opened that way."""

    def __init__(self, database: Path | None, *, max_ids: int = CACHE_MAX_IDS,
                 max_filters: int = CACHE_MAX_FILTERS) -> None:
        self._database = database
        self._max_ids, self._max_filters = max_ids, max_filters
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._generation: object = None
        self._by_filter: OrderedDict[DocumentFilter, Kept] = OrderedDict()
        self._by_paths: dict[frozenset[str], Kept] = {}
        self._ids = 0

    def generation(self) -> object:
        """A token equal between two calls only when nothing was committed in between."""
        if self._database is None:
            return None
        with self._lock:
            try:
                st = os.stat(self._database)
                identity = (st.st_dev, st.st_ino)
                if self._conn is None or identity != self._identity:
                    self._reopen(identity)
                assert self._conn is not None
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except (OSError, sqlite3.Error):
                self._drop()
                return None
            generation = (identity, int(version))
            if generation != self._generation:
                self._by_filter.clear()
                self._by_paths.clear()
                self._ids, self._generation = 0, generation
            return generation

    def kept(self, spec: DocumentFilter, generation: object) -> Kept | None:
        with self._lock:
            found = self._by_filter.get(spec) if generation == self._generation else None
            if found is not None:
                self._by_filter.move_to_end(spec)
            return found

    def chunk_ids(self, paths: Collection[str], generation: object) -> Sequence[int] | None:
        """The chunk ids of ``paths`` when they are what a kept filter kept."""
        key = paths if isinstance(paths, frozenset) else frozenset(paths)
        with self._lock:
            found = self._by_paths.get(key) if generation == self._generation else None
            return None if found is None else found.chunk_ids

    def within(self, paths: Collection[str], generation: object) -> Within | None:
        """The chunks of ``paths`` as the keyword leg reads them, when they are what a kept
        filter kept."""
        key = paths if isinstance(paths, frozenset) else frozenset(paths)
        with self._lock:
            found = self._by_paths.get(key) if generation == self._generation else None
            return None if found is None else found.within

    def keep(self, spec: DocumentFilter, generation: object, kept: Kept) -> None:
        if generation is None or len(kept.chunk_ids) > self._max_ids:
            return
        with self._lock:
            if generation != self._generation or spec in self._by_filter:
                return
            self._by_filter[spec] = kept
            self._by_paths[kept.paths] = kept
            self._ids += len(kept.chunk_ids)
            while self._ids > self._max_ids or len(self._by_filter) > self._max_filters:
                _, old = self._by_filter.popitem(last=False)
                self._ids -= len(old.chunk_ids)
                if not any(k.paths == old.paths for k in self._by_filter.values()):
                    self._by_paths.pop(old.paths, None)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _reopen(self, identity: tuple[int, int]) -> None:
        self._drop()
        assert self._database is not None
        self._conn = sqlite3.connect(f"file:{quote(str(self._database))}?mode=ro", uri=True,
                                     check_same_thread=False, isolation_level=None)
        self._identity = identity

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._identity, self._generation = None, None, None
        self._by_filter.clear()
        self._by_paths.clear()
        self._ids = 0


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _fnmatch(name: object, pattern: object) -> bool:
    return isinstance(name, str) and isinstance(pattern, str) and fnmatch.fnmatchcase(
        name, pattern)


def register_functions(dbapi_connection: Any) -> None:
    """``kb_fnmatch(path, pattern)`` and ``kb_lower(text)`` on an sqlite3 connection."""
    dbapi_connection.create_function("kb_fnmatch", 2, _fnmatch, deterministic=True)
    dbapi_connection.create_function("kb_lower", 1, _lower, deterministic=True)


#: ``str.lower`` in SQLite: its own ``lower()`` for ASCII text (same result, no call into
#: Python), ``kb_lower`` for the rest (SQLite folds ASCII letters only).
_SQLITE_LOWER = ("(CASE WHEN length({0}) = length(CAST({0} AS BLOB)) THEN lower({0}) "
                 "ELSE kb_lower({0}) END)")


def where(spec: DocumentFilter, postgresql: bool) -> tuple[str, dict[str, object]]:
    """(SQL condition on ``documents``, its parameters); ``1 = 1`` when nothing filters."""
    params: dict[str, object] = {}
    clauses: list[str] = []
    lower = "lower({})" if postgresql else _SQLITE_LOWER

    def glob(i: str, pattern: str, ranged: bool = False) -> str:
        params[i] = glob_regex(pattern) if postgresql else pattern
        if postgresql:
            return f"documents.path ~ :{i}"
        test = f"kb_fnmatch(documents.path, :{i})"
        bounds = prefix_bounds(pattern) if ranged else None
        if bounds is None:
            return test
        # the paths under the glob's literal start, read from the unique index on path:
        # the glob tested on those rows only, not on every document (0058's addendum)
        params[f"{i}_low"], params[f"{i}_high"] = bounds
        return f"(documents.path >= :{i}_low AND documents.path < :{i}_high AND {test})"

    if spec.includes:
        tests = [glob(f"g{n}", g, ranged=True) for n, g in enumerate(spec.includes)]
        clauses.append("(" + " OR ".join(tests) + ")")
    clauses += [f"NOT {glob(f'x{n}', g)}" for n, g in enumerate(spec.excludes)]
    if postgresql:
        tags = "json_array_elements_text(CAST(documents.tags AS json)) AS t(value)"
        wanted = ("SELECT lower(q.value) "
                  "FROM json_array_elements_text(CAST(:{0} AS json)) AS q(value)")
    else:
        tags = "json_each(documents.tags) AS t"
        wanted = "SELECT value FROM json_each(:{0})"
    if spec.tags_any:
        wanted_any = sorted({t.lower() for t in spec.tags_any})
        params["tags_any"] = json.dumps(wanted_any, ensure_ascii=False)
        if not postgresql and all(_likeable(t) for t in wanted_any):
            # a cheap necessary condition first: the JSON text holds one of the tags as a
            # quoted string (LIKE folds ASCII case), so json_each runs on few rows
            likes = []
            for n, tag in enumerate(wanted_any):
                params[f"like{n}"] = f"%{_like_escaped(json.dumps(tag))}%"
                likes.append(f"documents.tags LIKE :like{n} ESCAPE '\\'")
            clauses.append("(" + " OR ".join(likes) + ")")
        clauses.append(f"EXISTS (SELECT 1 FROM {tags} WHERE {lower.format('t.value')} IN "
                       f"({wanted.format('tags_any')}))")
    if spec.tags_all:
        needed = sorted({t.lower() for t in spec.tags_all})
        params["tags_all"] = json.dumps(needed, ensure_ascii=False)
        params["tags_all_n"] = len(needed)
        folded = lower.format("t.value")
        clauses.append(f"(SELECT count(DISTINCT {folded}) FROM {tags} WHERE "
                       f"{folded} IN ({wanted.format('tags_all')})) = :tags_all_n")
    if spec.date_from is not None:
        params["date_from"] = spec.date_from
        clauses.append("documents.date >= :date_from")
    if spec.date_to is not None:
        params["date_to"] = spec.date_to
        clauses.append("documents.date <= :date_to")
    for name in ("category", "topic"):
        value = getattr(spec, name)
        if value is not None:
            params[name] = value.lower()
            target = f"lower(:{name})" if postgresql else f":{name}"
            value_sql = lower.format(f"coalesce(documents.{name}, '')")
            clauses.append(f"{value_sql} = {target}")
    clauses += field_rows.where(spec, params)
    return " AND ".join(clauses) or "1 = 1", params


def prefix_bounds(pattern: str) -> tuple[str, str] | None:
    """(low, high): every path ``pattern`` matches is at least low and below high (SQLite
    compares text by its UTF-8 bytes, which order as the code points do); None when the
    glob starts with a wildcard or no bound follows its literal start."""
    start = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    if not start:
        return None
    last = ord(start[-1]) + 1
    if last > 0x10FFFF or 0xD800 <= last <= 0xDFFF:
        return None
    return start, start[:-1] + chr(last)


def _likeable(tag: str) -> bool:
    """True when every stored tag that folds to ``tag`` also contains it ASCII-case-folded:
    ASCII text without "k" (the Kelvin sign folds to "k")."""
    return tag.isascii() and "k" not in tag


def _like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_regex(pattern: str) -> str:
    """``pattern`` (``fnmatch``: ``*``, ``?``, ``[seq]``, ``[!seq]``) as an anchored
    PostgreSQL regular expression matching the same strings, case-sensitively."""
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(_escape("["))
                continue
            body, i = pattern[i:j], j + 1
            negate = body.startswith("!")
            out.append(_bracket(body[1:] if negate else body, negate))
        else:
            out.append(_escape(c))
    return "".join(out) + "$"


def _escape(char: str) -> str:
    return char if char.isalnum() and char.isascii() else "\\" + char


def _bracket(body: str, negate: bool) -> str:
    """One character class: ``a-z`` ranges as fnmatch reads them (an inverted range
    matches nothing, as in ``fnmatch``), every other character literal."""
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            ranges.append((body[k], body[k + 2]))
            k += 3
        else:
            ranges.append((body[k], body[k]))
            k += 1
    kept = [(lo, hi) for lo, hi in ranges if lo <= hi]
    if not kept:
        return "." if negate else "(?!x)x"
    items = "".join(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}"
                    for lo, hi in kept)
    return f"[{'^' if negate else ''}{items}]"
