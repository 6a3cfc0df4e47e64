"""Copy an index to another store through the ports, without embedding anything.

The use-case behind ``kb-mcp migrate-store`` (``kbmcp_adapters.app.migrate_store`` opens both
ends, takes their writer locks and calls ``copy_index``).

Documents and chunks (with their ids) are read through the source's ports and written
through the target's own write path, so the target builds its lexical rows exactly as an
index run would; the vectors are read from the source vector store and written, as they
are, to the target one. The index facts that matter follow: the embedding model and its
dimension, the last run, and the fingerprint of the target's vectors.

A copy writes in batches of documents: each document's rows in one transaction, then the
batch's vectors. While it writes, the target carries two markers, ``run_in_progress`` (search
then says that chunks may lack vectors) and ``copy_from`` (which source is being copied). A
copy killed at any point leaves every copied document whole but the target incomplete and
marked; running the same command again finishes it: documents already copied whole are
skipped, missing vectors are copied, and only then are the markers cleared.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from kbmcp_core.chunk_labels import labels_of
from kbmcp_core.errors import ConfigError, IndexNotFound, ModelMismatch, StoreError
from kbmcp_core.index_files import text_hash
from kbmcp_core.meta_keys import (
    META_COPY,
    META_DIMENSION,
    META_EMBED_TEXT,
    META_IN_PROGRESS,
    META_LAST_RUN,
    META_MODEL,
    META_PARSED_WITH,
    META_VECTORS,
)
from kbmcp_core.models import (
    ChunkRecord,
    DocumentRecord,
    StoredChunk,
    StoredDocument,
    whole_text_of,
)
from kbmcp_core.ports import DocumentWrite, IndexStore, VectorReader, VectorStore

__all__ = ["BATCH_DOCUMENTS", "CopyProgress", "CopyReport", "check_target_model",
           "copy_index", "marked_source", "source_model"]

log = logging.getLogger(__name__)

#: Documents per batch: their rows are written one by one, then their vectors at once.
BATCH_DOCUMENTS = 200

#: ``progress(done, total)``: documents handled so far out of the source's.
CopyProgress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What one ``migrate-store`` did."""

    documents: int
    chunks: int
    #: vectors written to the target (0 when the target uses the source's vectors)
    vectors: int
    #: documents an earlier, interrupted copy had already written whole
    already_copied: int
    #: target documents removed (``--replace``, or no longer in the source)
    removed: int
    resumed: bool
    #: True when source and target use the same vector store: no vector was copied
    shared_vectors: bool
    model_id: str
    dimension: int


def source_model(store: IndexStore, configured_model: str, name: str) -> tuple[str, int]:
    """The source index's model and dimension. ``IndexNotFound`` when ``store`` holds no
    index; ``ModelMismatch`` when its model is not ``configured_model``."""
    model, dimension = store.get_meta(META_MODEL), store.get_meta(META_DIMENSION)
    if model is None or dimension is None or not dimension.isdigit() or not store.stats().documents:
        raise IndexNotFound(name)
    if model != configured_model:
        raise ModelMismatch(model, configured_model)
    return model, int(dimension)


def check_target_model(store: IndexStore, model: str, dimension: int, name: str) -> None:
    """``ConfigError`` when the target already holds an index of another model or dimension."""
    held, held_dimension = store.get_meta(META_MODEL), store.get_meta(META_DIMENSION)
    if held is None:
        return
    if held != model or (held_dimension or str(dimension)) != str(dimension):
        raise ConfigError(
            f"the target store {name} holds an index of model {held!r} ({held_dimension} "
            f"dimensions) but the source index uses {model!r} ({dimension} dimensions); "
            "point --to at an empty database"
        )


def copy_index(
    source: IndexStore,
    source_vectors: VectorReader,
    target: IndexStore,
    target_vectors: VectorStore | None,
    *,
    model: str,
    dimension: int,
    source_name: str,
    target_name: str,
    replace_target: bool = False,
    progress: CopyProgress | None = None,
) -> CopyReport:
    """Copy the index in ``source`` (and its vectors) into ``target``; ``target_vectors``
    None when both use the same vector store (no vector is copied then). ``model`` and
    ``dimension`` come from ``source_model``; the names are for messages and markers.

    ``ConfigError`` before anything is written when the target holds documents (unless
    ``replace_target``) or vectors of another index, or the source is incomplete. The
    caller holds the writer locks of both."""
    copier = _Copy(source, source_vectors, target, target_vectors, source_name, target_name)
    return copier.run(model, dimension, replace_target=replace_target, progress=progress)


