"""The reranker (the ``Reranker`` port): a packaged cross-encoder run by onnxruntime."""
