"""In-process tests of the kb-mcp command line (click CliRunner)."""
