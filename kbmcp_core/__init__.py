"""kb-mcp core: pure domain models, ports, errors and use-cases (standard library only)."""
