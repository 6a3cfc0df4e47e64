"""The ``document_fields`` rows: written with their document, and filters on them as SQL.

Rows live and die with their document (every write path deletes a document's rows before
it writes new ones); ``replace`` rewrites them for documents that stay, which is how an
index run fills a field declared after the documents were written (decision 0036). A
condition is ``documents.id IN`` the documents with a matching row (``NOT IN`` for
``fields_not``), in the column of the field's type; values compare exactly as
``FieldCondition.holds`` says, on both databases, because text was folded before it was
stored and is folded the same way in the request.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.tables import document_fields, field_rows
from kbmcp_adapters.store.tables import documents as document_table
from kbmcp_core.field_filters import FieldCondition
from kbmcp_core.fields import FieldValue
from kbmcp_core.models import DocumentFilter, DocumentRecord

__all__ = ["delete_all", "delete_for", "replace", "where", "write"]

#: Ids per IN clause (as the store's own batches).
_BATCH = 500
_COLUMNS = {"text": "value_text", "number": "value_num", "day": "value_date"}
_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def write(conn: Connection, owned: Sequence[tuple[int, DocumentRecord]]) -> None:
    """The rows of freshly written documents ((document id, record) pairs)."""
    rows = [row for doc_id, record in owned for row in field_rows(doc_id, record)]
    if rows:
        conn.execute(insert(document_fields), rows)


def delete_for(conn: Connection, document_ids: Collection[int]) -> None:
    """Drop the rows of these documents."""
    ids = list(document_ids)
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        conn.execute(delete(document_fields).where(document_fields.c.document_id.in_(batch)))


def replace(conn: Connection, by_path: Mapping[str, Sequence[FieldValue]]) -> int:
    """Rewrite the rows of the documents at these paths; returns documents found."""
    paths = sorted(by_path)
    ids: dict[str, int] = {}
    for start in range(0, len(paths), _BATCH):
        batch = paths[start : start + _BATCH]
        query = select(document_table.c.path, document_table.c.id).where(
            document_table.c.path.in_(batch))
        ids.update({str(p): int(i) for p, i in conn.execute(query)})
    delete_for(conn, list(ids.values()))
    rows = [{"document_id": ids[path], "name": f.name, "value_text": f.text,
             "value_num": f.number, "value_date": f.day}
            for path, values in by_path.items() if path in ids for f in values]
    if rows:
        conn.execute(insert(document_fields), rows)
    return len(ids)


def delete_all(conn: Connection) -> None:
    """Every row (no field is declared any more)."""
    conn.execute(delete(document_fields))


def where(spec: DocumentFilter, params: dict[str, object]) -> list[str]:
    """SQL conditions on ``documents`` for the field filters of ``spec`` (their
    parameters are added to ``params``)."""
    clauses: list[str] = []
    for prefix, found, negate in (("fw", spec.fields, False), ("fn", spec.fields_not, True)):
        for n, condition in enumerate(found):
            test = _exists(f"{prefix}{n}", condition, params)
            clauses.append(f"NOT ({test})" if negate else test)
    return clauses


def _exists(key: str, condition: FieldCondition, params: dict[str, object]) -> str:
    column = f"f.{_COLUMNS[condition.column]}"
    params[f"{key}_name"] = condition.name
    tests = [f"f.name = :{key}_name"]
    if condition.values:
        marks = []
        for i, value in enumerate(condition.values):
            params[f"{key}_v{i}"] = value
            marks.append(f":{key}_v{i}")
        tests.append(f"{column} IN ({', '.join(marks)})")
    for op, bound in condition.bounds:
        params[f"{key}_{op}"] = bound
        tests.append(f"{column} {_OPERATORS[op]} :{key}_{op}")
    # not a correlated EXISTS: the set of documents is found once, through the index on
    # (name, value), instead of once per document (seconds on 10,000 documents)
    return ("documents.id IN (SELECT f.document_id FROM document_fields AS f "
            f"WHERE {' AND '.join(tests)})")
