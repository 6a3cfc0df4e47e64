"""The rows a write hands LanceDB: ids, vectors and labels checked (one dimension, finite
numbers, the last of a repeated id kept) and laid out as the table's columns, with the
label columns when the table has them (decision 0058's addendum)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbmcp_adapters.vectors import labels as label_columns
from kbmcp_adapters.vectors.nearest import ID, VECTOR
from kbmcp_core.chunk_labels import ChunkLabels
from kbmcp_core.errors import StoreError
from kbmcp_core.models import Vector

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from lancedb.table import Table

    #: chunk ids, their vectors (rows) and their labels (None: written without)
    Checked = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], list[ChunkLabels] | None]

__all__ = ["arrow_rows", "checked", "query_of"]


def checked(action: str, ids: Sequence[int], vectors: Sequence[Vector],
            labels: Sequence[ChunkLabels] | None, dimension: int) -> Checked | None:
    """The rows to write (the last of a repeated id kept), checked; None when empty."""
    if len(ids) != len(vectors) or (labels is not None and len(labels) != len(ids)):
        given = "" if labels is None else f" and {len(labels)} labels"
        raise StoreError(f"{action} got {len(ids)} ids but {len(vectors)} vectors{given}")
    if not ids:
        return None
    import numpy as np

    matrix = _matrix(vectors, dimension)
    keys = np.asarray(ids, dtype=np.int64)
    kept = None if labels is None else list(labels)
    _, last_in_reversed = np.unique(keys[::-1], return_index=True)
    if len(last_in_reversed) != len(keys):
        keep = np.sort(len(keys) - 1 - last_in_reversed)
        keys, matrix = keys[keep], matrix[keep]
        kept = None if kept is None else [kept[i] for i in keep.tolist()]
    return keys, matrix, kept


def _matrix(vectors: Sequence[Vector], dimension: int) -> npt.NDArray[np.float32]:
    import numpy as np

    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except ValueError:
        matrix = None
    if matrix is None or matrix.ndim != 2 or matrix.shape[1] != dimension:
        sizes = sorted({len(v) for v in vectors} - {dimension})
        raise StoreError(f"vectors must have {dimension} dimensions, got vectors of {sizes}")
    if not np.isfinite(matrix).all():
        raise StoreError("vectors must contain only finite numbers")
    return matrix


def query_of(vector: Vector, dimension: int) -> npt.NDArray[np.float32]:
    """A query vector as LanceDB takes it, checked."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    if query.shape != (dimension,):
        raise StoreError(f"query vector must have {dimension} dimensions, got {len(vector)}")
    return query


def arrow_rows(table: Table, rows: Checked, dimension: int) -> pa.Table:
    """The rows in the table's layout: with the label columns when it has them (nulls
    without labels); a table made before labels takes ids and vectors alone."""
    import pyarrow as pa

    keys, matrix, labels = rows
    values = pa.array(matrix.reshape(-1), type=pa.float32())
    columns = {
        ID: pa.array(keys, type=pa.int64()),
        VECTOR: pa.FixedSizeListArray.from_arrays(values, dimension),
    }
    if label_columns.has_columns(table.schema):
        columns |= label_columns.arrays(labels, len(keys))
    return pa.table(columns)
