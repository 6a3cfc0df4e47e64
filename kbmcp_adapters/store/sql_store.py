"""SqlIndexStore: the IndexStore port on SQLAlchemy Core, migrated by Alembic.

One store class for both databases. What differs sits behind ``Dialect``: the lexical
tables (SQLite: two FTS5 tables keyed by rowid; PostgreSQL: one ``lexical`` table with a
tsvector and a trigram index, keyed by id), the path-list filter, the upsert, and the
ranking legs (``ranking.rank`` / ``pg_lexical.rank``, sharing their math). Engine set-up,
read-only detection, error translation and the integrity check are in ``engine``; the
schema revisions in ``alembic_runner``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import bindparam, delete, func, insert, select, text, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from kbmcp_adapters.store import (
    alembic_runner,
    engine,
    exclusion,
    field_rows,
    filters,
    pg_copy,
    pg_lexical,
    pooled_ranking,
)
from kbmcp_adapters.store.alembic_runner import head_revision, open_at_revision, schema_revision
from kbmcp_adapters.store.engine import make_engine, translated
from kbmcp_adapters.store.keyword_filter import Within
from kbmcp_adapters.store.ranking import rank
from kbmcp_adapters.store.tables import (
    CHUNK_ROWS,
    FTS_TABLES,
    ID_FILTER,
    JOIN_DOCUMENTS,
    PATH_FILTER,
    PG_ID_FILTER,
    PG_LEXICAL,
    PG_PATH_FILTER,
    chunk_values,
    document_values,
    index_meta,
    json_object,
    lexical_values,
    stored_chunk,
    stored_document,
)
from kbmcp_adapters.store.tables import chunks as chunk_table
from kbmcp_adapters.store.tables import converted_text as converted_table
from kbmcp_adapters.store.tables import documents as document_table
from kbmcp_adapters.store.urls import store_location
from kbmcp_core.errors import StoreError
from kbmcp_core.fields import FieldValue
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics
from kbmcp_core.meta_keys import META_DIMENSION, META_LAST_RUN, META_MODEL
from kbmcp_core.models import (
    ChunkRecord,
    Consistency,
    DocumentFilter,
    DocumentRecord,
    IndexedState,
    IndexStats,
    StoredChunk,
    StoredDocument,
)
from kbmcp_core.ports import ConvertedText, DocumentWrite, batch_paths
from kbmcp_core.store_location import StoreLocation

__all__ = ["SqlIndexStore", "head_revision", "make_engine", "open_at_revision", "schema_revision"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Ids or paths per IN clause: far below SQLite's bound-variable limit.
BATCH = 500
#: At most this many problems are listed by ``quick_check`` (one is enough to act on).
QUICK_CHECK_MAX = 20
#: The size query behind OfferRules; ``ix_documents_size_bytes`` serves it. No ORDER BY:
#: sorting by path would tempt the planner to walk every row in path order.
SIZES_OVER_SQL = "SELECT path, size_bytes FROM documents WHERE size_bytes > :min_bytes"
_PATH_ID = select(document_table.c.id).where(document_table.c.path == bindparam("path"))
#: Converted texts whose hash no document carries any more (``prune_dangling``).
UNREFERENCED_CONVERSIONS = ("DELETE FROM converted_text WHERE content_hash NOT IN "
                            "(SELECT content_hash FROM documents)")


#: (conn, query, limit, what the leg is kept to: None, a JSON list of paths, or on SQLite
#: a ``keyword_filter.Within``)
Ranker = Callable[..., list[tuple[int, float]]]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one database does its own way; everything else is the same SQL."""

    #: the lexical tables, each holding one row per chunk (title, heading, body)
    lexical_tables: tuple[str, ...]
    #: the column of a lexical row that holds its chunk id
    lexical_key: str
    #: ``documents.path`` in the ``:paths`` JSON list
    path_filter: str
    #: ``chunks.id`` in the ``:ids`` JSON list
    id_filter: str
    #: INSERT with ON CONFLICT DO UPDATE
    insert: Callable[..., Any]
    #: (chunk id, relevance in (0, 1]) best first, for (conn, query, limit, within)
    rank: Ranker
    #: the keyword counts of (conn, query, paths), and the legs scored on pooled ones
    statistics: Callable[..., KeywordStatistics]
    hits: Callable[[Connection, str, int, str | None, KeywordStatistics], list[KeywordHit]]


