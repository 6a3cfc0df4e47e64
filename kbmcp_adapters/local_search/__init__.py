"""The local search channel: ``kb-mcp search`` answered by a running server (decision 0018)."""
