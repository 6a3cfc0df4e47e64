"""The MiniLM files opened on onnxruntime directly give fastembed's vectors bit for bit
(decision 0057): queries, documents one at a time and in padded batches, truncated long
texts, and the token states the paragraphs in context are pooled from."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbmcp_adapters.embedding.common import unit
from kbmcp_adapters.embedding.fastembed_embedder import (
    DEFAULT_DIMENSION,
    DEFAULT_MODEL_ID,
    PACKAGED_MODEL_ID,
    FastEmbedEmbedder,
)
from kbmcp_adapters.embedding.minilm_runner import MiniLMRunner

TEXTS = [
    "how do I rotate the backup keys",
    "Retention policy: nightly snapshots are kept for 30 days, weekly ones for a year.",
    "短い日本語の文と English words mixed",
    "",
    "word " * 400,  # past the 256-token window: truncated the same way
    "The deployment runbook lists every step.\n\n- check the queue\n- drain the workers",
]


def _fastembed(name: str, onnx_file: Path, cache: Path, threads: int | None) -> Any:
    """fastembed's own model on the same file, as kb-mcp opened it before decision 0057."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with contextlib.suppress(ValueError):  # registered already in this process
        TextEmbedding.add_custom_model(
            model=name, pooling=PoolingType.MEAN, normalization=True,
            sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
            dim=DEFAULT_DIMENSION, model_file=onnx_file.name)
    return TextEmbedding(name, cache_dir=str(cache), threads=threads, local_files_only=True,
                         enable_cpu_mem_arena=True, specific_model_path=str(onnx_file.parent))


@pytest.mark.parametrize("name", [PACKAGED_MODEL_ID, DEFAULT_MODEL_ID])
def test_the_direct_runner_gives_fastembeds_vectors_bit_for_bit(
        name: str, model_cache: Path) -> None:
    cache = model_cache
    embedder = FastEmbedEmbedder(name, cache_dir=cache)
    onnx_file = embedder._resolve_minilm()
    for threads in (None, 1):
        ours = MiniLMRunner(onnx_file, threads, cpu_mem_arena=True)
        theirs = _fastembed(name, onnx_file, cache, threads)
        for text in TEXTS:
            assert np.array_equal(next(iter(ours.query_embed([text]))),
                                  next(iter(theirs.query_embed([text]))))
            states, _mask = ours.hidden([text])
            assert np.array_equal(states[0], theirs.model.onnx_embed([text]).model_output[0])
            assert ours.tokenize([text])[0].offsets == theirs.model.tokenize([text])[0].offsets
        batch = TEXTS[:3] + TEXTS[5:]  # padded to the longest of the batch
        assert np.array_equal(np.stack(list(ours.passage_embed(batch, batch_size=len(batch)))),
                              np.stack(list(theirs.passage_embed(batch,
                                                                 batch_size=len(batch)))))


def test_a_search_process_imports_no_fastembed(model_cache: Path) -> None:
    """The default model embeds a query and a document in a process that never imports
    fastembed (its imports cost a fresh ``kb-mcp search`` about half a second)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder\n"
        f"e = FastEmbedEmbedder(cache_dir=Path({str(model_cache)!r}))\n"
        "assert len(e.embed_query('backup keys')) == 384\n"
        "assert len(e.embed_documents(['one text', 'another'])) == 2\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'fastembed'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=300)
    assert done.stdout.strip() == "[]"


def test_a_query_is_embedded_on_the_session_the_paragraphs_use(model_cache: Path) -> None:
    """One session per search process: the query's vector is the same on one thread as on
    every core, so the one-thread session of the paragraphs in context embeds it too."""
    embedder = FastEmbedEmbedder(cache_dir=model_cache)
    onnx_file = embedder._resolve_minilm()
    every_core = MiniLMRunner(onnx_file, None, cpu_mem_arena=True)
    for text in TEXTS:
        row = next(iter(every_core.query_embed([text])))
        assert embedder.embed_query(text) == unit([row])[0].tolist()
    embedder.embed_spans([(TEXTS[1], [[(0, 20)]])])
    assert embedder._model is None  # no second session was opened
