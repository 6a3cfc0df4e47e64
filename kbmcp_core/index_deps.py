"""What an index run is given, and what is checked before one starts.

``IndexDeps`` carries the ports one run works through (the store's writer, the vectors, the
embedder, the parsers, the file system and its walk, the clock, the parsers' budget).
Before a run: ``check_model`` refuses to mix two models' vectors in one index, and
``probe_model`` makes one embedding call before ``--force`` empties anything; after one,
``index_ready`` says whether a run ever read the whole folder (decisions 0008, 0017, 0037).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from kbmcp_core.errors import EmbeddingUnavailable, ModelMismatch
from kbmcp_core.fields import Declared
from kbmcp_core.meta_keys import META_LAST_RUN, META_MODEL, META_READY
from kbmcp_core.ports import (
    ChunkBudget,
    Clock,
    Embedder,
    FileSystem,
    IndexMeta,
    IndexWriter,
    ParserRegistry,
    Scanner,
    VectorStore,
)

#: "text": files parsed and written (phase one); "vectors": chunks embedded (phase two)
Phase = Literal["text", "vectors"]
#: ``progress(phase, done, total, item)``: ``item`` is the file just written in phase one,
#: "" in phase two. Called once with ``done == 0`` when a phase starts.
Progress = Callable[[Phase, int, int, str], None]
#: ``yield_to()``: asked between two embedding calls of phase two (never before the first,
#: so every run makes progress); True ends the run there, as a stopped run ends (0017).
YieldTo = Callable[[], bool]


@dataclass(slots=True)
class IndexDeps:
    """The ports one index run works through, and its two sizes."""

    store: IndexWriter
    vectors: VectorStore
    embedder: Embedder
    registry: ParserRegistry
    fs: FileSystem
    scanner: Scanner
    clock: Clock
    budget: ChunkBudget
    #: the embedder's batch size; phase two embeds ``index_vectors.FLUSH_BATCHES`` of
    #: them per call
    batch_size: int = 32
    #: the ``[fields]`` declarations: the front-matter keys indexed for filtering
    fields: Declared = ()


def index_ready(store: IndexMeta) -> bool:
    """Whether a run has read the whole folder into this index at least once (phase one
    ended; vectors may still be missing, search then says so). An index from before the
    ``ready_since`` mark counts as ready once a run recorded a model or a summary: one
    left by a run that failed before writing anything has neither."""
    ready = store.get_meta(META_READY)
    if ready is None:
        return (store.get_meta(META_MODEL) is not None
                or store.get_meta(META_LAST_RUN) is not None)
    return bool(ready)


def check_model(store: IndexMeta, embedder: Embedder, force: bool) -> None:
    """Refuse to mix vectors of two models in one index (``--force`` rebuilds)."""
    indexed = store.get_meta(META_MODEL)
    if indexed is not None and indexed != embedder.model_id and not force:
        raise ModelMismatch(indexed, embedder.model_id)


#: The text of the one request that proves a model answers before a rebuild empties anything.
PROBE_TEXT = "kb-mcp checks that the embedding model answers"


def probe_model(embedder: Embedder) -> None:
    """One embedding call before ``--force`` empties the vectors: ``EmbeddingUnavailable``
    (nothing emptied) when the model fails or its vectors are not of its declared
    dimension (decision 0037)."""
    vectors = embedder.embed_documents([PROBE_TEXT])
    if len(vectors) != 1 or len(vectors[0]) != embedder.dimension:
        size = len(vectors[0]) if vectors else 0
        raise EmbeddingUnavailable(
            f"embedding model {embedder.model_id!r} gave a vector of {size} dimensions, not "
            f"{embedder.dimension}: nothing was rebuilt")


__all__ = ["PROBE_TEXT", "IndexDeps", "Phase", "Progress", "YieldTo", "check_model",
           "index_ready", "probe_model"]
