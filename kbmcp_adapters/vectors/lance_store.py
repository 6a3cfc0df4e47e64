"""LanceDB adapter for the VectorStore port: chunk vectors keyed by chunk id, cosine k-NN."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import re
import shutil
from collections.abc import Collection, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kbmcp_core.errors import StoreError, VectorsUnreadable
from kbmcp_core.models import Vector

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from lancedb.db import DBConnection
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table

__all__ = ["DEFAULT_PREFILTER_MAX_IDS", "KEEP_OLD_VERSIONS", "LanceVectorStore"]

log = logging.getLogger(__name__)

_ID = "chunk_id"
_VECTOR = "vector"
_DISTANCE = "_distance"
#: Ids per ``chunk_id IN (...)`` predicate in get/delete (one scan and, for delete, one commit).
_IN_BATCH = 5000
#: Up to this many allowed ids a filtered search is a prefilter; above it, a wider search
#: that is filtered afterwards (an IN list of thousands costs more than a larger k).
DEFAULT_PREFILTER_MAX_IDS = 2000
#: ``compact`` removes versions older than this; a younger one may still be read elsewhere.
KEEP_OLD_VERSIONS = timedelta(minutes=5)


class LanceVectorStore:
    """Vectors in one LanceDB table (``chunk_id`` int64, ``vector`` float32[dimension]).

    Nothing is imported or opened until first use. Writes create the directory and the
    table; reads of a missing directory or table behave as an empty store and create
    nothing. Every read sees the latest committed version, also from another process.
    A read that fails on damaged data (LanceDB errors and panics alike) raises
    ``VectorsUnreadable``; a failed write raises ``StoreError``.
    """

    def __init__(
        self,
        directory: Path,
        dimension: int,
        table: str = "chunks",
        *,
        prefilter_max_ids: int = DEFAULT_PREFILTER_MAX_IDS,
    ) -> None:
        if dimension <= 0:
            raise StoreError(f"vector dimension must be positive, got {dimension}")
        self._directory = Path(directory)
        self._dimension = dimension
        self._name = table
        self._prefilter_max_ids = prefilter_max_ids
        self._db: DBConnection | None = None

    @property
    def dimension(self) -> int:
        return self._dimension

    # -- writes ------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: Sequence[Vector]) -> None:
        """Insert or replace (upsert on ``chunk_id``) in one commit; the last duplicate wins."""
        if len(ids) != len(vectors):
            raise StoreError(f"add got {len(ids)} ids but {len(vectors)} vectors")
        if not ids:
            return
        import numpy as np

        matrix = self._matrix(vectors)
        keys = np.asarray(ids, dtype=np.int64)
        _, last_in_reversed = np.unique(keys[::-1], return_index=True)
        if len(last_in_reversed) != len(keys):
            keep = np.sort(len(keys) - 1 - last_in_reversed)
            keys, matrix = keys[keep], matrix[keep]
        with _translate("add vectors"):
            batch = self._arrow_batch(keys, matrix)
            table = self._existing()
            if table is None:
                table = self._create()
            if table.count_rows() == 0:
                table.add(batch)
            else:
                (
                    table.merge_insert(_ID)
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(batch)
                )

    def delete(self, ids: Collection[int]) -> None:
        wanted = _unique_ints(ids)
        if not wanted:
            return
        with _translate("delete vectors"):
            table = self._existing()
            if table is None:
                return
            for part in _batches(wanted, _IN_BATCH):
                table.delete(_in_predicate(part))

    def reset(self) -> None:
        """Drop the table (whatever its dimension, even damaged); the next add creates it
        again."""
        if not self._directory.is_dir():
            return
        try:
            with _translate("drop the vector table"):
                db = self._connect()
                if self._name in db.list_tables().tables:
                    db.drop_table(self._name)
        except StoreError as exc:
            # a table whose files are damaged may not drop: remove them (the caller holds
            # the writer lock; a reader meanwhile falls back to keyword search)
            log.warning("removing the vector table's files: %s", exc)
            with _translate("remove the vector table"):
                shutil.rmtree(self._table_dir(), ignore_errors=False)
                self._db = None

    def fingerprint(self) -> str | None:
        """A token of the table's files (names, sizes, modification times), read without
        opening LanceDB: any commit, deletion or damage to the files changes it.
        ``"absent"`` when there is no table; None when the files are not laid out as
        expected (the caller then checks the vectors themselves)."""
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
        """Fold small fragments and delete versions older than ``keep_versions_for``."""
        keep = max(keep_versions_for, timedelta(milliseconds=1))
        with _translate("compact the vector table"):
            table = self._existing()
            if table is not None:
                table.optimize(cleanup_older_than=keep)

    # -- reads -------------------------------------------------------------
    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        wanted = _unique_ints(ids)
        if not wanted:
            return {}
        found: dict[int, Vector] = {}
        with _translate("read vectors", reading=True):
            table = self._existing()
            if table is None:
                return {}
            for part in _batches(wanted, _IN_BATCH):
                data = (
                    table.search()
                    .where(_in_predicate(part))
                    .select([_ID, _VECTOR])
                    .limit(None)
                    .to_arrow()
                )
                if data.num_rows == 0:
                    continue
                flat = data.column(_VECTOR).combine_chunks().flatten().to_numpy()
                rows = flat.reshape(data.num_rows, self._dimension).tolist()
                found.update(zip(data.column(_ID).to_pylist(), rows, strict=True))
        return found

    def ids(self) -> set[int]:
        with _translate("list vector ids", reading=True):
            table = self._existing()
            if table is None:
                return set()
            data = table.search().select([_ID]).limit(None).to_arrow()
            return set(data.column(_ID).to_pylist())

    def count(self) -> int:
        with _translate("count vectors", reading=True):
            table = self._existing()
            return 0 if table is None else table.count_rows()

    def search(
        self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first; ``allowed_ids`` filters before ``limit``."""
        if limit <= 0:
            return []
        query = self._query(vector)
        allowed = None if allowed_ids is None else _unique_ints(allowed_ids)
        if allowed is not None and not allowed:
            return []
        with _translate("search vectors", reading=True):
            table = self._existing()
            if table is None:
                return []
            if allowed is None:
                return _nearest(table, query, limit, None)
            if len(allowed) <= self._prefilter_max_ids:
                return _nearest(table, query, limit, _in_predicate(allowed))
            return _post_filtered(table, query, limit, set(allowed))

    # -- internals ---------------------------------------------------------
    def _table_dir(self) -> Path:
        return self._directory / f"{self._name}.lance"

    def _connect(self) -> DBConnection:
        if self._db is None:
            import lancedb

            self._db = lancedb.connect(self._directory, read_consistency_interval=timedelta(0))
        return self._db

    def _existing(self) -> Table | None:
        if not self._directory.is_dir():
            return None
        db = self._connect()
        if self._name not in db.list_tables().tables:
            return None
        table = db.open_table(self._name)
        self._check_dimension(table)
        return table

    def _create(self) -> Table:
        import pyarrow as pa

        self._directory.mkdir(parents=True, exist_ok=True)
        schema = pa.schema(
            [
                pa.field(_ID, pa.int64(), nullable=False),
                pa.field(_VECTOR, pa.list_(pa.float32(), self._dimension), nullable=False),
            ]
        )
        return self._connect().create_table(self._name, schema=schema, exist_ok=True)

    def _check_dimension(self, table: Table) -> None:
        import pyarrow as pa

        kind = table.schema.field(_VECTOR).type
        stored = kind.list_size if pa.types.is_fixed_size_list(kind) else None
        if stored != self._dimension:
            raise StoreError(
                f"the vector table in {self._directory} holds {stored}-dimensional vectors "
                f"but the embedding model makes {self._dimension}-dimensional ones; "
                "rebuild with `kb-mcp index --force`"
            )

    def _matrix(self, vectors: Sequence[Vector]) -> npt.NDArray[np.float32]:
        import numpy as np

        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except ValueError:
            matrix = None
        if matrix is None or matrix.ndim != 2 or matrix.shape[1] != self._dimension:
            sizes = sorted({len(v) for v in vectors} - {self._dimension})
            raise StoreError(
                f"vectors must have {self._dimension} dimensions, got vectors of {sizes}"
            )
        if not np.isfinite(matrix).all():
            raise StoreError("vectors must contain only finite numbers")
        return matrix

    def _query(self, vector: Vector) -> npt.NDArray[np.float32]:
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (self._dimension,):
            raise StoreError(
                f"query vector must have {self._dimension} dimensions, got {len(vector)}"
            )
        return query

    def _arrow_batch(
        self, keys: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32]
    ) -> pa.Table:
        import pyarrow as pa

        values = pa.array(matrix.reshape(-1), type=pa.float32())
        return pa.table(
            {
                _ID: pa.array(keys, type=pa.int64()),
                _VECTOR: pa.FixedSizeListArray.from_arrays(values, self._dimension),
            }
        )


