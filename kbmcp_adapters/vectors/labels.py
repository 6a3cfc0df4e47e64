"""The chunk labels in the LanceDB vector table (decision 0058's addendum, "filters in the
vector table"): their columns, their scalar indexes, and a ``LabelFilter`` as LanceDB's
predicate, so a filtered search hands LanceDB a test on indexed columns, not a list of ids.

A table made before labels existed has only ``chunk_id`` and ``vector``; ``relabel`` adds
the columns (nulls), and a row whose ``folders`` is null carries no labels. A table is
*labelled* when it has the columns and no such row: only then may a search filter by them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import AsyncTable, Table

__all__ = ["COLUMNS", "FOLDERS", "arrays", "ensure_indexes", "fields", "has_columns",
           "predicate", "unlabelled_rows"]

FOLDERS = "folders"
TAGS = "tags"
DAY = "day"
CATEGORY = "category"
TOPIC = "topic"
COLUMNS = (FOLDERS, TAGS, DAY, CATEGORY, TOPIC)
#: each column's scalar index: a list of labels (any / all of them), a range of dates, and
#: few distinct values (LanceDB 0.40's ``LabelList``, ``BTree``, ``Bitmap``)
_INDEXES = {FOLDERS: "LabelList", TAGS: "LabelList", DAY: "BTree", CATEGORY: "Bitmap",
            TOPIC: "Bitmap"}


def fields() -> list[pa.Field]:
    """The label columns as the table declares them (nullable: null is "no labels")."""
    import pyarrow as pa

    text = pa.list_(pa.string())
    return [pa.field(FOLDERS, text), pa.field(TAGS, text), pa.field(DAY, pa.string()),
            pa.field(CATEGORY, pa.string()), pa.field(TOPIC, pa.string())]


def has_columns(schema: pa.Schema) -> bool:
    """Whether a table of this schema has the label columns (made, or upgraded, with
    labels)."""
    names = set(schema.names)
    return all(c in names for c in COLUMNS)


def arrays(labels: Sequence[ChunkLabels] | None, rows: int) -> dict[str, pa.Array]:
    """The label columns of ``rows`` rows: ``labels`` in order, or nulls when None."""
    import pyarrow as pa

    kinds = {f.name: f.type for f in fields()}
    if labels is None:
        return {c: pa.nulls(rows, type=kinds[c]) for c in COLUMNS}
    if len(labels) != rows:
        raise ValueError(f"{rows} rows but {len(labels)} labels")
    return {
        FOLDERS: pa.array([list(x.folders) for x in labels], type=kinds[FOLDERS]),
        TAGS: pa.array([list(x.tags) for x in labels], type=kinds[TAGS]),
        DAY: pa.array([x.day for x in labels], type=pa.string()),
        CATEGORY: pa.array([x.category for x in labels], type=pa.string()),
        TOPIC: pa.array([x.topic for x in labels], type=pa.string()),
    }


async def unlabelled_rows(table: AsyncTable, schema: pa.Schema, rows: int) -> int:
    """Rows that carry no labels (every one of the ``rows`` of a table without the
    columns), on LanceDB's event loop."""
    if not has_columns(schema):
        return rows
    return await table.count_rows(f"{FOLDERS} IS NULL")


def predicate(where: LabelFilter) -> str:
    """``where`` as LanceDB's SQL predicate on the label columns (``LabelFilter.matches``:
    null compares false, so an undated chunk is out of a date range)."""
    tests: list[str] = []
    if where.folders_any:
        tests.append(f"array_has_any({FOLDERS}, {_list(where.folders_any)})")
    if where.tags_any:
        tests.append(f"array_has_any({TAGS}, {_list(where.tags_any)})")
    if where.tags_all:
        tests.append(f"array_has_all({TAGS}, {_list(where.tags_all)})")
    if where.day_from is not None:
        tests.append(f"{DAY} >= {_text(where.day_from)}")
    if where.day_to is not None:
        tests.append(f"{DAY} <= {_text(where.day_to)}")
    if where.category is not None:
        tests.append(f"{CATEGORY} = {_text(where.category)}")
    if where.topic is not None:
        tests.append(f"{TOPIC} = {_text(where.topic)}")
    return " AND ".join(tests) or "true"


def ensure_indexes(table: Table) -> None:
    """Give each label column its scalar index, if the table has the columns and the
    column no index yet (``optimize`` keeps them up to date afterwards)."""
    if not has_columns(table.schema):
        return
    from lancedb import index

    indexed = {tuple(i.columns) for i in table.list_indices()}
    for column, kind in _INDEXES.items():
        if (column,) not in indexed:
            table.create_index(column, config=getattr(index, kind)(), name=f"{column}_idx")


def _text(value: str) -> str:
    """A SQL string literal (a quote doubled; no other escape applies)."""
    return "'" + value.replace("'", "''") + "'"


def _list(values: Sequence[str]) -> str:
    return "[" + ", ".join(_text(v) for v in values) + "]"
