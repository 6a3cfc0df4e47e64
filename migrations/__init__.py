"""Alembic migrations of the kb-mcp index store (shipped inside the wheel)."""

#: The newest revision in ``versions/``: a new migration sets it (a test compares it with
#: the head Alembic computes from the scripts, so a forgotten update fails the build).
HEAD = "0009"
