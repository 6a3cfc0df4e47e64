"""The MiniLM files run on onnxruntime directly: fastembed's tokenizer, session and pooling,
without importing fastembed (decision 0057).

fastembed costs a fresh process about half a second of imports (its image, sparse and
late-interaction models, ``huggingface_hub``) before it opens a model file it is only
handed. For the two MiniLM files kb-mcp ships (the packaged one and its integer copy,
``quantize``) this module builds what fastembed would: the tokenizer set up from the
same files (truncation at the configured window, padding to the batch's longest, the
special tokens registered), the same session options (every graph optimisation, the
thread count, the CPU arena), the same inputs and the same post-processing (a mean over
the attention mask in float64, scaled to unit length, cast back to float32). The vectors
are bit for bit fastembed's (``tests/integration/test_minilm_runner.py`` holds them to it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

__all__ = ["MiniLMRunner", "load_tokenizer"]


class MiniLMRunner:
    """One onnxruntime session on a MiniLM file, with the tokenizer fastembed would use."""

    def __init__(self, onnx_file: Path, threads: int | None, cpu_mem_arena: bool) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        options.enable_cpu_mem_arena = cpu_mem_arena
        self.tokenizer = load_tokenizer(onnx_file.parent)
        self.session: InferenceSession = ort.InferenceSession(
            str(onnx_file), providers=["CPUExecutionProvider"], sess_options=options)
        self._inputs = frozenset(node.name for node in self.session.get_inputs())

    def tokenize(self, texts: Sequence[str]) -> list[Encoding]:
        return self.tokenizer.encode_batch(list(texts))

    def hidden(self, texts: Sequence[str]) -> tuple[NDArray[Any], NDArray[Any]]:
        """The token states of one run over ``texts`` (padded to the longest), and the mask."""
        import numpy as np

        encoded = self.tokenize(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return self.session.run(None, feed)[0], mask

    def passage_embed(self, texts: Sequence[str], batch_size: int = 256,
                      ) -> Iterator[NDArray[Any]]:
        """One unit vector per text, ``batch_size`` texts per run (fastembed's call)."""
        for start in range(0, len(texts), batch_size):
            yield from self.embed(texts[start:start + batch_size])

    def query_embed(self, texts: Sequence[str]) -> Iterator[NDArray[Any]]:
        """The same vectors for queries: the MiniLM files take no prefix."""
        return self.passage_embed(texts)

    def embed(self, texts: Sequence[str]) -> Iterator[NDArray[Any]]:
        """One unit vector per text, from one run over all of them."""
        import numpy as np

        states, mask = self.hidden(texts)
        summed = np.sum(states, axis=1, where=mask[:, :, np.newaxis].astype(bool),
                        dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return iter((pooled / norms).astype(states.dtype, copy=False))


def load_tokenizer(folder: Path) -> Tokenizer:
    """The model's tokenizer as fastembed sets it up from ``folder``'s files: truncated at
    the stricter of ``model_max_length`` and ``max_length``, the special tokens registered,
    padded on the configured side to the longest text of a batch."""
    from tokenizers import AddedToken, Tokenizer

    config = _json(folder / "tokenizer_config.json")
    model_config = _json(folder / "config.json") if (folder / "config.json").is_file() else {}
    specials = _json(folder / "special_tokens_map.json") \
        if (folder / "special_tokens_map.json").is_file() else {}
    limits = [v for v in (config.get("model_max_length"), config.get("max_length"))
              if isinstance(v, int) and 0 < v < 10**9]
    if not limits:
        raise ValueError(f"no maximum context length in {folder / 'tokenizer_config.json'}")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(max_length=min(limits), direction=config.get(
        "truncation_side") or truncation.get("direction", "right"))
    for value in specials.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or config.get("pad_token")
    pad_id = padding.get("pad_id", model_config.get("pad_token_id"))
    if pad_id is None and pad_token is not None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_token is None or pad_id is None:
        raise ValueError(f"no pad token in {folder}")
    tokenizer.enable_padding(direction=config.get("padding_side") or padding.get(
        "direction", "right"), pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token, pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None)
    return tokenizer


def _json(path: Path) -> dict[str, Any]:
    found = json.loads(path.read_text(encoding="utf-8"))
    return found if isinstance(found, dict) else {}