def _nearest(
    table: Table, query: npt.NDArray[np.float32], k: int, where: str | None
) -> list[tuple[int, float]]:
    vector_query = cast("LanceVectorQueryBuilder", table.search(query, vector_column_name=_VECTOR))
    builder = vector_query.distance_type("cosine").limit(k).select([_ID, _DISTANCE])
    if where is not None:
        builder = builder.where(where, prefilter=True)
    data = builder.to_arrow()
    return [
        (chunk_id, min(1.0, max(-1.0, 1.0 - distance)))
        for chunk_id, distance in zip(
            data.column(_ID).to_pylist(), data.column(_DISTANCE).to_pylist(), strict=True
        )
    ]


def _post_filtered(
    table: Table, query: npt.NDArray[np.float32], limit: int, allowed: set[int]
) -> list[tuple[int, float]]:
    """Widen k until ``limit`` allowed hits are found or the whole table was ranked."""
    total = table.count_rows()
    if total == 0:
        return []
    share = min(1.0, len(allowed) / total)
    k = min(total, max(4 * limit, math.ceil(2 * limit / share)))
    while True:
        hits = _nearest(table, query, k, None)
        kept = [hit for hit in hits if hit[0] in allowed]
        if len(kept) >= limit or len(hits) < k or k >= total:
            return kept[:limit]
        k = min(total, 4 * k)