class _Copy:
    """One copy from a source index to a target store (vectors None: shared)."""

    def __init__(self, source: IndexStore, source_vectors: VectorReader, target: IndexStore,
                 target_vectors: VectorStore | None, source_name: str,
                 target_name: str) -> None:
        self.source = source
        self.source_vectors = source_vectors
        self.target = target
        self.target_vectors = target_vectors
        self.source_name = source_name
        self.target_name = target_name

    def run(self, model: str, dimension: int, *, replace_target: bool,
            progress: CopyProgress | None) -> CopyReport:
        src, dst = self.source, self.target
        resumed = self._check_target(replace_target)
        self._check_source_complete()
        paths = src.document_paths()
        dst.set_meta(META_COPY, json.dumps({"source": self.source_name}, ensure_ascii=False))
        dst.set_meta(META_IN_PROGRESS, "copy from " + self.source_name)
        dst.set_meta(META_MODEL, model)
        dst.set_meta(META_DIMENSION, str(dimension))
        # the vectors copied were made from the source's text: its mark comes with them
        dst.set_meta(META_EMBED_TEXT, self.source.get_meta(META_EMBED_TEXT) or "")
        # and the rows were made by the source's parsers (decision 0032)
        dst.set_meta(META_PARSED_WITH, self.source.get_meta(META_PARSED_WITH) or "")
        removed = self._clear(replace_target and not resumed, set(paths))
        have = set() if self.target_vectors is None else self.target_vectors.ids()
        chunks = vectors = skipped = 0
        for start in range(0, len(paths), BATCH_DOCUMENTS):
            batch = paths[start : start + BATCH_DOCUMENTS]
            n_chunks, n_vectors, n_skipped = self._copy_batch(batch, have)
            chunks, vectors, skipped = chunks + n_chunks, vectors + n_vectors, skipped + n_skipped
            if progress is not None:
                progress(start + len(batch), len(paths))
        self._finish()
        return CopyReport(documents=len(paths), chunks=chunks, vectors=vectors,
                          already_copied=skipped, removed=removed, resumed=resumed,
                          shared_vectors=self.target_vectors is None, model_id=model,
                          dimension=dimension)

    # -- before writing ------------------------------------------------------
    def _check_target(self, replace_target: bool) -> bool:
        """True when the target holds an unfinished copy of this source (resume it)."""
        from_source = marked_source(self.target.get_meta(META_COPY))
        if from_source == self.source_name:
            return True
        held = self.target.stats().documents
        if replace_target:
            return False
        if held:
            what = (f"an unfinished copy from {from_source}" if from_source
                    else f"{held} documents")
            raise ConfigError(f"the target store {self.target_name} already holds {what}; "
                              "pass --replace to overwrite it, or point --to at an empty "
                              "database")
        if self.target_vectors is not None and self.target_vectors.count():
            raise ConfigError(
                "the target vector location already holds vectors of another index; pass "
                "--replace to overwrite them, or point --vectors-to at an empty location")
        return False

    def _check_source_complete(self) -> None:
        """Refuse a source a run did not finish: its chunks may lack vectors that only an
        embedding run can make."""
        unfinished = bool(self.source.get_meta(META_IN_PROGRESS))
        missing = len(self.source.chunk_ids() - self.source_vectors.ids())
        if unfinished or missing:
            why = (f"{missing} chunks have no vector" if missing
                   else "its last index run did not finish")
            raise ConfigError(f"the source index is incomplete ({why}): run `kb-mcp index` "
                              "to complete it, then migrate it")

    def _clear(self, wipe: bool, keep: set[str]) -> int:
        """Empty the target (``--replace``), or drop what is no longer in the source (a
        resumed copy whose source changed since)."""
        dst = self.target
        gone = [p for p in dst.document_paths() if wipe or p not in keep]
        removed_ids = dst.delete_documents(gone)
        if self.target_vectors is not None:
            if wipe:
                self.target_vectors.reset()
            elif removed_ids:
                self.target_vectors.delete(removed_ids)
        if gone:
            log.info("removed %d documents from the target store", len(gone))
        return len(gone)

    # -- the copy ------------------------------------------------------------
    def _copy_batch(self, paths: Sequence[str], have: set[int]) -> tuple[int, int, int]:
        """Rows of ``paths`` (each document in one transaction), then their vectors."""
        src, dst = self.source, self.target
        documents = src.documents(paths)
        found = src.get_chunks(src.chunk_ids_for(paths))
        by_path: dict[str, list[StoredChunk]] = {}
        for chunk in found.values():
            by_path.setdefault(chunk.document_path, []).append(chunk)
        copied = {d.path: d for d in dst.documents(paths)}
        in_target = set(dst.chunk_ids_for(paths))
        n_chunks = skipped = 0
        stale: list[int] = []
        for doc in documents:
            records = _chunk_records(by_path.get(doc.path, []),
                                     src.document_chunk_hashes(doc.path) or [])
            n_chunks += len(records)
            converted = src.converted_text(doc.content_hash)  # the text reads serve (0023)
            old = copied.get(doc.path)
            if (old is not None and replace(old, id=0) == replace(doc, id=0)
                    and {r.id for r in records} <= in_target):
                skipped += 1
                if converted is not None and not dst.converted_hashes({doc.content_hash}):
                    dst.keep_conversions([converted])  # copied by an older kb-mcp
                continue
            stale += dst.write_documents(
                [DocumentWrite(_document_record(doc), records, converted=converted)])
        wanted = set(found) - have
        if self.target_vectors is None:
            return n_chunks, 0, skipped
        if stale:
            self.target_vectors.delete(stale)
        if wanted:
            got = self.source_vectors.get(wanted)
            if len(got) != len(wanted):
                raise StoreError(f"{len(wanted) - len(got)} chunks lost their vector in the "
                                 "source during the copy; run `kb-mcp index` there, then "
                                 "run migrate-store again")
            ids = sorted(got)
            labels = {doc.path: labels_of(doc) for doc in documents}  # with the vectors (0058)
            self.target_vectors.add(ids, [got[i] for i in ids],
                                    [labels[found[i].document_path] for i in ids])
            have.update(ids)
        return n_chunks, len(wanted), skipped

    def _finish(self) -> None:
        dst, vectors = self.target, self.target_vectors
        dst.prune_dangling()
        if vectors is not None:
            orphans = vectors.ids() - dst.chunk_ids()
            if orphans:
                vectors.delete(orphans)
            vectors.compact()
        last_run = self.source.get_meta(META_LAST_RUN)
        if last_run is not None:
            dst.set_meta(META_LAST_RUN, last_run)
        fingerprint = (vectors or self.source_vectors).fingerprint()
        dst.set_meta(META_VECTORS, fingerprint or "")
        dst.set_meta(META_IN_PROGRESS, "")
        dst.set_meta(META_COPY, "")


