"""Search evaluation: golden files, saved ``kb-mcp eval`` runs, ``kb-mcp tune``."""
