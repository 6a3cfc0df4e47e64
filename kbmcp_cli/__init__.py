"""The kb-mcp command line: a thin click front over the composition root."""
