"""LanceDB adapter for the VectorStore port: chunk vectors keyed by chunk id, cosine k-NN,
in a folder or in object storage (``s3://``, ``gs://``, ``az://``). When to keep an
approximate index and how a query probes it is ``ann_policy``'s."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import threading
from collections.abc import Awaitable, Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from kbmcp_adapters.vectors import ann_policy, compaction, lance_cache
from kbmcp_adapters.vectors import labels as label_columns
from kbmcp_adapters.vectors.ann_policy import ANN_MIN_ROWS
from kbmcp_adapters.vectors.exact import (
    KeptRows,
    batches,
    in_order,
    no_rows,
    ranked,
    read_rows,
    read_where,
)
from kbmcp_adapters.vectors.lance_import import import_lancedb
from kbmcp_adapters.vectors.nearest import (
    exact_max_ids,
    in_predicate,
    labelled,
    nearest_async,
    post_filtered,
)
from kbmcp_adapters.vectors.rows import arrow_rows, checked, query_of
from kbmcp_adapters.vectors.translate import Outage, translate
from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter
from kbmcp_core.errors import StoreError
from kbmcp_core.models import Vector
from kbmcp_core.settings import StorageOptions, is_remote_uri, public_uri

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from lancedb.db import AsyncConnection, DBConnection
    from lancedb.table import AsyncTable, Table

    #: chunk ids and their unit vectors (rows)
    _Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]

_T = TypeVar("_T")

__all__ = ["DEFAULT_PREFILTER_MAX_IDS", "KEEP_OLD_VERSIONS", "LanceVectorStore"]

log = logging.getLogger(__name__)

_ID = "chunk_id"
_VECTOR = "vector"
#: Ids per ``chunk_id IN (...)`` predicate in get/delete (one scan and, for delete, one commit).
_IN_BATCH = 5000
#: Chunks whose labels one ``relabel`` commit rewrites.
_RELABEL_BATCH = 100_000
#: Label tests whose passing rows are counted and kept (all forgotten past it).
_PASSING_KEPT = 64
#: Up to this many allowed ids a filtered search is exact: the cosine of the query with
#: each allowed vector (kept per table version, see ``_AllowedRows``); above it, a wider
#: search that is filtered afterwards (``nearest.post_filtered``). At 20k rows reading the
#: allowed vectors costs less than the wider search up to ~3,500 ids (33 against 89 ms at
#: 2,000; 0019); the larger the table, the further the crossover: unless a store is given
#: a number, it rises with the table (``nearest.exact_max_ids``, decision 0058).
DEFAULT_PREFILTER_MAX_IDS = 4000
#: The allowed vectors kept for repeated filters: at most this many rows in all (16,000
#: rows of 384 dimensions: 25 MB), the least recently used filter dropped first.
ALLOWED_ROWS_KEPT = 16_000
#: ``compact`` removes versions older than this; a younger one may still be read elsewhere.
KEEP_OLD_VERSIONS = timedelta(minutes=5)


class LanceVectorStore:
    """Vectors in one LanceDB table (``chunk_id`` int64, ``vector`` float32[dimension]).

    ``location`` is a folder (a ``Path`` or a path string) or an object-store URI such as
    ``s3://bucket/prefix``, with ``storage_options`` (endpoint, region, credentials) passed
    to LanceDB as they are; LanceDB reads what they leave out (``AWS_*``…) from the
    environment. Messages name the URI without credentials and never carry an option's
    value. Nothing is imported or opened until first use. Writes create the directory and the
    table; reads of a missing directory or table behave as an empty store and create
    nothing. Every read sees the latest committed version, also from another process.
    A read that fails on damaged data (LanceDB errors and panics alike) raises
    ``VectorsUnreadable``, and ``VectorsUnreachable`` when the object store does not answer
    or refuses the credentials; a failed write raises ``StoreError``.
    """

    def __init__(
        self,
        location: Path | str,
        dimension: int,
        table: str = "chunks",
        *,
        storage_options: Mapping[str, str] | None = None,
        prefilter_max_ids: int | None = None,
        ann_min_rows: int = ANN_MIN_ROWS,
    ) -> None:
        if dimension <= 0:
            raise StoreError(f"vector dimension must be positive, got {dimension}")
        self._remote = isinstance(location, str) and is_remote_uri(location)
        #: the folder, for a local store (None in object storage)
        self._directory = None if self._remote else Path(location)
        self._uri = str(location)
        self._public = public_uri(self._uri)
        self._options = StorageOptions(storage_options)
        self._dimension = dimension
        self._name = table
        self._prefilter_max_ids = prefilter_max_ids
        self._ann_min_rows = ann_min_rows
        self._kept = KeptRows(max(ALLOWED_ROWS_KEPT, prefilter_max_ids or 0))
        #: rows passing a label test, per (table version, test): ``_passing``
        self._passing_counts: dict[tuple[int, str], int] = {}
        #: ((table version, rows), whether every row carries labels), read once a version
        self._labelled_at: tuple[tuple[int, int], bool] | None = None
        self._lock = threading.Lock()
        self._db: DBConnection | None = None
        #: the same database through LanceDB's async API: a read's one trip (``_trip``)
        self._adb: AsyncConnection | None = None
        #: an object store found not answering: the next calls fail at once for a while
        self._outage = Outage()

    @property
    def dimension(self) -> int:
        return self._dimension

    # -- writes ------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: Sequence[Vector],
            labels: Sequence[ChunkLabels] | None = None) -> None:
        """Insert or replace (upsert on ``chunk_id``) in one commit; the last duplicate wins.
        ``labels`` (one per id) go in the label columns, nulls without them."""
        rows = checked("add", ids, vectors, labels, self._dimension)
        if rows is None:
            return
        with self._translate("add vectors"):
            table = self._writable()
            batch = arrow_rows(table, rows, self._dimension)
            if table.count_rows() == 0:
                table.add(batch)
            else:
                (
                    table.merge_insert(_ID)
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(batch)
                )

    def append(self, ids: Sequence[int], vectors: Sequence[Vector],
               labels: Sequence[ChunkLabels] | None = None) -> None:
        """Append rows for ids the table does not hold, in one commit (the last duplicate
        in ``ids`` wins). Unlike ``add``'s upsert, nothing joins the batch against the
        table: at 100,000 rows phase two's 395 writes ended 60 MB smaller and took less
        CPU this way (0045). An id the table holds would be stored twice."""
        rows = checked("append", ids, vectors, labels, self._dimension)
        if rows is None:
            return
        with self._translate("add vectors"):
            table = self._writable()
            table.add(arrow_rows(table, rows, self._dimension))

    def relabel(self, labels: Mapping[int, ChunkLabels]) -> None:
        """New labels for the stored chunks of ``labels`` (their vectors unchanged), in a
        commit per ``_RELABEL_BATCH`` ids; a table without the label columns gets them
        first (an index made before labels: every row null, unlabelled). Updated rows
        are rewritten, so the approximate index searches them apart until ``compact``
        folds them in (or trains it again when they are many: ``ann_policy.plan``)."""
        if not labels:
            return
        import pyarrow as pa

        with self._translate("label vectors"):
            table = self._existing()
            if table is None:
                return
            if not label_columns.has_columns(table.schema):
                table.add_columns(label_columns.fields())
            ids = sorted(labels)
            for part in batches(ids, _RELABEL_BATCH):
                columns = label_columns.arrays([labels[i] for i in part], len(part))
                batch = pa.table({_ID: pa.array(part, type=pa.int64()), **columns})
                table.merge_insert(_ID).when_matched_update_all().execute(batch)

    def _writable(self) -> Table:
        """The table, created empty on the first write."""
        table = self._existing()
        return table if table is not None else self._create()

    def delete(self, ids: Collection[int]) -> None:
        wanted = _unique_ints(ids)
        if not wanted:
            return
        with self._translate("delete vectors"):
            table = self._existing()
            if table is None:
                return
            for part in batches(wanted, _IN_BATCH):
                table.delete(in_predicate(part))

    def reset(self) -> None:
        """Drop the table (whatever its dimension, even damaged); the next add creates it
        again."""
        if self._directory is None:
            with self._translate("drop the vector table"):
                db = self._connect()
                if self._name in db.list_tables().tables:
                    db.drop_table(self._name)
            return
        if self._not_a_folder():
            self._move_aside()
            return
        if not self._directory.is_dir():
            return
        try:
            with self._translate("drop the vector table"):
                db = self._connect()
                if self._name in db.list_tables().tables:
                    db.drop_table(self._name)
        except StoreError as exc:
            # a table whose files are damaged may not drop: remove them (the caller holds
            # the writer lock; a reader meanwhile falls back to keyword search)
            log.warning("removing the vector table's files: %s", exc)
            with self._translate("remove the vector table"):
                shutil.rmtree(self._table_dir(), ignore_errors=False)
                self._db = self._adb = None

    def fingerprint(self) -> str | None:
        """A token of the table's files (names, sizes, modification times), read without
        opening LanceDB: any commit, deletion or damage to the files changes it.
        ``"absent"`` when there is no table; None when the files are not laid out as
        expected (the caller then checks the vectors themselves).

        In object storage there are no files to look at: the token is the table's version
        and size, read from its manifest (one round trip). It changes with every commit and
        when the table is dropped or rewritten, not when an object is damaged in place.
        ``StoreError`` when the store cannot be reached: a writer must not go on blind."""
        if self._directory is None:
            with self._translate("read the vector table's version"):
                table = self._open()
                if table is None:
                    return "absent"
                # rows, bytes and fragments (a dict at run time, typed as a dataclass)
                token = (table.version, repr(table.stats()))
            return hashlib.sha256(repr(token).encode()).hexdigest()[:32]
        if self._not_a_folder():
            return None  # the caller reads the vectors, which says what is wrong
        table_dir = self._table_dir()
        if not table_dir.exists():
            return "absent"
        if not (table_dir / "_versions").is_dir():
            return None
        entries: list[tuple[str, int, int]] = []
        try:
            for folder, _dirs, files in os.walk(table_dir, onerror=_raise):
                for name in files:
                    st = os.stat(os.path.join(folder, name), follow_symlinks=False)
                    rel = os.path.relpath(os.path.join(folder, name), table_dir)
                    entries.append((rel, st.st_size, st.st_mtime_ns))
        except OSError:
            return None
        return hashlib.sha256(repr(sorted(entries)).encode()).hexdigest()[:32]

    def compact(self, *, keep_versions_for: timedelta = KEEP_OLD_VERSIONS) -> None:
        """Fold small fragments and delete versions older than ``keep_versions_for``, when
        that pays (``compaction.due``: a table with an approximate index is left as it is
        while the rows appended or deleted since are few; they are searched flat)."""
        keep = max(keep_versions_for, timedelta(milliseconds=1))
        with self._translate("compact the vector table"):
            table = self._existing()
            if table is not None:
                # decided before optimize, which folds new rows into an existing index
                plan, trained = ann_policy.plan(table, self._ann_min_rows)
                if trained is not None and plan != "keep":
                    table.drop_index(ann_policy.index_name(trained))
                if compaction.due(table, plan, trained):
                    table.optimize(cleanup_older_than=keep)
                if plan == "train":
                    ann_policy.train(table, _VECTOR, self._dimension)
                if not any(list(i.columns) == [_ID] for i in table.list_indices()):
                    from lancedb.index import BTree

                    # a ``chunk_id IN (...)`` read (a filter's allowed vectors, ``get``)
                    # reads the index, not the whole column: 63 -> 28 ms for 2,000 of 20k
                    # ids (0019)
                    table.create_index(_ID, config=BTree(), name=f"{_ID}_btree")
                # a filter on the labels reads their indexes, not the columns (0058)
                label_columns.ensure_indexes(table)

    def labelled(self) -> bool:
        """Whether the table has the label columns and no row without labels (read once
        per table version: a count of the rows whose ``folders`` is null)."""
        try:
            with self._translate("read the vector labels", reading=True):
                return self._trip(self._labelled, True, counted=True)
        except StoreError:  # the search that follows meets it again and says so
            return False

    async def _labelled(self, opened: _Opened) -> bool:
        """``labelled`` of the ``opened`` table at its version and row count (a table
        dropped and made again restarts its versions: its rows too)."""
        state = (opened.version, opened.rows)
        with self._lock:
            if self._labelled_at is not None and self._labelled_at[0] == state:
                return self._labelled_at[1]
        found = await label_columns.unlabelled_rows(opened.table, opened.schema,
                                                    opened.rows) == 0
        with self._lock:
            self._labelled_at = (state, found)
        return found

    def ann_state(self) -> tuple[int, int] | None:
        """(rows the approximate index was trained on, rows in the table), or None when
        the table has no approximate index (searches are exact)."""
        with self._translate("read the vector index", reading=True):
            table = self._existing()
            if table is None:
                return None
            trained = ann_policy.trained_rows(table)
            return None if trained is None else (trained, table.count_rows())

    # -- reads -------------------------------------------------------------
    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        wanted = _unique_ints(ids)
        if not wanted:
            return {}
        dimension = self._dimension
        with self._translate("read vectors", reading=True):
            keys, matrix = self._trip(lambda t: read_rows(t.table, wanted, dimension),
                                      no_rows(dimension), counted=False)
            return dict(zip(keys.tolist(), matrix.tolist(), strict=True))

    def ids(self) -> set[int]:
        with self._translate("list vector ids", reading=True):
            table = self._existing()
            if table is None:
                return set()
            data = table.search().select([_ID]).limit(None).to_arrow()
            return set(data.column(_ID).to_pylist())

    def count(self) -> int:
        with self._translate("count vectors", reading=True):
            table = self._existing()
            return 0 if table is None else table.count_rows()

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        """(chunk id, cosine similarity) best first among the chunks whose labels pass
        ``where``: LanceDB's prefilter on the indexed label columns, no list of ids
        (decision 0058's addendum); None when some row carries no labels (``labelled``
        is False: the caller filters by ids). One trip to LanceDB's loop, as ``search``."""
        query = query_of(vector, self._dimension)
        with self._translate("search vectors", reading=True):
            none: _Found | None = []  # no table
            found = self._trip(lambda t: self._by_labels(t, query, limit, where), none,
                               counted=True)
        return None if found is None else self._ranked(found, query, limit)

    async def _by_labels(self, opened: _Opened, query: npt.NDArray[np.float32], limit: int,
                         where: LabelFilter) -> _Found | None:
        if not await self._labelled(opened):
            return None
        if limit <= 0:
            return []
        test = label_columns.predicate(where)
        passing = await self._passing(opened, test)
        if passing <= self._exact_max_ids(opened.rows):
            # few chunks pass: exact over their vectors, kept as a list of ids' are
            return await self._exact((opened.version, test),
                                     lambda: read_where(opened.table, test, self._dimension))
        return await labelled(opened.table, query, limit, test, passing, opened.trained)

    async def _passing(self, opened: _Opened, test: str) -> int:
        """How many rows pass ``test`` (their label columns' indexes read once per table
        version and test; 12-165 ms at a million rows, load 11)."""
        key = (opened.version, test)
        with self._lock:
            if key in self._passing_counts:
                return self._passing_counts[key]
        count = await opened.table.count_rows(test)
        with self._lock:
            if len(self._passing_counts) >= _PASSING_KEPT:
                self._passing_counts.clear()
            self._passing_counts[key] = count
        return count

    def search(
        self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first; ``allowed_ids`` filters before ``limit``.
        One trip to LanceDB's loop (``_trip``), filtered or not."""
        if limit <= 0:
            return []
        query = query_of(vector, self._dimension)
        allowed = None if allowed_ids is None else _unique_ints(allowed_ids)
        if allowed is not None and not allowed:
            return []
        with self._translate("search vectors", reading=True):
            if allowed is None:
                return in_order(self._trip(
                    lambda t: nearest_async(t.table, query, limit, t.trained), [],
                    counted=False))
            nothing: _Found = []  # no table
            found = self._trip(lambda t: self._by_ids(t, query, limit, allowed), nothing,
                               counted=True)
        return self._ranked(found, query, limit)

    async def _by_ids(self, opened: _Opened, query: npt.NDArray[np.float32], limit: int,
                      allowed: list[int]) -> _Found:
        if len(allowed) <= self._exact_max_ids(opened.rows):
            return await self._exact((opened.version, tuple(allowed)),
                                     lambda: read_rows(opened.table, allowed, self._dimension))
        return await post_filtered(opened.table, query, limit, set(allowed), opened.rows,
                                   opened.trained)

    async def _exact(self, key: tuple[int, Hashable], read: Callable[[], Awaitable[_Rows]]
                     ) -> _Exact:
        """The rows a filter keeps, for an exact search of them: kept (``KeptRows``), or
        read now and ranked after the trip (``_ranked``), off LanceDB's loop."""
        kept = self._kept.get(key)
        return _Exact(key, kept, None if kept is not None else await read())

    def _ranked(self, found: _Found, query: npt.NDArray[np.float32], limit: int
                ) -> list[tuple[int, float]]:
        """A trip's hits best first: the filter's rows ranked exactly, or LanceDB's hits."""
        if isinstance(found, _Exact):
            unit = found.unit
            if unit is None:
                assert found.read is not None, "rows either kept or read"
                unit = self._kept.unit(found.key, found.read)
            return in_order(ranked(unit, query, limit))[:limit]
        return in_order(found)

    def _exact_max_ids(self, rows: int) -> int:
        """The most allowed ids a filtered search reads exactly in a table of ``rows``:
        the given number, else ``DEFAULT_PREFILTER_MAX_IDS`` raised with the table
        (``nearest.exact_max_ids``)."""
        if self._prefilter_max_ids is not None:
            return self._prefilter_max_ids
        return exact_max_ids(rows, DEFAULT_PREFILTER_MAX_IDS, ALLOWED_ROWS_KEPT)

    # -- internals ---------------------------------------------------------
    def _table_dir(self) -> Path:
        assert self._directory is not None, "a local store only"
        return self._directory / f"{self._name}.lance"

    def _connect(self) -> DBConnection:
        if self._db is None:
            lancedb = import_lancedb()  # without its unused REST client's validators (0045)
            args = self._connection_args()
            self._db = lancedb.connect(args.pop("uri"), **args)
        return self._db

    def _trip(self, work: Callable[[_Opened], Awaitable[_T]], absent: _T, *,
              counted: bool) -> _T:
        """``work`` on the table, in one trip to LanceDB's event loop (``_in_table``);
        ``absent`` when there is no table. Each step of LanceDB's synchronous API is a
        trip of its own (ten for an unfiltered search, more for a filtered one), and under
        many clients each waits for the loop and the interpreter's lock (decision 0057's
        addenda)."""
        if not self._located():
            return absent
        from lancedb.background_loop import LOOP

        on_loop = cast("Callable[[Awaitable[_T]], _T]", LOOP.run)  # untyped
        return on_loop(self._in_table(work, absent, counted))

    async def _in_table(self, work: Callable[[_Opened], Awaitable[_T]], absent: _T,
                        counted: bool) -> _T:
        """The table opened, its schema checked and its indexes listed (``counted``: its
        version and rows read too) together, then ``work``; ``absent`` without a table."""
        if self._adb is None:
            self._adb = await import_lancedb().connect_async(**self._connection_args())
        db = self._adb
        try:
            table = await db.open_table(self._name)
        except ValueError:  # as ``_open``: listed only when it will not open
            if self._name not in (await db.list_tables()).tables:
                return absent
            raise
        if counted:
            schema, indices, version, rows = await asyncio.gather(
                table.schema(), table.list_indices(), table.version(), table.count_rows())
        else:
            (schema, indices), version, rows = await asyncio.gather(
                table.schema(), table.list_indices()), 0, 0
        self._check_schema(schema)
        return await work(_Opened(table, schema, ann_policy.trained_among(indices),
                                  version, rows))

    def _connection_args(self) -> dict[str, object]:
        """What both connections (``_connect``, ``_trip``) open the database with."""
        where = self._uri if self._directory is None else str(self._directory.absolute())
        return {"uri": where, "read_consistency_interval": timedelta(0),
                "storage_options": dict(self._options) or None,
                "session": lance_cache.session()}  # its caches' budget (0039)

    def _located(self) -> bool:
        """Whether the vectors' location holds a folder to open (False: nothing stored
        yet, and a read creates nothing). A location that exists but is no folder is an
        error (``NotADirectoryError``), never an empty store: search must say its vectors
        are unreadable."""
        if self._not_a_folder():
            # no path in the text: it reaches clients in search's notice
            raise NotADirectoryError("the vectors location is a file, not a folder")
        return self._directory is None or self._directory.is_dir()

    def _not_a_folder(self) -> bool:
        """True when the local vectors location exists but is no folder (a regular file,
        a dangling link): reads fail on it, and ``reset`` moves it aside."""
        d = self._directory
        return d is not None and os.path.lexists(d) and not d.is_dir()

    def _move_aside(self) -> None:
        """Rename what holds the vectors' place to a free ``<name>.not-a-folder[.N]``
        beside it, so the next write can create the folder (nothing is deleted)."""
        d = self._directory
        assert d is not None, "a local store only"
        for n in range(1000):
            aside = d.with_name(f"{d.name}.not-a-folder" + (f".{n}" if n else ""))
            if not os.path.lexists(aside):
                break
        else:  # never rename over an earlier one
            raise StoreError(f"the vectors location {d} is not a folder, and 1000 earlier "
                             "ones were moved aside beside it: remove them")
        with self._translate("move the file in the vectors' place aside"):
            os.rename(d, aside)
        self._db = self._adb = None
        log.warning("the vectors location %s was not a folder: moved it aside to %s; the "
                    "vectors are rebuilt from the indexed chunks", d, aside.name)

    def _open(self) -> Table | None:
        """The table, or None when there is none (a missing folder creates nothing).
        (``_located``)."""
        if not self._located():
            return None
        db = self._connect()
        try:
            return db.open_table(self._name)
        except ValueError:
            # listed only when it will not open: a listing costs as much as the open
            # (each about 12 ms at a million rows on a loaded machine, decision 0058's
            # addendum), and a filtered search opens the table twice
            if self._name not in db.list_tables().tables:
                return None
            raise

    def _existing(self) -> Table | None:
        table = self._open()
        if table is not None:
            self._check_dimension(table)
        return table

    def _create(self) -> Table:
        import pyarrow as pa

        if self._directory is not None:
            self._directory.mkdir(parents=True, exist_ok=True)
        schema = pa.schema(
            [
                pa.field(_ID, pa.int64(), nullable=False),
                pa.field(_VECTOR, pa.list_(pa.float32(), self._dimension), nullable=False),
                *label_columns.fields(),
            ]
        )
        return self._connect().create_table(self._name, schema=schema, exist_ok=True)

    def _check_dimension(self, table: Table) -> None:
        self._check_schema(table.schema)

    def _check_schema(self, schema: pa.Schema) -> None:
        import pyarrow as pa

        kind = schema.field(_VECTOR).type
        stored = kind.list_size if pa.types.is_fixed_size_list(kind) else None
        if stored != self._dimension:
            raise StoreError(
                f"the vector table in {self._public} holds {stored}-dimensional vectors "
                f"but the embedding model makes {self._dimension}-dimensional ones; "
                "rebuild with `kb-mcp index --force`"
            )

    def _translate(
        self, action: str, *, reading: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        remote = self._public if self._remote else None
        return translate(action, reading=reading, remote=remote,
                         secrets=self._options.secrets(), outage=self._outage)


@dataclass(frozen=True, slots=True)
class _Opened:
    """The table as a trip opened it (``_in_table``)."""

    table: AsyncTable
    schema: pa.Schema
    #: the rows its approximate index was trained on; None without one
    trained: int | None
    #: its version and rows (0 when the trip did not read them)
    version: int
    rows: int


@dataclass(frozen=True, slots=True)
class _Exact:
    """A filter's rows for an exact search after the trip: ``unit`` when kept (unit
    vectors), else ``read`` (as stored) to be kept under ``key``."""

    key: tuple[int, Hashable]
    unit: _Rows | None
    read: _Rows | None


#: what a filtered trip found: LanceDB's hits, or the rows to rank exactly
_Found = list[tuple[int, float]] | _Exact


def _unique_ints(ids: Collection[int]) -> list[int]:
    return sorted({int(i) for i in ids})


def _raise(exc: OSError) -> None:
    raise exc
