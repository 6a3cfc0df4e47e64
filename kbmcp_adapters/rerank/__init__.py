"""Rerankers (the ``Reranker`` port) that need no model. The packaged cross-encoder lives
with the other packaged models in ``kbmcp_adapters.embedding.cross_encoder`` (decision 0016)."""
