"""One file read for the index, and the hashes and ids of what it holds.

``index_file`` reads a file once, through the guarded reader, and parses the same bytes it
hashes; ``kept_conversion`` is what the index keeps of a converted document's text, and
``conversions_to_fill`` / ``fill_conversion`` keep it for an index written before it did
(decision 0023). ``ChunkIds`` hands out the ids of the chunks one run writes (0004).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time

from kbmcp_core.errors import ParseError, PathRefused
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_plan import IndexPlan
from kbmcp_core.meta_keys import META_CONVERSIONS
from kbmcp_core.models import INDEX_CAP_BYTES, DocumentRecord, ParsedDocument, extension_of
from kbmcp_core.offer import topic_of
from kbmcp_core.ports import ConvertedText
from kbmcp_core.reading import BINARY_FORMATS, conversion_of

log = logging.getLogger(__name__)


def content_hash(data: bytes) -> str:
    """A file's hash: the sha256 of its bytes (``DocumentRecord.content_hash``)."""
    return hashlib.sha256(data).hexdigest()


def text_hash(text: str) -> str:
    """The sha256 of a text; of a chunk's whole text, it is ``ChunkRecord.text_hash``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Chunk ids: milliseconds since 2025-01-01 at the start of the run, shifted left by
#: ``_ID_SHIFT`` bits, plus a random offset, then counting up (docs/decisions/0004).
_ID_EPOCH_MS = 1_735_689_600_000
_ID_SHIFT = 20


class ChunkIds:
    """The ids of the chunks one run writes, chosen by the writer: increasing within the
    run and from one run to the next. The lexical index stores each id as the difference
    from the one before, so close ids keep it small and fast to write; random ids (which
    older indexes hold) made it several times larger. Ids are never handed out twice: a
    later run starts from a later millisecond, each of which has room for 2**20 ids."""

    #: the last id any run of this process handed out (two runs may start in one ms)
    _last = 0
    _lock = threading.Lock()

    def __init__(self) -> None:
        now_ms = max(time.time_ns() // 1_000_000 - _ID_EPOCH_MS, 1)
        self._start = (now_ms << _ID_SHIFT) + secrets.randbelow(1 << (_ID_SHIFT - 1))

    def __call__(self) -> int:
        with ChunkIds._lock:
            issued = ChunkIds._last = max(ChunkIds._last + 1, self._start)
            self._start = issued + 1
        return issued


def index_file(deps: IndexDeps, path: str) -> tuple[DocumentRecord, ParsedDocument, bytes]:
    """Read, hash and parse one file through the guarded reader: the bytes hashed are the
    bytes parsed, read through one descriptor. For a file the walk did not hash (the plan
    did not need it: a new or resized file) this is its only read. Raises KbError per file.
    """
    parser = deps.registry.parser_for(extension_of(path))
    if parser is None:
        raise ParseError(f"{path}: no parser for this extension")
    with deps.fs.open_file(path) as handle:  # the same root-bound route as every read
        data = handle.read(INDEX_CAP_BYTES)
    if data is None:
        raise PathRefused(path, "larger than the 50 MiB index cap")
    parsed = parser.parse(path, data, deps.budget)
    record = DocumentRecord(
        path=path,
        title=parsed.title,
        content_hash=content_hash(data),
        size_bytes=len(data),
        date=parsed.date,
        topic=parsed.topic or topic_of(path) or None,
        category=parsed.category or (path.split("/")[0] if "/" in path else None),
        tags=parsed.tags,
        metadata=dict(parsed.metadata),
        last_indexed=deps.clock.now_iso(),
    )
    return record, parsed, data


def kept_conversion(record: DocumentRecord, parsed: ParsedDocument) -> ConvertedText | None:
    """What the index keeps of a converted document's text, so that reads serve it instead
    of converting the file again (decision 0023); None for the formats a read serves as
    they are (Markdown, text), and for a parser that made no text."""
    if parsed.text is None or extension_of(record.path) not in BINARY_FORMATS:
        return None
    return conversion_of(record.content_hash, parsed.text)


def conversions_to_fill(deps: IndexDeps, p: IndexPlan, *, whole_folder: bool
                        ) -> list[tuple[str, str]]:
    """(path, content hash) of the unchanged converted documents whose text the index does
    not keep: an index written before decision 0023. Asked once per index, by the first
    run over the ``whole_folder`` that completes the text phase; a file that cannot be
    kept then (it fails to convert, or its text holds a NUL) is converted by each read
    instead of by every run."""
    if not whole_folder or deps.store.get_meta(META_CONVERSIONS):
        return []
    states = deps.store.indexed_states()
    wanted = {states[path].content_hash: path for path in p.unchanged
              if path in states and extension_of(path) in BINARY_FORMATS}
    kept = deps.store.converted_hashes(wanted)
    return sorted((path, digest) for digest, path in wanted.items() if digest not in kept)


def fill_conversion(deps: IndexDeps, path: str, digest: str) -> None:
    """Keep the converted text of an unchanged document, read through the guarded reader;
    bytes that no longer hash to ``digest`` are left to the next run."""
    parser = deps.registry.parser_for(extension_of(path))
    try:
        with deps.fs.open_file(path) as handle:
            data = handle.read(INDEX_CAP_BYTES)
        if parser is None or data is None or content_hash(data) != digest:
            return
        text = parser.extract_text(path, data)
    except Exception as exc:  # a read converts it instead; the run goes on
        log.info("%s: its text is not kept for reads (%s)", path, type(exc).__name__)
        return
    converted = conversion_of(digest, text)
    if converted is not None:
        deps.store.keep_conversions([converted])


__all__ = ["ChunkIds", "content_hash", "conversions_to_fill", "fill_conversion",
           "index_file", "kept_conversion", "text_hash"]
