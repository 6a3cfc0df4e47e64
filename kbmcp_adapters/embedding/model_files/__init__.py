"""Model files shipped with kb-mcp so the default embedding model works offline."""