def pg_insert(table: Any) -> Any:
    """PostgreSQL's ``INSERT ... ON CONFLICT``: its dialect imported only by a PostgreSQL
    store (a SQLite search, ``kb-mcp search`` above all, never pays for it; 0057)."""
    from sqlalchemy.dialects.postgresql import insert

    return insert(table)


SQLITE = Dialect(FTS_TABLES, "rowid", PATH_FILTER, ID_FILTER, sqlite_insert, rank,
                 pooled_ranking.statistics, pooled_ranking.hits)
POSTGRESQL = Dialect((PG_LEXICAL,), "id", PG_PATH_FILTER, PG_ID_FILTER, pg_insert,
                     pg_lexical.rank, pg_lexical.statistics, pg_lexical.hits)


def _paths_json(document_paths: Collection[str] | None) -> str | None:
    """The ``:paths`` JSON list of a restriction to these documents (None: every one)."""
    return None if document_paths is None else json.dumps(sorted(document_paths))


def _lexical_facts(title: str, chunk: ChunkRecord) -> tuple[str, str, str]:
    """What a chunk's lexical rows are made of (``lexical_values``), as the stored rows
    hold it: the document's title, the heading path (its ``chunks`` column) and the body."""
    values = chunk_values(0, chunk)
    return (title, str(values["heading_path"]), chunk.content)


