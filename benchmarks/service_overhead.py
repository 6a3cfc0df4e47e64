"""The embedding-service provider's overhead per chunk against calling the same server directly.

One loopback server (tests/embedding_server.py) answers ``POST /v1/embeddings``; the same
texts (paragraphs of the repository's docs, ~150 words each: a chunk) go to it in batches of
32 two ways, alternating: ``ServiceEmbedder.embed_documents`` (prefix, cut, checks, unit
length, the retry loop) and a bare ``urllib`` POST that only decodes the JSON. Measured
twice: with the packaged model computing the vectors (what a user sees: the model's time
dominates) and with the tests' hashing stand-in (the client's own cost laid bare). The
ratio is provider time over direct time; the overhead is their difference per chunk.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.embed_speed import texts
from benchmarks.report import Row, verdict

BATCH = 32
#: The provider may cost at most this much more than a bare POST with the real model.
TARGET = 1.10


def _direct(url: str, sample: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(sample), BATCH):
        body = json.dumps({"model": "all-minilm", "input": sample[start:start + BATCH]})
        request = urllib.request.Request(url + "/embeddings", data=body.encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            rows = json.loads(response.read())["data"]
        assert len(rows) == len(sample[start:start + BATCH])
    return time.perf_counter() - started


def _one(server_embedder: Any, counter: Any, sample: list[str], rounds: int) -> dict[str, Any]:
    from kbmcp_adapters.embedding.service_config import ServiceConfig
    from kbmcp_adapters.embedding.service_embedder import ServiceEmbedder
    from tests.embedding_server import EmbeddingServer

    with EmbeddingServer(server_embedder) as server:
        provider = ServiceEmbedder(ServiceConfig(
            base_url=server.base_url, document_model="all-minilm", query_model="all-minilm",
            dimension=384, batch_size=BATCH, timeout_s=120.0), counter)
        provider.embed_documents(sample[:2])  # warm: the model loads, the port opens
        _direct(server.base_url, sample[:2])
        direct, through = [], []
        for _ in range(rounds):
            direct.append(_direct(server.base_url, sample))
            started = time.perf_counter()
            assert len(provider.embed_documents(sample)) == len(sample)
            through.append(time.perf_counter() - started)
    d, p = statistics.median(direct), statistics.median(through)
    return {"direct_s": direct, "provider_s": through, "ratio": p / d,
            "overhead_ms_per_chunk": (p - d) * 1000 / len(sample)}


def measure(work: Path, quick: bool = False) -> dict[str, Any]:
    from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
    from tests.hashing_embedder import HashingEmbedder

    sample = texts(64 if quick else 480)
    rounds = 1 if quick else 3
    model = FastEmbedEmbedder(cache_dir=work / "service-models")
    return {"texts": len(sample), "batch": BATCH,
            "model": _one(model, model, sample, rounds),
            "standin": _one(HashingEmbedder(dimension=384), model, sample, rounds * 3)}


def rows(result: Any) -> list[Row]:
    if not isinstance(result, dict) or "model" not in result:
        return []
    n, real, bare = result["texts"], result["model"], result["standin"]
    return [
        Row(f"embedding service, provider / direct POST ({n} chunks, model)",
            f"{real['ratio']:.3f}x", f"{real['overhead_ms_per_chunk']:+.2f} ms/chunk",
            f"<= {TARGET}x", verdict(real["ratio"] <= TARGET)),
        Row("embedding service, provider / direct POST (hashing stand-in)",
            f"{bare['ratio']:.3f}x", f"{bare['overhead_ms_per_chunk']:+.3f} ms/chunk", "", ""),
    ]


if __name__ == "__main__":
    import sys

    print(json.dumps(measure(Path(sys.argv[1]), quick="--quick" in sys.argv), indent=1))
