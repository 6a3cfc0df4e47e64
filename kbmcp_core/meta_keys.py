"""The index's metadata vocabulary: the ``index_meta`` keys and what each value means.

The names are stored in every index on disk, so they are a file format: renaming one
orphans the value older indexes hold under the old name.
"""

from __future__ import annotations

#: the embedding model the stored vectors were made with
META_MODEL = "embedding_model"
#: that model's vector dimension, as a decimal string
META_DIMENSION = "embedding_dimension"
#: the last run's summary and end time, as JSON
META_LAST_RUN = "last_run"
#: the vector store's fingerprint when the last run ended (see ``IndexRun._needs_repair``)
META_VECTORS = "vector_fingerprint"
#: set while a run writes (cleared at its end): search then says vectors may be missing
META_IN_PROGRESS = "run_in_progress"
#: what text the stored vectors were made from (``models.EMBED_TEXT``); absent before 0020
META_EMBED_TEXT = "embed_text"
#: Set while `kb-mcp migrate-store` copies into this index (the copy's source, as JSON).
META_COPY = "copy_from"
#: set once a whole-folder run has kept the converted text of every unchanged document
#: an older kb-mcp indexed without one (decision 0023)
META_CONVERSIONS = "converted_text_filled"
#: When phase one of a whole-folder run first ended (every file searchable by keywords):
#: the index is *ready*. "" from the start of an index's first run until then; absent in
#: indexes from before this mark (``index_run.index_ready`` decides those).
META_READY = "ready_since"
#: Which parser generation made the stored rows, per extension, as JSON (``{"md": 2}``):
#: a run reads again the documents of every extension whose generation changed since.
#: Absent in indexes from before this mark: their documents are all read again, once.
META_PARSED_WITH = "parsed_with"
#: The ``[fields]`` declarations the field rows were made for, as JSON (``{"year":
#: "number"}``): a run whose declarations differ fills the rows of every document again
#: from its stored front matter (no file read, no embedding). Absent = none declared.
META_FIELDS = "declared_fields"
#: The vector store's fingerprint when every vector was last known to carry its chunk's
#: labels (decision 0058's addendum): a run whose vectors show another fingerprint checks
#: them, and a whole-folder run labels those without. Absent in older indexes.
META_LABELLED = "vector_labels"

#: every key above, in the order they are described
META_KEYS: tuple[str, ...] = (
    META_MODEL,
    META_DIMENSION,
    META_LAST_RUN,
    META_VECTORS,
    META_IN_PROGRESS,
    META_EMBED_TEXT,
    META_COPY,
    META_CONVERSIONS,
    META_READY,
    META_PARSED_WITH,
    META_FIELDS,
    META_LABELLED,
)

__all__ = [
    "META_CONVERSIONS",
    "META_COPY",
    "META_DIMENSION",
    "META_FIELDS",
    "META_EMBED_TEXT",
    "META_IN_PROGRESS",
    "META_KEYS",
    "META_LABELLED",
    "META_LAST_RUN",
    "META_MODEL",
    "META_PARSED_WITH",
    "META_READY",
    "META_VECTORS",
]
