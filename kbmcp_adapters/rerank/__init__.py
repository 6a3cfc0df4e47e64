"""Rerankers (the ``Reranker`` port). kb-mcp ships no cross-encoder model (decision 0016)."""