def _unique_ints(ids: Collection[int]) -> list[int]:
    return sorted({int(i) for i in ids})


def _batches(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _in_predicate(ids: list[int]) -> str:
    return f"{_ID} IN ({','.join(str(int(i)) for i in ids)})"


@contextlib.contextmanager
def _translate(action: str, *, reading: bool = False) -> Iterator[None]:
    """Turn LanceDB / Arrow / I/O failures and LanceDB panics into a one-line core error:
    ``VectorsUnreadable`` when ``reading``, else ``StoreError``."""
    try:
        yield
    except (RuntimeError, ValueError, OSError, KeyError, TypeError) as exc:
        raise _failure(action, _one_line(exc), reading) from exc
    except BaseException as exc:
        # pyo3's PanicException derives from BaseException; a panic in LanceDB's async
        # runtime arrives as RustPanic (an Exception). Neither is a bug of the caller.
        if _is_panic(exc):
            raise _failure(action, "LanceDB panicked reading its files", reading) from None
        if not isinstance(exc, Exception) or not _is_arrow_error(exc):
            raise
        raise _failure(action, _one_line(exc), reading) from exc


def _failure(action: str, detail: str, reading: bool) -> StoreError:
    if reading:
        return VectorsUnreadable(f"could not {action}: {detail}")
    return StoreError(f"could not {action}: {detail}")


def _is_panic(exc: BaseException) -> bool:
    kind = type(exc)
    return kind.__name__ in ("PanicException", "RustPanic") and kind.__module__.startswith("pyo3")


def _is_arrow_error(exc: BaseException) -> bool:
    import pyarrow as pa

    return isinstance(exc, pa.ArrowException)


def _raise(exc: OSError) -> None:
    raise exc


#: The Rust source location LanceDB appends to its messages: noise for a user.
_RUST_SOURCE = re.compile(r",\s*\S+\.rs:\d+:\d+\s*$")


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return _RUST_SOURCE.sub("", lines[0] if lines else type(exc).__name__)[:300]
