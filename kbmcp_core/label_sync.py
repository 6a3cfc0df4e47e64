"""The chunk labels of the vector store kept in step with the documents (decision 0058's
addendum, "filters in the vector table"): every chunk of a store whose vectors were
written without labels (an index made before them, or copied by ``migrate-store``), and
the chunks of one document whose metadata alone changed (no chunk re-embedded), and the
chunks an edit kept (their text unchanged) when the edit changed their labels too.

Index runs write each vector with its chunk's labels (``chunk_labels.labels_of`` its
document); these two are the only other changes of a document's labels.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from kbmcp_core.chunk_labels import ChunkLabels, labels_of
from kbmcp_core.models import DocumentRecord, StoredDocument
from kbmcp_core.ports import VectorStore

__all__ = ["LabelSource", "label_all", "labels_for", "relabel_document", "relabel_kept"]


class LabelSource(Protocol):
    """What the labels are read from: the document rows and their chunk ids."""

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]: ...

    def chunk_ids_by_path(self, paths: Collection[str] | None = None
                          ) -> dict[str, list[int]]: ...


def labels_for(store: LabelSource, paths: Collection[str] | None
               ) -> dict[int, ChunkLabels]:
    """Each chunk of the documents at ``paths`` (None: every one) with its labels (two
    queries, whatever the number of documents)."""
    ids = store.chunk_ids_by_path(paths)
    return {cid: labels for doc in store.documents(paths)
            for labels in (labels_of(doc),) for cid in ids.get(doc.path, ())}


def label_all(store: LabelSource, vectors: VectorStore) -> int:
    """Every stored vector given its chunk's labels when some carry none (the store is not
    ``labelled``); returns how many chunks were labelled (0: nothing to do)."""
    if vectors.labelled() or vectors.count() == 0:
        return 0
    labels = labels_for(store, None)
    vectors.relabel(labels)
    return len(labels)


def relabel_document(store: LabelSource, vectors: VectorStore, before: StoredDocument | None,
                     after: DocumentRecord) -> bool:
    """After a metadata-only change of ``after.path`` (its chunks and vectors kept): its
    chunks' new labels, when they differ from ``before``'s. True when it wrote them."""
    new = labels_of(after)
    if before is not None and labels_of(before) == new:
        return False
    vectors.relabel(dict.fromkeys(store.chunk_ids_by_path([after.path]).get(after.path, ()),
                                  new))
    return True


def relabel_kept(store: LabelSource, vectors: VectorStore,
                 edited: Mapping[str, tuple[DocumentRecord, Collection[int]]]) -> bool:
    """The chunks an edit kept (``edited``: each path's new record and the ids it keeps,
    their vectors unchanged), given the new record's labels where they differ from the
    stored document's (a tag or the date edited with the text): one read of the stored
    documents for the whole batch. Called before the new rows are written, so a run
    stopped in between finds the old row and does both again. True when it wrote."""
    if not edited:
        return False
    old = {doc.path: labels_of(doc) for doc in store.documents(list(edited))}
    relabel = {cid: new for path, (record, ids) in edited.items()
               for new in (labels_of(record),) if old.get(path) != new for cid in ids}
    if relabel:
        vectors.relabel(relabel)
    return bool(relabel)
