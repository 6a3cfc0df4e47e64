"""Where the index store lives, as one parsed value (issue 38 item 4, decision 0052).

The settings name the store as text: ``database_url``, or the index folder's SQLite file
(``Settings.store_url``). The store adapter parses that text once
(``kbmcp_adapters.store.urls.store_location``, the one place that knows URL syntax) into
this value, and whatever asks which kind of store it is, which file, which schema or how
to show it to a person reads the value instead of parsing the text again. Pure: no
database library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["StoreKind", "StoreLocation"]

StoreKind = Literal["sqlite", "postgresql"]


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """One index store's location. ``url`` opens it (password included: never shown, not
    in ``repr``); ``public`` is the URL as messages show it (password ``***``, a
    collection's schema named after it)."""

    kind: StoreKind
    url: str = field(repr=False)
    public: str
    #: SQLite's database file; None for PostgreSQL
    path: Path | None = None
    #: the PostgreSQL schema a collection's store sees alone; None for the default one
    schema: str | None = None
    #: whether ``url`` carries a password (a config line written from it would hold it)
    has_password: bool = False

    @property
    def is_postgresql(self) -> bool:
        return self.kind == "postgresql"

    @property
    def shown(self) -> str:
        """What a person is shown: SQLite's file, or the public URL."""
        return str(self.path) if self.path is not None else self.public

    def __str__(self) -> str:
        return self.shown
