"""The index store port on SQLAlchemy + SQLite (FTS5), migrated by Alembic."""
