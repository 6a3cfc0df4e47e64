"""Helpers every embedder shares: error translation, unit vectors, length-bucketed batches."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from kbmcp_core.errors import ConfigError, EmbeddingUnavailable, KbError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from kbmcp_adapters.embedding.catalogue import PackagedModel

#: Padded tokens per text in a full batch: ``batch_size`` texts of 96 tokens, or fewer
#: longer ones (memory grows with tokens per batch, not with texts).
BATCH_TOKENS_PER_TEXT = 96


@contextlib.contextmanager
def translated(model: str, action: str, error: type[KbError] = EmbeddingUnavailable,
               noun: str = "embedding model") -> Iterator[None]:
    """Turn any library failure into ``error`` (``EmbeddingUnavailable``) naming the model."""
    try:
        yield
    except KbError:
        raise
    except Exception as exc:
        raise error(f"{noun} {model!r} could not {action}: {reason(exc)}") from exc


def onnx_session(data: bytes, threads: int | None, extensions: str | None = None) -> Any:
    """An onnxruntime CPU session on the (already checked) model bytes: ``threads`` for
    one operator (None: every core), one operator at a time; ``extensions`` is the path of
    a custom-operator library to register."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0
    options.inter_op_num_threads = 1
    if extensions is not None:
        options.register_custom_ops_library(extensions)
    return ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])


def reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


def unit(rows: Any) -> NDArray[Any]:
    """Rows scaled to unit length (a zero row stays zero)."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return cast("NDArray[Any]", matrix / np.maximum(norms, 1e-12))


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indexes grouped so similar lengths sit together: each batch pads only to its own
    longest text and holds at most ``batch_size`` texts and ``batch_size * 96`` padded
    tokens, so long texts come in smaller batches (peak memory follows tokens)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    budget = batch_size * BATCH_TOKENS_PER_TEXT
    batches: list[list[int]] = [[]]
    for i in order:
        batch = batches[-1]
        if batch and (len(batch) >= batch_size or (len(batch) + 1) * lengths[i] > budget):
            batches.append(batch := [])
        batch.append(i)
    return [b for b in batches if b]


class PackagedEmbedderBase:
    """What every packaged model's embedder shares: checked batch and thread settings, a
    load lock, and the model facts (id, dimension, window) from its registry entry."""

    def __init__(self, model: PackagedModel, batch_size: int = 32,
                 threads: int | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ConfigError(f"embedding threads must be at least 1, got {threads}")
        self._spec = model
        self._batch_size = batch_size
        self._threads = threads
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._spec.name

    @property
    def dimension(self) -> int:
        return self._spec.dimension

    @property
    def max_tokens(self) -> int:
        return self._spec.max_tokens
