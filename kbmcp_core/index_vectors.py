"""The vector side of one index run: the checks before it, phase two, and every write.

Before phase one, a run finds out whether the vectors need mending (``needs_repair``:
after a run that did not finish, or a change behind kb-mcp's back), drops what has no
owner (``repair``), embeds everything again when the text given to the model changed
(``renew``), and labels the vectors written without labels (``labelled``). Phase two
(``embed_missing``) embeds every chunk still without a vector, in batches, and may hand
over to new file events (the watcher's runs). ``write`` is where every vector goes in:
each distinct text embedded once, each vector stored with its chunk's labels (decisions
0008, 0017, 0020, 0037, 0045, 0058).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping

from kbmcp_core.chunk_labels import ChunkLabels, labels_of
from kbmcp_core.errors import (
    EmbeddingRejected,
    EmbeddingUnreachable,
    VectorsUnreachable,
    VectorsUnreadable,
)
from kbmcp_core.index_deps import IndexDeps, Phase, YieldTo
from kbmcp_core.index_files import text_hash
from kbmcp_core.label_sync import label_all
from kbmcp_core.meta_keys import (
    META_DIMENSION,
    META_EMBED_TEXT,
    META_IN_PROGRESS,
    META_LABELLED,
    META_MODEL,
    META_VECTORS,
)
from kbmcp_core.models import (
    EMBED_TEXT,
    EMBED_TEXT_UNPLACED,
    RunSummary,
    Vector,
    place_of,
    vector_text_of,
)

log = logging.getLogger(__name__)

#: In model batches: the chunks phase two hands to one embedding call (length-bucketed
#: inside).
FLUSH_BATCHES = 8
#: The vectors phase two gathers before it appends them in one commit (one version of the
#: vector table; a run not handing over to file events). Each commit in object storage
#: lists every version the table has (LanceDB: about nine listings a commit), so a commit
#: every embedding call made the first index quadratic there: 395 commits at 100,000
#: chunks, 3,950 at a million (decision 0058's addendum "PostgreSQL + S3 at scale"). About
#: 50 MB held at most (a vector is a list of 384 floats).
APPEND_ROWS = 4096


class VectorSteps:
    """One run's vector side. ``written`` says whether it wrote or rewrote any vector (the
    run then compacts them); ``handed_over`` counts the chunks phase two left without a
    vector because ``yield_to`` said so."""

    def __init__(self, deps: IndexDeps, summary: RunSummary, *, force: bool,
                 paths: Collection[str] | None, warn: Callable[[str], None],
                 report: Callable[[Phase, int, int, str], None],
                 yield_to: YieldTo | None) -> None:
        self.deps = deps
        self.summary = summary
        self.force = force
        #: None: the whole knowledge base; otherwise only these paths (the watcher)
        self.paths = paths
        self._warn = warn
        self._report = report
        self.yield_to = yield_to
        self.written = False
        self.handed_over = 0
        #: embedded, not yet appended: (chunk id, vector, labels), appended by ``flush``
        self._held: list[tuple[int, Vector, ChunkLabels]] = []
        #: hold up to this many before appending (0: append each embedding call's)
        self._append_rows = 0

    # -- before phase one ----------------------------------------------------
    def needs_repair(self) -> bool:
        """Chunks without vectors, vectors without chunks or rows without owners can only
        exist after a run that did not finish, a forced one, or a change to the stores
        behind kb-mcp's back (a deleted ``index.db`` or ``vectors/``, damaged files).
        The last shows as a vector fingerprint other than the one the last run recorded;
        a clean, unchanged index is checked without opening the vector store at all."""
        d = self.deps
        if self.force or d.store.get_meta(META_IN_PROGRESS):
            return True
        current = d.vectors.fingerprint()
        return current is None or current != d.store.get_meta(META_VECTORS)

    def repair(self) -> None:
        """Before the run: drop rows and vectors without owners (or every vector, when
        they cannot be read); phase two gives the chunks their vectors after it."""
        d = self.deps
        d.store.prune_dangling()
        try:
            orphans = d.vectors.ids() - d.store.chunk_ids()
        except VectorsUnreachable:
            raise  # an object store that does not answer: the vectors there are fine
        except VectorsUnreadable as exc:
            self._warn(f"{exc.detail}: the stored vectors are unreadable and are rebuilt "
                       "from the indexed chunks")
            d.vectors.reset()
            return
        if orphans:
            log.info("removing %d vectors whose chunk is gone", len(orphans))
            d.vectors.delete(orphans)

    def renew(self, mark: str | None) -> None:
        """The stored vectors were made from other text than ``vector_text_of`` gives now
        (an index from before decision 0020, or before each chunk was read under its
        folders: 0056, sixth addendum): drop them all, so that this run's phase two embeds
        every chunk again; keyword search goes on meanwhile. An index of 0020's text whose
        documents all sit at the top of the folder already has the vectors today's text
        gives (no folder to add): it only gets the new mark. The mark that says which text
        the vectors come from is written only after they are dropped, so a run killed in
        between drops them again."""
        d = self.deps
        paths = d.store.indexed_states()
        if mark == EMBED_TEXT_UNPLACED and not any(place_of(p) for p in paths):
            d.store.set_meta(META_EMBED_TEXT, EMBED_TEXT)
            return
        if paths and not self.force:
            log.info("the text given to the model changed (its document's folders lead "
                     "each chunk): every chunk is embedded again; keyword search works "
                     "meanwhile")
            d.store.set_meta(META_IN_PROGRESS, d.clock.now_iso())
            d.vectors.reset()
        d.store.set_meta(META_EMBED_TEXT, EMBED_TEXT)

    def labelled(self) -> bool:
        """Whether every stored vector carries its chunk's labels as this run starts: known
        from the mark the last run left (the vectors' fingerprint then, read without
        opening them); else a whole-folder run makes it so, labelling the vectors written
        without (an index from before labels: no chunk embedded; decision 0058's
        addendum). A run of a few paths leaves that to the next whole-folder run."""
        d = self.deps
        known = d.store.get_meta(META_LABELLED)
        if known and known == d.vectors.fingerprint():
            return True
        if self.paths is not None:
            return False
        if label_all(d.store, d.vectors):
            self.written = True  # their rows rewritten: ``compact`` folds them
        return True

    def record_model(self) -> None:
        """The model (and its dimension) the index's vectors come from."""
        self.deps.store.set_meta(META_MODEL, self.deps.embedder.model_id)
        self.deps.store.set_meta(META_DIMENSION, str(self.deps.embedder.dimension))

    # -- phase two -----------------------------------------------------------
    def embed_missing(self, unembedded: list[int], repair: bool) -> None:
        """Phase two: embed ``unembedded`` (the chunks phase one wrote without a vector)
        and, after a run that did not finish (``repair``), every other chunk without one."""
        d = self.deps
        fresh = len(unembedded)
        todo = unembedded
        if repair:  # this run's own chunks first: the file just saved gets its vectors soon
            missing = d.store.chunk_ids() - d.vectors.ids()
            todo = [c for c in todo if c in missing]
            todo += sorted(missing.difference(todo))
        if not todo:
            return
        left_over = len(todo) - fresh
        step = max(d.batch_size * FLUSH_BATCHES, 32)
        self._append_rows = APPEND_ROWS
        if self.yield_to is not None:
            step = max(d.batch_size, 1)  # a hand-over point after every model batch
            self._append_rows = 0  # and the vectors of each searchable at once
        self._report("vectors", 0, len(todo), "")
        try:
            self._embed_in_steps(todo, step)
        except BaseException:  # a stop, the model or the store: what was embedded is kept
            self._append_rows = 0
            try:
                self.flush()
            except Exception:  # noqa: BLE001 (the run's own error is the one to raise)
                log.warning("the vectors embedded before the run stopped could not be "
                            "written; the next run embeds them again", exc_info=True)
            raise
        self._append_rows = 0
        self.flush()
        if repair and left_over > 0 and not self.handed_over:
            log.info("embedded %d chunks an interrupted run had left without vectors",
                     left_over)

    def _embed_in_steps(self, todo: list[int], step: int) -> None:
        d = self.deps
        for start in range(0, len(todo), step):
            found = d.store.get_chunks(todo[start : start + step])
            # embedded from its place and prose; two chunks share a model run only when
            # that text is the same (the same words in two documents: two places)
            texts = {c.id: vector_text_of(c.heading_path, c.content, c.document_path)
                     for c in found.values()}
            rows = [(cid, text_hash(t), t) for cid, t in texts.items()]
            docs = {doc.path: labels_of(doc) for doc in
                    d.store.documents({c.document_path for c in found.values()})}
            try:
                self.write(rows, {h: found[cid].document_path for cid, h, _ in rows},
                           {c.id: docs[c.document_path] for c in found.values()})
            except EmbeddingUnreachable as exc:  # ends as a stopped run ends (0008, 0037)
                raise EmbeddingUnreachable(exc.detail, f"{exc}: the index run stopped; every "
                                           "document is searchable by keywords, and the next "
                                           "`kb-mcp index` embeds the chunks still without "
                                           "vectors") from exc
            self._report("vectors", min(start + step, len(todo)), len(todo), "")
            if start + step < len(todo) and self.yield_to is not None and self.yield_to():
                self.handed_over = len(todo) - (start + step)
                log.info("phase two hands over to new changes; %d chunks wait for vectors",
                         self.handed_over)
                return

    def write(self, chunks: list[tuple[int, str, str]], paths: dict[str, str],
              labels: Mapping[int, ChunkLabels]) -> None:
        """Embed ``chunks`` (id, text hash, text; each distinct text once) and store every
        vector with its chunk's ``labels`` (held until ``flush`` while phase two gathers
        ``APPEND_ROWS``, else appended at once). A text an embedding service refuses gets
        none, with a warning naming its document (``paths``: chunk hash -> path); its
        keyword rows stay (decision 0037)."""
        if not chunks:
            return
        texts = {h: t for _, h, t in chunks}
        got: list[Vector | None]
        try:
            got = list(self.deps.embedder.embed_documents(list(texts.values())))
        except EmbeddingRejected as exc:
            got = exc.vectors
            hashes = list(texts)
            for i, why in sorted(exc.reasons.items()):
                where = paths.get(hashes[i], "a document")
                self._warn(f"{where}: a chunk was left without a vector: the embedding "
                           f"service refused it ({why}); keyword search finds it")
        vectors = {h: v for h, v in zip(texts, got, strict=True) if v is not None}
        self.summary.chunks_embedded += len(vectors)
        self.summary.chunks_reused += len(chunks) - len(texts)
        self._held += [(cid, vectors[h], labels[cid]) for cid, h, _ in chunks if h in vectors]
        if len(self._held) >= self._append_rows:
            self.flush()

    def flush(self) -> None:
        """Append the held vectors in one commit. Their ids have no vector (this run's,
        or read as missing): appended, not upserted (0045)."""
        held, self._held = self._held, []
        if held:
            self.deps.vectors.append([cid for cid, _, _ in held], [v for _, v, _ in held],
                                     [labels for _, _, labels in held])
            self.written = True

__all__ = ["APPEND_ROWS", "FLUSH_BATCHES", "VectorSteps"]
