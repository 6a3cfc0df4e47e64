"""Benchmarks for kb-mcp: `make bench` (or `python -m benchmarks.run`); see docs/benchmarks.md."""
