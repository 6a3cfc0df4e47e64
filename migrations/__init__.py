"""Alembic migrations of the kb-mcp index store (shipped inside the wheel)."""
