"""The store location: the store URL parsed once into one value (decision 0052 addendum)
that says which kind of store, which file or schema, and how to show it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import settings_for, store_of
from kbmcp_adapters.store.pg_schema import schema_url
from kbmcp_adapters.store.urls import store_location
from kbmcp_core.errors import ConfigError

PG = "postgresql+psycopg://kb:hunter2secret@db.example:5432/kb"


def test_a_postgresql_url_is_parsed_with_its_password_kept_out_of_sight() -> None:
    where = store_location(PG)
    assert where.is_postgresql and where.path is None and where.schema is None
    assert where.public == "postgresql+psycopg://kb:***@db.example:5432/kb"
    assert where.has_password and where.url == PG
    assert "hunter2secret" not in repr(where) and "hunter2secret" not in str(where)


def test_a_collection_s_schema_is_read_from_its_url() -> None:
    where = store_location(schema_url("postgresql://kb@db.example/kb", "kb_docs"))
    assert where.schema == "kb_docs" and not where.has_password
    assert where.public.endswith(" (schema kb_docs)")


def test_a_sqlite_url_names_its_file(tmp_path: Path) -> None:
    where = store_location(f"sqlite:///{tmp_path}/index.db")
    assert where.kind == "sqlite" and where.path == tmp_path / "index.db"
    assert where.shown == str(tmp_path / "index.db")


def test_the_settings_store_is_parsed_once(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, None)
    assert store_of(settings) is store_of(settings)
    assert store_of(settings).path == settings.sqlite_path


@pytest.mark.parametrize("url", ["mysql://kb@db/kb", "sqlite://", "not a url", ""])
def test_a_url_kb_mcp_cannot_open_is_refused_in_one_line(url: str) -> None:
    with pytest.raises(ConfigError, match="database_url") as refused:
        store_location(url)
    assert "\n" not in str(refused.value)
