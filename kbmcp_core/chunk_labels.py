"""What a chunk's vector carries of its document, so a filtered vector search can filter
by it: the labels (folders, tags, date, category, topic), and the filters they express.

A store of vectors keeps each chunk's ``ChunkLabels`` beside its vector (``labels_of`` its
document, written with the vector and updated when only the document's metadata changes).
``label_filter`` says a search's ``DocumentFilter`` on those labels when it can: folder
globs (``notes/**``: a folder and everything under it), tags (any, all), a date range, a
category and a topic. Anything else (a glob that is not a whole folder, an excluded glob,
a declared field) gives None, and the vector leg is filtered by the allowed chunk ids as
before. ``LabelFilter.matches`` is the meaning every vector store follows; on the labels of
``labels_of`` it agrees with ``DocumentFilter.matches`` (decision 0058's addendum,
"filters in the vector table").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbmcp_core.models import DocumentFilter, DocumentRecord, StoredDocument

__all__ = ["ChunkLabels", "LabelFilter", "folder_of_glob", "label_filter", "labels_of"]

#: A glob meaning "this folder and everything under it": a literal folder, then ``/`` and
#: only stars (``*`` crosses ``/`` in a path glob, so ``a/*`` is ``a/**``).
_FOLDER_GLOB = re.compile(r"([^*?\[\]]+?)/\*+")


@dataclass(frozen=True, slots=True)
class ChunkLabels:
    """A chunk's document as a vector store filters it: every folder above its path
    (``a/b/c.md``: ``a``, ``a/b``), its tags and category and topic folded with
    ``str.lower`` (none: empty), and its date (``YYYY-MM-DD``, None when it has none)."""

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    day: str | None = None
    category: str = ""
    topic: str = ""


def labels_of(doc: DocumentRecord | StoredDocument) -> ChunkLabels:
    """The labels every chunk of ``doc`` carries."""
    parts = doc.path.split("/")[:-1]
    folders = tuple("/".join(parts[: n + 1]) for n in range(len(parts)))
    return ChunkLabels(folders=folders, tags=tuple(sorted({t.lower() for t in doc.tags})),
                       day=doc.date, category=(doc.category or "").lower(),
                       topic=(doc.topic or "").lower())


@dataclass(frozen=True, slots=True)
class LabelFilter:
    """A document filter said on chunk labels; each part left empty (or None) tests
    nothing: under one of ``folders_any``, holding a tag of ``tags_any`` and every tag of
    ``tags_all`` (folded), dated within ``day_from`` .. ``day_to`` (inclusive; a chunk of
    an undated document is out when either is set), of ``category`` and ``topic``
    (folded)."""

    folders_any: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    day_from: str | None = None
    day_to: str | None = None
    category: str | None = None
    topic: str | None = None

    def matches(self, labels: ChunkLabels) -> bool:
        """Whether a chunk with ``labels`` passes."""
        if self.folders_any and not set(self.folders_any) & set(labels.folders):
            return False
        if self.tags_any and not set(self.tags_any) & set(labels.tags):
            return False
        if not set(self.tags_all) <= set(labels.tags):
            return False
        if self.day_from is not None and (labels.day is None or labels.day < self.day_from):
            return False
        if self.day_to is not None and (labels.day is None or labels.day > self.day_to):
            return False
        if self.category is not None and labels.category != self.category:
            return False
        return self.topic is None or labels.topic == self.topic


def folder_of_glob(glob: str) -> str | None:
    """The folder a glob keeps whole (``notes/2024/**``: ``notes/2024``), else None."""
    found = _FOLDER_GLOB.fullmatch(glob)
    return None if found is None else found.group(1)


def label_filter(spec: DocumentFilter) -> LabelFilter | None:
    """``spec`` on chunk labels, or None when part of it cannot be said on them (a glob
    that is not a whole folder, an excluded glob, a declared-field condition) or it keeps
    everything."""
    if spec.fields or spec.fields_not or spec.excludes:
        return None
    folders = tuple(folder_of_glob(g) for g in spec.includes)
    if any(f is None for f in folders):
        return None
    found = LabelFilter(
        folders_any=tuple(sorted({f for f in folders if f is not None})),
        tags_any=tuple(sorted({t.lower() for t in spec.tags_any})),
        tags_all=tuple(sorted({t.lower() for t in spec.tags_all})),
        day_from=spec.date_from, day_to=spec.date_to,
        category=None if spec.category is None else spec.category.lower(),
        topic=None if spec.topic is None else spec.topic.lower())
    return None if found == LabelFilter() else found
