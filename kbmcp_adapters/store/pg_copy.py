"""PostgreSQL's bulk write: a batch's rows into one table by one ``COPY``.

A batch of an index run writes thousands of chunks and their lexical rows in one
transaction. Sent as an ``executemany`` (a statement a row), each lexical row fired
PostgreSQL's posting trigger on its own; one ``COPY`` is one statement, so migration
0008's statement-level triggers post the whole batch at once (decision 0058's addendum
"PostgreSQL's first index"). The rows go through psycopg's own copy, inside the caller's
transaction; a failure is raised as SQLAlchemy's error, which the store translates as
any other (``engine.translated``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

__all__ = ["copy_rows"]


def copy_rows(conn: Connection, table: str, columns: Sequence[str],
              rows: Sequence[Mapping[str, object]], keys: Sequence[str] | None = None) -> None:
    """``COPY table (columns) FROM STDIN`` of ``rows`` (each row's ``keys``, in the order
    of ``columns``; the columns' names by default), in ``conn``'s transaction."""
    import psycopg

    names = list(keys or columns)
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    driver: Any = conn.connection.driver_connection  # psycopg's own connection
    cursor = driver.cursor()
    try:
        with cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(tuple(row[k] for k in names))
    except psycopg.Error as exc:
        raise DBAPIError.instance(statement, None, exc, psycopg.Error) from exc
    finally:
        cursor.close()