def _batches(items: Iterable[T], size: int = BATCH) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class SqlIndexStore:
    """The index store. Every method is one short transaction on a pooled connection."""

    def __init__(self, url: str | StoreLocation, create: bool = False, *,
                 migrate_schema: bool = True, read_only: bool = False) -> None:
        """Open the index at ``url`` (an SQLAlchemy URL, or the location parsed from one)
        and migrate it to head.

        ``create=False`` raises ``IndexNotFound`` when the SQLite file does not exist
        (nothing is created). ``migrate_schema=False`` leaves an old index as it is, so a
        health check can report its revision; only head-schema reads are then safe.
        ``read_only``: a SQLite file is opened read-only even when this user may write it.
        """
        parsed = url if isinstance(url, StoreLocation) else store_location(url)
        self._db = parsed.path
        #: a PostgreSQL store's URL for messages (password hidden); None for SQLite
        self._location = parsed.public if parsed.is_postgresql else None
        self._engine = engine.open_engine(parsed.url, create, read_only=read_only)
        self._dialect = POSTGRESQL if self._engine.dialect.name == "postgresql" else SQLITE
        try:
            #: True when this process may not write the index: it was opened read-only
            self.read_only = engine.is_read_only(self._engine)
            # Only an index behind head takes the write lock: opening never waits on a
            # running index writer otherwise.
            if migrate_schema and (revision := self.schema_revision()) != head_revision():
                if self.read_only:
                    where = self._db or self._location
                    raise StoreError(
                        f"the index at {where} was written by an older kb-mcp (schema "
                        f"{revision}, this one needs {head_revision()}) and this user may "
                        "not write it: run `kb-mcp index` once as a user who can"
                    )
                with self._write() as conn:
                    alembic_runner.upgrade(conn, "head")
        except BaseException:
            self._engine.dispose()
            raise
        #: recent filters' answers; a read-only SQLite file may be read ``immutable``, which
        #: sees no commit, so only an index this process may write keeps them
        self._filters = filters.FilterCache(None if self.read_only else self._db)

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with translated(self._db, self._location), self._engine.connect() as conn:
            if self._location is not None:
                # one snapshot for the whole read: doctor's facts never straddle a commit
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def _write(self) -> AbstractContextManager[Connection]:
        return engine.write_transaction(self._engine, self._db, self._location)

    def close(self) -> None:
        self._filters.close()
        self._engine.dispose()

    def __enter__(self) -> SqlIndexStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def schema_revision(self) -> str | None:
        with self._read() as conn:
            return alembic_runner.current_revision(conn)

    # -- writer side -----------------------------------------------------------------
    def indexed_states(self) -> dict[str, IndexedState]:
        c = document_table.c
        with self._read() as conn:
            return {
                path: IndexedState(path=path, content_hash=digest, size_bytes=size)
                for path, digest, size in conn.execute(select(c.path, c.content_hash, c.size_bytes))
            }

    def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[ChunkRecord],
        replaces: str | None = None,
    ) -> list[int]:
        """Replace the rows at ``document.path`` and ``replaces`` in one transaction.

        Returns the ids of chunks that existed before and are gone now (an id written
        again, e.g. reused by a rename, is not reported as removed).
        """
        return self.write_documents([DocumentWrite(document, chunks, replaces)])

    def write_documents(self, batch: Sequence[DocumentWrite]) -> list[int]:
        """Replace the rows of every document of ``batch`` in one transaction: one look-up
        of what they replace, then each table's rows in one statement. All or nothing.
        A chunk written again under its id with the same title, heading trail and text
        keeps its lexical rows (``_delete_paths``): only the rows that changed are written
        into the keyword index."""
        paths = batch_paths(batch)
        if not batch:
            return []
        t = document_table
        lexical = {c.id: _lexical_facts(w.document.title, c) for w in batch for c in w.chunks}
        with self._write() as conn:
            replaced_hashes = self._hashes_at(conn, paths)
            removed, kept = self._delete_paths(conn, paths, lexical)
            new_ids = conn.execute(
                insert(t).returning(t.c.id, sort_by_parameter_order=True),
                [document_values(w.document) for w in batch],
            ).scalars().all()
            field_rows.write(conn, [(int(i), w.document) for i, w in zip(new_ids, batch,
                                                                         strict=True)])
            # Rows in chunk id order: FTS5 writes its pending terms out as a new segment
            # whenever a rowid comes lower than the one before (a run hands its ids out in
            # increasing order; sorting keeps the rows so whatever order the batch is in).
            owned = sorted(((c, int(doc_id), w.document.title)
                            for doc_id, w in zip(new_ids, batch, strict=True) for c in w.chunks),
                           key=lambda row: row[0].id)
            if owned:
                self._insert_many(conn, "chunks", [chunk_values(d, c) for c, d, _ in owned])
                rows = [lexical_values(title, c) for c, _, title in owned if c.id not in kept]
                key = self._dialect.lexical_key
                for table in self._dialect.lexical_tables if rows else ():
                    self._insert_many(conn, table, rows, {"id": key})
            self._keep_converted(conn, [w.converted for w in batch
                                        if w.converted is not None
                                        and w.converted.content_hash == w.document.content_hash])
            self._drop_unreferenced(conn, replaced_hashes)
        written = {c.id for w in batch for c in w.chunks}
        return [cid for cid in removed if cid not in written]

    def _insert_many(self, conn: Connection, table: str, rows: Sequence[Mapping[str, object]],
                     rename: Mapping[str, str] | None = None) -> None:
        """INSERT ``rows`` (dicts with the same keys; ``rename`` maps a key to its column).
        On SQLite straight to the driver's ``executemany``: the statement is built once and
        the rows go as tuples (SQLAlchemy's per-row work was a fifth of the write). On
        PostgreSQL one ``COPY`` (``pg_copy``)."""
        keys = list(rows[0])
        names = [(rename or {}).get(k, k) for k in keys]
        if self._dialect is SQLITE:
            marks = ", ".join("?" * len(keys))
            conn.exec_driver_sql(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                                 [tuple(row[k] for k in keys) for row in rows])
        else:  # one COPY: one statement, so 0008's triggers post the batch at once
            pg_copy.copy_rows(conn, table, names, rows, keys)

    def update_document_metadata(
        self, document: DocumentRecord, converted: ConvertedText | None = None
    ) -> None:
        values = document_values(document)
        del values["path"]
        with self._write() as conn:
            document_id = conn.execute(_PATH_ID, {"path": document.path}).scalar()
            if document_id is None:
                raise StoreError(f"no indexed document at {document.path!r} to update")
            replaced_hashes = self._hashes_at(conn, [document.path])
            where = document_table.c.id == document_id
            conn.execute(update(document_table).where(where).values(**values))
            field_rows.delete_for(conn, [document_id])
            field_rows.write(conn, [(document_id, document)])
            key = self._dialect.lexical_key
            for table in self._dialect.lexical_tables:
                statement = f"UPDATE {table} SET title = :title WHERE {key} IN "
                conn.execute(
                    text(statement + "(SELECT id FROM chunks WHERE document_id = :document_id)"),
                    {"title": document.title, "document_id": document_id},
                )
            if converted is not None and converted.content_hash == document.content_hash:
                self._keep_converted(conn, [converted])
            self._drop_unreferenced(conn, replaced_hashes)

    def delete_documents(self, paths: Iterable[str]) -> list[int]:
        wanted = set(paths)
        if not wanted:
            return []
        with self._write() as conn:
            replaced_hashes = self._hashes_at(conn, wanted)
            removed, _ = self._delete_paths(conn, wanted)
            self._drop_unreferenced(conn, replaced_hashes)
            return removed

    def _delete_paths(self, conn: Connection, paths: Collection[str],
                      written: Mapping[int, tuple[str, str, str]] | None = None,
                      ) -> tuple[list[int], set[int]]:
        """Delete the rows of the documents at ``paths``: (the ids of their chunks, the
        ids whose lexical rows were kept). ``written`` maps the ids about to be written
        again to their lexical facts (``_lexical_facts``); a chunk whose stored facts are
        the same keeps its lexical rows, so an edit rewrites only the rows that changed
        (a keyword index of a million chunks pays for every row deleted and inserted)."""
        document_ids: list[int] = []
        for names in _batches(paths):
            by_path = select(document_table.c.id).where(document_table.c.path.in_(names))
            document_ids += conn.execute(by_path).scalars().all()
        c, d = chunk_table.c, document_table.c
        removed: list[int] = []
        kept: set[int] = set()
        for ids in _batches(document_ids):
            if not written:  # nothing written again: the ids alone
                by_document = select(c.id).where(c.document_id.in_(ids))
                removed += conn.execute(by_document).scalars().all()
                continue
            facts = (select(c.id, d.title, c.heading_path, c.content)
                     .join(document_table, d.id == c.document_id).where(c.document_id.in_(ids)))
            for cid, *stored in conn.execute(facts):
                removed.append(cid)
                if written.get(cid) == tuple(stored):
                    kept.add(cid)
        dropped = sorted(cid for cid in removed if cid not in kept)  # ascending: fewer segments
        if dropped:
            key = self._dialect.lexical_key
            for table in self._dialect.lexical_tables:
                statement = text(f"DELETE FROM {table} WHERE {key} = :id")
                conn.execute(statement, [{"id": cid} for cid in dropped])
        field_rows.delete_for(conn, document_ids)
        for ids in _batches(document_ids):
            conn.execute(delete(chunk_table).where(chunk_table.c.document_id.in_(ids)))
            conn.execute(delete(document_table).where(document_table.c.id.in_(ids)))
        return removed, kept

    def replace_fields(self, by_path: Mapping[str, Sequence[FieldValue]] | None) -> int:
        """Rewrite the declared-field rows of the documents at these paths (None: drop
        every row) in one transaction; returns the documents found."""
        with self._write() as conn:
            if by_path is None:
                field_rows.delete_all(conn)
                return 0
            return field_rows.replace(conn, by_path)

    def backfill_sizes(self, sizes: Mapping[str, int]) -> int:
        if not sizes:
            return 0
        statement = text(
            "UPDATE documents SET size_bytes = :size WHERE path = :path AND size_bytes IS NULL"
        )
        with self._write() as conn:
            result = conn.execute(statement, [{"path": p, "size": s} for p, s in sizes.items()])
            return int(result.rowcount)

    def record_size(self, path: str, size: int) -> bool:
        where = document_table.c.path == path
        with self._write() as conn:
            result = conn.execute(update(document_table).where(where).values(size_bytes=size))
            return int(result.rowcount) > 0

    def chunk_hashes(self, hashes: Iterable[str]) -> dict[str, int]:
        c = chunk_table.c
        found: dict[str, int] = {}
        with self._read() as conn:
            for batch in _batches(set(hashes)):
                query = (
                    select(c.content_hash, func.min(c.id))
                    .where(c.content_hash.in_(batch))
                    .group_by(c.content_hash)
                )
                found.update({digest: cid for digest, cid in conn.execute(query)})
        return found

    def document_chunk_hashes(self, path: str) -> list[str] | None:
        """Hashes of the document's chunks in ordinal order; None when not indexed."""
        found = self.chunks_of([path]).get(path)
        return None if found is None else [digest for _, digest in found]

    def chunks_of(self, paths: Collection[str]) -> dict[str, list[tuple[int, str]]]:
        """(id, text hash) of each indexed document's chunks in ordinal order, by path;
        an index run asks for many documents at once (one look-up each was a tenth of an
        incremental run at a million chunks)."""
        c, d = chunk_table.c, document_table.c
        found: dict[str, list[tuple[int, str]]] = {}
        with self._read() as conn:
            for names in _batches(set(paths)):
                query = (select(d.path, c.id, c.content_hash)
                         .select_from(document_table.outerjoin(chunk_table, c.document_id == d.id))
                         .where(d.path.in_(names)).order_by(d.path, c.ordinal, c.id))
                for path, cid, digest in conn.execute(query):
                    held = found.setdefault(path, [])
                    if cid is not None:
                        held.append((int(cid), str(digest)))
        return found

    def chunk_ids(self) -> set[int]:
        with self._read() as conn:
            return set(conn.execute(select(chunk_table.c.id)).scalars())

    def prune_dangling(self) -> int:
        """Delete chunks whose document is gone, then lexical rows whose chunk is gone."""
        statements = [
            "DELETE FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)",
            "DELETE FROM document_fields WHERE document_id NOT IN (SELECT id FROM documents)",
            *(f"DELETE FROM {t} WHERE {self._dialect.lexical_key} NOT IN (SELECT id FROM chunks)"
              for t in self._dialect.lexical_tables),
            UNREFERENCED_CONVERSIONS,
        ]
        removed = 0
        with self._write() as conn:
            for statement in statements:
                removed += int(conn.execute(text(statement)).rowcount or 0)
        if removed:
            log.info("removed %d rows whose chunk or document was gone", removed)
        return removed

    def get_meta(self, key: str) -> str | None:
        with self._read() as conn:
            query = select(index_meta.c.value).where(index_meta.c.key == key)
            value = conn.execute(query).scalar()
            return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        statement = self._dialect.insert(index_meta).values(key=key, value=value)
        statement = statement.on_conflict_do_update(
            index_elements=[index_meta.c.key], set_={"value": value}
        )
        with self._write() as conn:
            conn.execute(statement)

    # -- reader side -----------------------------------------------------------------
    def stats(self) -> IndexStats:
        with self._read() as conn:
            n_documents = conn.execute(select(func.count()).select_from(document_table)).scalar()
            n_chunks = conn.execute(select(func.count()).select_from(chunk_table)).scalar()
            meta = {k: v for k, v in conn.execute(select(index_meta.c.key, index_meta.c.value))}
            revision = alembic_runner.current_revision(conn)
        dimension = meta.get(META_DIMENSION)
        return IndexStats(
            documents=int(n_documents or 0),
            chunks=int(n_chunks or 0),
            model_id=meta.get(META_MODEL),
            dimension=int(dimension) if dimension and dimension.isdigit() else None,
            last_run=json_object(meta[META_LAST_RUN]) if meta.get(META_LAST_RUN) else None,
            schema_revision=revision,
        )

    def get_document(self, path: str) -> StoredDocument | None:
        with self._read() as conn:
            row = conn.execute(select(document_table).where(document_table.c.path == path)).first()
        return None if row is None else stored_document(row._mapping)

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        query = select(document_table).order_by(document_table.c.path)
        if paths is not None:
            where = text(self._dialect.path_filter)
            query = query.where(where.bindparams(paths=json.dumps(sorted(paths))))
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [stored_document(row._mapping) for row in rows]

    def document_paths(self) -> list[str]:
        query = select(document_table.c.path).order_by(document_table.c.path)
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def sizes_over(self, min_bytes: int) -> list[tuple[str, int]]:
        with self._read() as conn:
            rows = conn.execute(text(SIZES_OVER_SQL), {"min_bytes": min_bytes}).all()
        return sorted((str(path), int(size)) for path, size in rows)

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]:
        """The chunks of ``ids`` that exist, with their documents' fields: one statement
        for any number of ids (their JSON list), its rows fetched at once."""
        wanted = sorted({int(cid) for cid in ids})
        if not wanted:
            return {}
        sql = f"{CHUNK_ROWS} WHERE {self._dialect.id_filter}"
        with self._read() as conn:
            rows = conn.execute(text(sql), {"ids": json.dumps(wanted)}).all()
        return {int(row.id): stored_chunk(row._mapping) for row in rows}

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        """Ids of every chunk of the given documents (any number of paths, one query)."""
        if not paths:
            return []
        generation = self._filters.generation()
        if (kept := self._filters.chunk_ids(paths, generation)) is not None:
            return list(kept)  # what ``matching_paths`` found for these paths
        where = self._dialect.path_filter
        sql = f"SELECT chunks.id FROM chunks {JOIN_DOCUMENTS} WHERE {where} ORDER BY 1"
        with self._read() as conn:
            rows = conn.execute(text(sql), {"paths": json.dumps(sorted(paths))}).scalars()
            return [int(cid) for cid in rows]

    def chunk_ids_by_path(self, paths: Collection[str] | None = None) -> dict[str, list[int]]:
        """Each document's chunk ids (of every document, or those at ``paths``), one
        query: what the vector labels are made from (``label_sync``)."""
        if paths is not None and not paths:
            return {}
        where = "" if paths is None else f" WHERE {self._dialect.path_filter}"
        sql = f"SELECT documents.path, chunks.id FROM chunks {JOIN_DOCUMENTS}{where}"
        params = {} if paths is None else {"paths": json.dumps(sorted(paths))}
        found: dict[str, list[int]] = {}
        with self._read() as conn:
            for path, cid in conn.execute(text(sql), params):
                found.setdefault(path, []).append(int(cid))
        return found

    def matching_paths(self, spec: DocumentFilter) -> set[str]:
        """The filters as one SQL condition on ``documents`` (see ``filters.where``).

        On a SQLite index this process may write, the kept paths and their chunk ids are
        read (as JSON lists SQLite makes, no row by row) and kept until the next commit
        (``filters.FilterCache``): the same filter again, ``chunk_ids_for`` of what it
        returned, and a keyword leg kept to it, read nothing."""
        generation = self._filters.generation()
        if (kept := self._filters.kept(spec, generation)) is not None:
            return set(kept.paths)
        condition, params = filters.where(spec, self._dialect is POSTGRESQL)
        with self._read() as conn:
            if self._dialect is SQLITE:
                filters.register_functions(conn.connection.driver_connection)
            if generation is None:
                rows = conn.execute(text(f"SELECT path FROM documents WHERE {condition}"), params)
                return {str(path) for path in rows.scalars()}
            paths, documents = conn.execute(text(
                "SELECT json_group_array(path), json_group_array(id) FROM documents "
                f"WHERE {condition}"), params).one()
            ids = conn.execute(text(
                "SELECT json_group_array(id) FROM (SELECT id FROM chunks WHERE document_id IN "
                "(SELECT value FROM json_each(:documents)) ORDER BY id)"),
                {"documents": documents}).scalar_one()
        found = filters.Kept.read(paths, ids)
        self._filters.keep(spec, generation, found)
        return set(found.paths)

    def consistency(self) -> Consistency:
        """Raw facts for doctor.

        ``lexical_ids`` holds the chunk ids present in every lexical table (SQLite has two,
        PostgreSQL one) plus any id present in one that has no chunk: a chunk missing from
        one table shows up as missing, a stray row in one table shows up as an orphan.
        """
        queries = {
            "dangling": "SELECT id FROM chunks "
            "WHERE document_id NOT IN (SELECT id FROM documents) ORDER BY id",
            "empty": "SELECT path FROM documents "
            "WHERE id NOT IN (SELECT document_id FROM chunks) ORDER BY path",
            "unsized": "SELECT path FROM documents WHERE size_bytes IS NULL ORDER BY path",
        }
        with self._read() as conn:
            chunk_ids = frozenset(conn.execute(select(chunk_table.c.id)).scalars())
            key = self._dialect.lexical_key
            present = [
                set(conn.execute(text(f"SELECT {key} FROM {table}")).scalars())
                for table in self._dialect.lexical_tables
            ]
            revision = alembic_runner.current_revision(conn)
            if revision != head_revision():  # older schemas may lack size_bytes
                queries.pop("unsized")
            found = {k: tuple(conn.execute(text(sql)).scalars()) for k, sql in queries.items()}
        everywhere, anywhere = set.intersection(*present), set.union(*present)
        return Consistency(
            chunk_ids=chunk_ids,
            lexical_ids=frozenset(everywhere | (anywhere - everywhere - chunk_ids)),
            chunks_without_document=found["dangling"],
            documents_without_chunks=found["empty"],
            null_size_paths=found.get("unsized", ()),
            schema_revision=revision,
            head_revision=head_revision(),
        )

    def has_integrity_check(self) -> bool:
        """SQLite's ``PRAGMA quick_check``; PostgreSQL has none to run (see
        ``engine.quick_check``)."""
        return self._engine.dialect.name == "sqlite"

    def quick_check(self, budget_s: float) -> list[str] | None:
        """``PRAGMA quick_check`` within ``budget_s`` (see ``engine.quick_check``); on
        PostgreSQL [] (no file for kb-mcp to check: the server guards its pages)."""
        return engine.quick_check(self._engine, self._db, budget_s, QUICK_CHECK_MAX)

    def lexical_search(
        self, query: str, limit: int, document_paths: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        """Ranked by the dialect's legs (``ranking.rank`` on SQLite, ``pg_lexical.rank``
        on PostgreSQL): BM25 weighed by query coverage, relevance in (0, 1]."""
        if limit <= 0 or not query.strip() or (document_paths is not None and not document_paths):
            return []
        with self._read() as conn:
            return self._dialect.rank(conn, query, limit, self._within(document_paths))

    def _within(self, document_paths: Collection[str] | None) -> str | Within | None:
        """What a keyword leg is kept to: on SQLite the chunk ids a kept filter found for
        ``document_paths`` (``filters.FilterCache.within``), else their paths as JSON."""
        if document_paths is not None and self._dialect is SQLITE:
            found = self._filters.within(document_paths, self._filters.generation())
            if found is not None:
                return found
        return _paths_json(document_paths)

    def keyword_statistics(self, query: str, document_paths: Collection[str] | None = None,
                           *, presence: bool = False) -> KeywordStatistics:
        """The counts the keyword legs score ``query`` on, to pool (decision 0052): over
        the whole index, as BM25 counts them; only ``found`` keeps to ``document_paths``.
        ``presence``: a held term may count 1 however many chunks hold it (the port)."""
        if not query.strip():
            return KeywordStatistics()
        with self._read() as conn:
            return self._dialect.statistics(conn, query, _paths_json(document_paths),
                                            presence=presence)

    def keyword_hits(self, query: str, limit: int, document_paths: Collection[str] | None,
                     statistics: KeywordStatistics) -> list[KeywordHit]:
        """The keyword legs' candidates scored on pooled ``statistics`` (decision 0052)."""
        if limit <= 0 or not query.strip() or (document_paths is not None and not document_paths):
            return []
        with self._read() as conn:
            return self._dialect.hits(conn, query, limit, _paths_json(document_paths),
                                      statistics)

    def paths_containing(self, terms: Collection[str]) -> set[str]:
        """Documents holding any of ``terms`` as the keyword index matches them
        (``exclusion``): what a query's ``-term`` leaves out of both legs."""
        if not terms:
            return set()
        with self._read() as conn:
            if self._dialect is POSTGRESQL:
                return exclusion.pg_paths_containing(conn, terms)
            return exclusion.sqlite_paths_containing(conn, terms)

    def chunk_windows(self, ids: Collection[int], radius: int) -> dict[int, list[StoredChunk]]:
        """The chunks around each of ``ids`` in its document (ordinal within ``radius``),
        in document order: one self-join per batch of ids, any dialect."""
        hit = chunk_table.alias("hit")
        c, d = chunk_table.c, document_table.c
        near = (c.document_id == hit.c.document_id) & (
            c.ordinal.between(hit.c.ordinal - radius, hit.c.ordinal + radius))
        joined = chunk_table.join(hit, near).join(document_table, d.id == c.document_id)
        columns = select(hit.c.id.label("hit_id"), chunk_table, d.path, d.title, d.tags,
                         d.date, d.topic, d.category)
        found: dict[int, list[StoredChunk]] = {}
        with self._read() as conn:
            for batch in _batches(set(ids)):
                query = (columns.select_from(joined).where(hit.c.id.in_(batch))
                         .order_by(hit.c.id, c.ordinal))
                for row in conn.execute(query):
                    found.setdefault(int(row.hit_id), []).append(stored_chunk(row._mapping))
        return found

    # -- converted texts (decision 0023) ------------------------------------------
    def converted_text(self, content_hash: str) -> ConvertedText | None:
        c = converted_table.c
        with self._read() as conn:
            row = conn.execute(select(c.text, c.chars).where(c.content_hash == content_hash)
                               ).first()
        return None if row is None else ConvertedText(content_hash, str(row.text), int(row.chars))

    def converted_hashes(self, hashes: Collection[str]) -> set[str]:
        c = converted_table.c
        found: set[str] = set()
        with self._read() as conn:
            for batch in _batches(set(hashes)):
                query = select(c.content_hash).where(c.content_hash.in_(batch))
                found.update(str(h) for h in conn.execute(query).scalars())
        return found

    def keep_conversions(self, texts: Sequence[ConvertedText]) -> int:
        """Keep each text whose hash a document carries, in one transaction; returns how
        many were kept."""
        if not texts:
            return 0
        d = document_table.c
        with self._write() as conn:
            carried: set[str] = set()
            for batch in _batches({t.content_hash for t in texts}):
                query = select(d.content_hash).where(d.content_hash.in_(batch)).distinct()
                carried.update(str(h) for h in conn.execute(query).scalars())
            return self._keep_converted(conn, [t for t in texts if t.content_hash in carried])

    def _keep_converted(self, conn: Connection, texts: Sequence[ConvertedText]) -> int:
        """Insert or replace these texts: the newest conversion of a hash is the one the
        index's chunks were cut from (a forced run after an upgrade converts anew).
        Returns the texts written."""
        rows = list({t.content_hash: {"content_hash": t.content_hash, "text": t.text,
                                      "chars": t.chars} for t in texts}.values())
        if not rows:
            return 0
        statement = self._dialect.insert(converted_table)
        statement = statement.on_conflict_do_update(
            index_elements=[converted_table.c.content_hash],
            set_={"text": statement.excluded.text, "chars": statement.excluded.chars})
        for row in rows:  # one by one: a text may be a megabyte, never batch many
            conn.execute(statement, row)
        return len(rows)

    def _hashes_at(self, conn: Connection, paths: Collection[str]) -> set[str]:
        """The content hashes of the documents at ``paths`` (before they are replaced)."""
        d = document_table.c
        found: set[str] = set()
        for names in _batches(paths):
            found.update(str(h) for h in conn.execute(
                select(d.content_hash).where(d.path.in_(names))).scalars())
        return found

    def _drop_unreferenced(self, conn: Connection, hashes: Collection[str]) -> None:
        """Drop the converted texts of ``hashes`` that no document carries any more."""
        if not hashes:
            return
        d = document_table.c
        for batch in _batches(hashes):
            carried = set(conn.execute(select(d.content_hash).where(
                d.content_hash.in_(batch)).distinct()).scalars())
            gone = [h for h in batch if h not in carried]
            if gone:
                conn.execute(delete(converted_table).where(
                    converted_table.c.content_hash.in_(gone)))
