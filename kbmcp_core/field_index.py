"""An index run's part in declared fields: a record's rows, and all rows made again when
the ``[fields]`` declarations change (decision 0036)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from kbmcp_core.fields import Declared, declared_json, front_matter, values_of
from kbmcp_core.meta_keys import META_FIELDS
from kbmcp_core.models import DocumentRecord, StoredDocument
from kbmcp_core.ports import FieldRows

log = logging.getLogger(__name__)

#: ``warn(message)``: how a run reports a value left out (its summary and the log)
Warn = Callable[[str], None]


def with_fields(record: DocumentRecord, declared: Declared, warn: Warn) -> DocumentRecord:
    """The record with the rows of its declared fields (its front matter, and the title,
    date, tags, topic and category of its row under those names); a value that does not
    convert is left out with a warning naming the file and the key."""
    if not declared:
        return record
    rows, problems = values_of(front_matter(record.metadata, record.title, record.date,
                                            record.tags, record.topic, record.category),
                               declared)
    for problem in problems:
        warn(f"{record.path}: {problem}")
    return replace(record, fields=rows)


def sync_fields(store: FieldRows, declared: Declared, warn: Warn) -> bool:
    """When the rows were made for other declarations than ``declared`` (``META_FIELDS``),
    make every stored document's rows again from the front matter its row keeps: no file
    is read and no chunk embedded. With nothing declared every row goes. True when it did
    something."""
    wanted = declared_json(declared) if declared else ""
    if (store.get_meta(META_FIELDS) or "") == wanted:
        return False
    if not declared:
        store.replace_fields(None)
    else:
        log.info("the declared fields changed: filling them from the stored front matter")
        store.replace_fields({doc.path: with_fields(_as_record(doc), declared, warn).fields
                              for doc in store.documents()})
    store.set_meta(META_FIELDS, wanted)
    return True


def _as_record(doc: StoredDocument) -> DocumentRecord:
    """A stored row as the record it was written from (its size aside)."""
    return DocumentRecord(path=doc.path, title=doc.title, content_hash=doc.content_hash,
                          size_bytes=doc.size_bytes or 0, date=doc.date, topic=doc.topic,
                          category=doc.category, tags=doc.tags, metadata=doc.metadata,
                          last_indexed=doc.last_indexed)


__all__ = ["sync_fields", "with_fields"]