def marked_source(marker: str | None) -> str | None:
    """The source named by a ``copy_from`` marker ("unknown" when it cannot be read)."""
    if not marker:
        return None
    try:
        source = json.loads(marker).get("source")
    except (ValueError, AttributeError):
        return "an unknown source"
    return str(source) if source else "an unknown source"


def _document_record(doc: StoredDocument) -> DocumentRecord:
    return DocumentRecord(
        path=doc.path,
        title=doc.title,
        content_hash=doc.content_hash,
        # a size never recorded stays NULL: the store writes the value as given
        size_bytes=cast(int, doc.size_bytes),
        date=doc.date,
        topic=doc.topic,
        category=doc.category,
        tags=doc.tags,
        metadata=doc.metadata,
        last_indexed=doc.last_indexed,
    )


def _chunk_records(chunks: list[StoredChunk], order: list[str]) -> list[ChunkRecord]:
    """The chunks of one document as records, in their stored order.

    The order comes from the document's chunk hashes (``ChunkRecord.text_hash``: the hash
    of the chunk's whole text, as the indexer computes it): each chunk takes the position
    of its hash; chunks with the same text keep their place in the text (page, then line).
    """
    slots: dict[str, list[int]] = {}
    for position, digest in enumerate(order):
        slots.setdefault(digest, []).append(position)
    records: list[tuple[int, ChunkRecord]] = []
    unplaced = len(order)
    for chunk in sorted(chunks, key=lambda c: (c.page or 0, c.start_line or 0, c.id)):
        digest = text_hash(whole_text_of(chunk.heading_path, chunk.content))
        free = slots.get(digest)
        if free:
            ordinal = free.pop(0)
        else:  # a hash written by an older kb-mcp: after the others, in text order
            ordinal, unplaced = unplaced, unplaced + 1
        records.append((ordinal, ChunkRecord(
            id=chunk.id, ordinal=ordinal, heading=chunk.heading,
            heading_path=chunk.heading_path, content=chunk.content, text_hash=digest,
            start_line=chunk.start_line, end_line=chunk.end_line, page=chunk.page)))
    return [record for _, record in sorted(records, key=lambda r: r[0])]
