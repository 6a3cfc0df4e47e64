"""The Embedder port for the offline default model (its MiniLM files on onnxruntime directly,
``minilm_runner``) or a fastembed catalogue model, loaded lazily."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kbmcp_adapters.embedding import quantize
from kbmcp_adapters.embedding.catalogue_files import (
    DEFAULT_MODEL_ID,
    PACKAGED_MODEL_ID,
    fetch_catalogue_files,
    window_of,
)
from kbmcp_adapters.embedding.checksums import verify as _verify
from kbmcp_adapters.embedding.common import BATCH_TOKENS_PER_TEXT, length_batches
from kbmcp_adapters.embedding.common import translated as _translated
from kbmcp_adapters.embedding.common import unit as _unit
from kbmcp_adapters.embedding.minilm_files import (
    ASSEMBLED_DIR,
    MODEL_FILES,
    MODEL_SHA256,
    REINSTALL_KB,
    TOKENIZER_SHA256,
    catalogue_models,
    default_cache_dir,
    find_in_catalogue,
    minilm_file,
)
from kbmcp_adapters.embedding.minilm_runner import MiniLMRunner
from kbmcp_adapters.embedding.spans import Recent, RecentSpans, pool_spans
from kbmcp_adapters.embedding.wordpiece_count import WordPieceCounter
from kbmcp_core.cjk import readable_share
from kbmcp_core.errors import ConfigError
from kbmcp_core.models import Vector
from kbmcp_core.ports import SpanGroup

__all__ = ["BATCH_TOKENS_PER_TEXT", "DEFAULT_MODEL_ID", "INTEGER_MODEL_ID", "PACKAGED_MODEL_ID",
           "FastEmbedEmbedder"]

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from fastembed import TextEmbedding
    from tokenizers import Tokenizer

    #: fastembed's model for a catalogue name, the direct runner for a MiniLM file
    TextModel = TextEmbedding | MiniLMRunner

#: ``PACKAGED_MODEL_ID``: all-MiniLM-L6-v2 with int8 weights, shipped by pip (the file casts
#: its weights back to float: float matrix products). ``INTEGER_MODEL_ID``, the default for a
#: new index since decision 0046: the same model from an integer copy of that file made once
#: on this machine (``quantize``): about 2x the throughput per core; its vectors differ
#: slightly, so it is a model identity of its own, and it falls back to the packaged file (and
#: its identity) when the copy cannot be made.
INTEGER_MODEL_ID = DEFAULT_MODEL_ID
_MINILM = {name.lower(): name for name in (PACKAGED_MODEL_ID, INTEGER_MODEL_ID)}
DEFAULT_DIMENSION = 384
DEFAULT_MAX_TOKENS = 256
#: query texts whose vectors are remembered (``embed_query``; about 3 MB at most)
RECENT_QUERIES = 256
# onnxruntime's CPU arena keeps the peak of every batch shape it has seen. Batches are bucketed
# by length, so the peak is one full batch; turning the arena off saves ~20 % memory but costs
# ~30 % speed on this model, so it stays on.
_CPU_MEM_ARENA = True


class FastEmbedEmbedder:
    """Embeds text with fastembed. Nothing is read, downloaded or loaded until first needed."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL_ID,
        cache_dir: Path | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        text_pool: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ConfigError(f"embedding threads must be at least 1, got {threads}")
        self._name = model_name.strip()
        #: which MiniLM file is asked for (None: a catalogue model); the integer copy may
        #: fall back to the packaged file, and its identity with it (``_resolve_minilm``)
        self._minilm: str | None = _MINILM.get(self._name.lower())
        self._is_default = self._minilm is not None
        self._minilm_file: Path | None = None
        self._resolve_lock = threading.Lock()  # taken inside ``_lock`` by the model load
        self._identity_told = False  # once told, the integer copy cannot fall back silently
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._batch_size = batch_size
        self._threads = threads
        #: a MiniLM file's documents one text per model run, several at once
        #: (``_embed_pooled``); False: length-bucketed batches of ``batch_size`` (one text
        #: per run for the integer copy, on the session with every thread)
        self._text_pool = text_pool
        self._lock = threading.Lock()
        self._description: dict[str, Any] | None = None
        self._files_dir: Path | None = None
        self._tokenizer: Tokenizer | None = None
        self._counter: WordPieceCounter | None = None
        self._max_tokens: int | None = DEFAULT_MAX_TOKENS if self._is_default else None
        self._model: TextModel | None = None
        self._pool_model: TextModel | None = None  # one intra-op thread, shared by the pool
        self._spans = RecentSpans()  # paragraphs read in context lately (``embed_spans``)
        self._recent_queries: Recent[str, tuple[float, ...]] = Recent(RECENT_QUERIES)

    # -- identity: answered without loading anything ----------------------------------------
    @property
    def model_id(self) -> str:
        """The identity the index records. ``INTEGER_MODEL_ID`` stays itself unless its copy
        is known not to be available here (``quantize.usable``); then the vectors come from
        the packaged file and the identity says so, so an index never mixes the two."""
        if self._minilm == INTEGER_MODEL_ID:
            with self._resolve_lock:
                if self._minilm_file is None and not quantize.usable(
                        self._cache_dir / ASSEMBLED_DIR, MODEL_SHA256):
                    log.warning("embedding model %s is not available here (the onnx package "
                                "is missing, or making its copy failed before); using %s",
                                INTEGER_MODEL_ID, PACKAGED_MODEL_ID)
                    self._minilm = PACKAGED_MODEL_ID
                self._identity_told = True
        return self._minilm or str(self._catalogue_entry()["model"])

    @property
    def dimension(self) -> int:
        return DEFAULT_DIMENSION if self._is_default else int(self._catalogue_entry()["dim"])

    @property
    def max_tokens(self) -> int:
        if self._max_tokens is None:
            with self._lock:
                if self._max_tokens is None:
                    self._max_tokens = window_of(self._ensure_files())
        return self._max_tokens

    # -- the port ----------------------------------------------------------------------------
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        tokenizer = self._tokenizer or self._load_tokenizer()
        with _translated(self._name, "count tokens"):
            if len(texts) == 1:  # the chunker's case: one section at a time, no batch overhead
                if self._counter is not None and (n := self._counter.count(texts[0])) is not None:
                    return [n]  # wordpiece_count: the same number, without the tokenizer
                return [len(tokenizer.encode(texts[0]).ids)]
            return [len(encoding.ids) for encoding in tokenizer.encode_batch(list(texts))]

    def coverage(self, text: str) -> float:
        """How much of ``text`` this model can read. The default model (and any catalogue
        model not marked multilingual) was trained on English: Chinese, Japanese and
        Korean characters carry no meaning for it, so they count as unread."""
        if self._multilingual():
            return 1.0
        return readable_share(text)

    def _multilingual(self) -> bool:
        if self._is_default:
            return False
        for d in catalogue_models():
            if str(d["model"]).lower() == self._name.lower():
                about = f"{d['model']} {d.get('description', '')}".lower()
                return "multilingual" in about or "multi-lingual" in about
        return False

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        if self._text_pool and self._minilm is not None:  # either MiniLM file (0044, 0046)
            return self._embed_pooled(texts)
        model = self._model or self._load_model()
        window = self.max_tokens
        lengths = [min(n, window) for n in self.count_tokens(texts)]
        # The integer copy quantizes activations with one scale per run: a text batched with
        # others would get a vector that depends on them (cosine ~0.99 to its own query).
        # One text per run keeps a vector a function of its text, and pads nothing
        # (measured faster per core than batches of 32; decision 0031).
        per_run = 1 if self._runs_integer_copy() else self._batch_size
        batches = length_batches(lengths, per_run)
        with _translated(self._name, "embed documents"):
            import numpy as np

            rows: list[Any] = []
            for batch in batches:
                rows += list(model.passage_embed([texts[i] for i in batch],
                                                 batch_size=len(batch)))
            vectors = _unit(rows)
            order = [i for batch in batches for i in batch]
            restored = np.empty_like(vectors)
            restored[np.asarray(order)] = vectors
            return cast(list[Vector], restored.tolist())

    def _embed_pooled(self, texts: Sequence[str]) -> list[Vector]:
        """One text per model run, nothing padded, so each vector is bit for bit the batched
        route's (the packaged file computes row by row in float; padding is masked out), and
        the integer copy's is the one its query gets (it runs one text per run anyway;
        measured bit-identical on one-thread sessions, decision 0046). A run of one
        text gives too little work to share between threads, so the session has one thread
        and the cores are used by running several texts at once (onnxruntime runs a session
        from several threads and releases the GIL meanwhile; decision 0044)."""
        model = self._pool_model or self._load_pool_model()
        window = self.max_tokens
        lengths = [min(n, window) for n in self.count_tokens(texts)]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])  # longest first: even ends

        def one(i: int) -> Any:
            return next(iter(model.passage_embed([texts[i]], batch_size=1)))

        workers = min(len(texts), self._threads or _cores())
        with _translated(self._name, "embed documents"):
            import numpy as np

            if workers == 1:
                rows = [one(i) for i in order]
            else:
                pool = ThreadPoolExecutor(workers, thread_name_prefix="kb-mcp-embed")
                try:
                    rows = list(pool.map(one, order))
                finally:  # an interrupt waits for the runs under way, not for the queue
                    pool.shutdown(wait=True, cancel_futures=True)
            vectors = _unit(rows)
            restored = np.empty_like(vectors)
            restored[np.asarray(order)] = vectors
            return cast(list[Vector], restored.tolist())

    def embed_spans(self, items: Sequence[tuple[str, Sequence[SpanGroup]]],
                    ) -> list[list[Vector | None]] | None:
        """Parts of texts read in context (``SpanEmbedder``, decision 0028): one run of a
        MiniLM file per text, as its document vector is made, and each group's tokens
        pooled by their mean with the run's [CLS] and [SEP], as the group's text would be
        on its own. Another model: None (its pooling may not be a mean of tokens).
        Recently read texts are remembered, so a query asked again costs nothing: those
        are answered here, and only the texts not remembered are run, on as many threads
        as there are of them (up to the cores): a search whose candidates were all read
        lately starts no thread (decision 0057, session 16's addendum)."""
        if self._minilm is None:
            return None
        model = self._pool_model or self._load_pool_model()
        assert isinstance(model, MiniLMRunner)
        keys = [(text, tuple(tuple(g) for g in groups)) for text, groups in items]
        found = [self._spans.get(key) for key in keys]
        missing = [i for i, got in enumerate(found) if got is None]

        def read(i: int) -> list[Any]:
            text, groups = items[i]
            encoding = model.tokenize([text])[0]
            hidden = model.hidden([text])[0][0]
            got = pool_spans(hidden, encoding.offsets, groups)
            self._spans.put(keys[i], got)
            return got

        if missing:
            with _translated(self._name, "embed paragraphs"):
                workers = min(len(missing), self._threads or _cores())
                if workers <= 1:
                    read_now = [read(i) for i in missing]
                else:
                    pool = ThreadPoolExecutor(workers, thread_name_prefix="kb-mcp-spans")
                    try:
                        read_now = list(pool.map(read, missing))
                    finally:
                        pool.shutdown(wait=True, cancel_futures=True)
            for i, got in zip(missing, read_now, strict=True):
                found[i] = got
        return [[None if v is None else cast(Vector, v.tolist()) for v in got or ()]
                for got in found]

    def _runs_integer_copy(self) -> bool:
        return self._minilm_file is not None and self._minilm_file.name == \
            quantize.QUANTIZED_FILE

    def embed_query(self, text: str) -> Vector:
        """A MiniLM file embeds the query on the one-thread session the paragraphs in
        context use, so a search opens one session, not two (a fresh ``kb-mcp search``
        saves its cost; decision 0057): one text's vector is bit for bit the same on any
        thread count. A query asked lately is answered from memory (``RECENT_QUERIES``), as
        its paragraphs are (``embed_spans``): an agent asking again, or paging through
        results, costs no model run."""
        remembered = self._recent_queries.get(text)
        if remembered is not None:  # the same text, the same model: the same vector
            return list(remembered)
        if self._minilm is not None:
            model = self._pool_model or self._load_pool_model()
        else:
            model = self._model or self._load_model()
        with _translated(self._name, "embed a query"):
            vector = cast(Vector, _unit(list(model.query_embed([text])))[0].tolist())
        self._recent_queries.put(text, tuple(vector))
        return vector

    def release(self) -> None:
        """Drop the loaded model sessions (their weights and arenas); the next call loads
        them again and gives the same vectors. A call under way keeps its own session."""
        with self._lock:
            self._model = self._pool_model = None

    # -- lazy loading ------------------------------------------------------------------------
    def _catalogue_entry(self) -> dict[str, Any]:
        if self._description is None:
            self._description = find_in_catalogue(self._name)
        return self._description

    def _load_tokenizer(self) -> Tokenizer:
        with self._lock:
            if self._tokenizer is None:
                files = self._ensure_files()
                with _translated(self._name, "load its tokenizer"):
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(files / "tokenizer.json"))
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
                    self._counter = WordPieceCounter.for_tokenizer(tokenizer)
                self._tokenizer = tokenizer
            return self._tokenizer

    def _ensure_files(self) -> Path:
        """The directory holding the tokenizer files (for a catalogue model: all its files)."""
        if self._files_dir is None:
            if self._is_default:
                _verify(
                    MODEL_FILES / "tokenizer.json", TOKENIZER_SHA256, "tokenizer", REINSTALL_KB
                )
                self._files_dir = MODEL_FILES
            else:
                self._files_dir = fetch_catalogue_files(self._catalogue_entry(), self._cache_dir)
        return self._files_dir

    def _load_model(self) -> TextModel:
        with self._lock:
            if self._model is None:
                if self._is_default:
                    self._model = self._open_default()
                else:
                    self._ensure_files()
                    self._model = self._open(self.model_id, threads=self._threads)
            return self._model

    def _resolve_minilm(self) -> Path:
        """The ONNX file the MiniLM name runs (``minilm_files.minilm_file``), found once. A
        failure to make the integer copy falls back to the packaged file and its identity,
        unless this embedder already gave out the integer copy's identity (an index may
        have recorded it): then it fails rather than mix vectors."""
        with self._resolve_lock:
            if self._minilm_file is None:
                assert self._minilm is not None, "a MiniLM name"
                self._minilm_file, self._minilm = minilm_file(
                    self._name, self._minilm, self._cache_dir, fixed=self._identity_told)
            return self._minilm_file

    def _load_pool_model(self) -> TextModel:
        with self._lock:
            if self._pool_model is None:
                self._pool_model = self._open_default(threads=1)
            return self._pool_model

    def _open_default(self, threads: int | None = None) -> MiniLMRunner:
        """A MiniLM file on onnxruntime directly: fastembed's vectors without its imports
        (decision 0057)."""
        onnx_file = self._resolve_minilm()
        with _translated(self._name, "load"):
            return MiniLMRunner(onnx_file, threads or self._threads, _CPU_MEM_ARENA)

    def _open(self, name: str, threads: int | None = None, **extra: Any) -> TextEmbedding:
        with _translated(self._name, "load"):
            from fastembed import TextEmbedding

            return TextEmbedding(
                name,
                cache_dir=str(self._cache_dir),
                threads=threads,
                local_files_only=True,
                enable_cpu_mem_arena=_CPU_MEM_ARENA,
                **extra,
            )


# -- helpers ---------------------------------------------------------------------------------
def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
