"""The imperative half of an index run: carry out a plan through the ports, in two phases.

Phase one ("text") parses every new or changed file and writes its rows (document, chunks,
lexical rows) in transactions of many documents (all of a batch or none of it); vectors
that can be reused by chunk hash are copied to the new chunks on the way. Once it ends
the whole folder is searchable by keywords. Phase two ("vectors") embeds every chunk still
without a vector, in batches. A run killed at any point leaves every stored document whole
for the lexical leg; chunks still waiting for vectors are embedded by the next run, and
vectors whose chunk is gone are removed (docs/decisions/0008 and 0017).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from kbmcp_core.chunk_labels import ChunkLabels, labels_of
from kbmcp_core.errors import (
    EmbeddingRejected,
    EmbeddingUnavailable,
    EmbeddingUnreachable,
    KbError,
    ModelMismatch,
    ParseError,
    PathRefused,
    VectorsUnreachable,
    VectorsUnreadable,
)
from kbmcp_core.field_index import sync_fields, with_fields
from kbmcp_core.fields import Declared
from kbmcp_core.index_plan import IndexPlan, hash_needed, plan
from kbmcp_core.label_sync import label_all, relabel_document, relabel_kept
from kbmcp_core.meta_keys import (
    META_CONVERSIONS,
    META_COPY,
    META_DIMENSION,
    META_EMBED_TEXT,
    META_IN_PROGRESS,
    META_LABELLED,
    META_LAST_RUN,
    META_MODEL,
    META_PARSED_WITH,
    META_READY,
    META_VECTORS,
)
from kbmcp_core.models import (
    EMBED_TEXT,
    EMBED_TEXT_UNPLACED,
    FAIL_PARSE,
    INDEX_CAP_BYTES,
    SKIP_NO_TEXT,
    SKIP_OVERSIZE,
    SKIP_UNREADABLE,
    ChunkRecord,
    DocumentRecord,
    ParsedDocument,
    RunSummary,
    Vector,
    extension_of,
    place_of,
    vector_text_of,
)
from kbmcp_core.offer import topic_of
from kbmcp_core.ports import (
    ChunkBudget,
    Clock,
    ConvertedText,
    DocumentWrite,
    Embedder,
    FileSystem,
    IndexMeta,
    IndexWriter,
    ParserRegistry,
    Scanner,
    VectorStore,
)
from kbmcp_core.reading import BINARY_FORMATS, conversion_of

log = logging.getLogger(__name__)

#: "text": files parsed and written (phase one); "vectors": chunks embedded (phase two)
Phase = Literal["text", "vectors"]
#: ``progress(phase, done, total, item)``: ``item`` is the file just written in phase one,
#: "" in phase two. Called once with ``done == 0`` when a phase starts.
Progress = Callable[[Phase, int, int, str], None]
#: ``yield_to()``: asked between two embedding calls of phase two (never before the first,
#: so every run makes progress); True ends the run there, as a stopped run ends (0017).
YieldTo = Callable[[], bool]

#: In model batches: the chunks phase two hands to one embedding call (length-bucketed
#: inside).
FLUSH_BATCHES = 8
#: The documents whose stored chunks (ids and hashes) phase one looks up at once, ahead of
#: parsing them (one look-up a document was a tenth of an incremental run at a million).
OLD_CHUNKS_AHEAD = 512
#: In model batches: the chunks whose rows phase one writes in one transaction (32,768 at
#: the default batch size; a run killed in phase one parses at most that much again). The
#: lexical index writes a segment per transaction and merges them later: fewer, larger
#: transactions cost less (0017).
WRITE_BATCHES = 1024


@dataclass(slots=True)
class IndexDeps:
    store: IndexWriter
    vectors: VectorStore
    embedder: Embedder
    registry: ParserRegistry
    fs: FileSystem
    scanner: Scanner
    clock: Clock
    budget: ChunkBudget
    #: the embedder's batch size; phase two embeds FLUSH_BATCHES of them per call
    batch_size: int = 32
    #: the ``[fields]`` declarations: the front-matter keys indexed for filtering
    fields: Declared = ()


@dataclass(slots=True)
class _Pending:
    record: DocumentRecord
    chunks: list[ChunkRecord]
    replaces: str | None
    kind: str  # "added" | "updated" | "renamed"
    #: the text a read serves, kept with the document (converted formats; decision 0023)
    converted: ConvertedText | None = None
    #: the ids of chunks the document held before with the same text, written again under
    #: the same id: their vector stays, their lexical rows too when the store finds them
    #: unchanged (decision 0058's second addendum)
    kept: frozenset[int] = frozenset()


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


class IndexRun:
    """One run of the index use-case: scan, plan, phase one (text), phase two (vectors)."""

    def __init__(
        self,
        deps: IndexDeps,
        *,
        force: bool = False,
        prune_disabled: bool = False,
        progress: Progress | None = None,
        paths: Collection[str] | None = None,
        yield_to: YieldTo | None = None,
        embedded: Callable[[], None] | None = None,
    ) -> None:
        self.deps = deps
        #: called once phase two has embedded its last chunk, before the vectors are
        #: compacted: a run that owns the model releases it there (``kb-mcp index``; 0045)
        self.embedded = embedded
        #: None: the whole knowledge base; otherwise only these paths (the watcher)
        self.paths = None if paths is None else frozenset(paths)
        self.force = force
        self.prune_disabled = prune_disabled
        self.progress = progress
        #: the watcher's "are file events waiting?"; such a run embeds one model batch
        #: per call and may hand phase two over to the next run (0017)
        self.yield_to = yield_to
        #: chunks phase two left without vectors because ``yield_to`` said so
        self.handed_over = 0
        self.summary = RunSummary()
        self._pending: list[_Pending] = []
        self._pending_texts = 0
        #: every path the pending rows replace (a batch holds each path once)
        self._pending_paths: set[str] = set()
        #: the paths indexed when the run started: only those can have rows to compare
        self._known: frozenset[str] = frozenset()
        #: (id, text hash) of the stored chunks of the documents phase one comes to next
        self._old_chunks: dict[str, list[tuple[int, str]]] = {}
        #: chunks phase one wrote without a vector, for phase two
        self._unembedded: list[int] = []
        self._vectors_written = False
        self._ids = ChunkIds()

    # -- entry point -------------------------------------------------------
    def run(self) -> RunSummary:
        """The run, once ``check_model`` has passed for these deps (``run_index`` checks
        first; the facade checks before it builds them, so the check is made once)."""
        started = time.monotonic()
        d = self.deps
        if d.store.get_meta(META_READY) is None:
            # before anything is written: an older index keeps its readiness, a new one
            # is not ready until phase one ends below
            d.store.set_meta(META_READY, d.clock.now_iso() if index_ready(d.store) else "")
        if self.force:
            d.vectors.reset()
            self._record_model()
        mark = d.store.get_meta(META_EMBED_TEXT)
        if mark != EMBED_TEXT:
            self._renew_vectors(mark)
        repair = self._needs_repair()
        if repair:
            self._repair()
        labelled = self._labelled()
        d.store.set_meta(META_IN_PROGRESS, d.clock.now_iso())
        sync_fields(d.store, d.fields, self._warn)  # [fields] changed: no file read, no model
        indexed = d.store.indexed_states()
        self._known = frozenset(indexed)
        reparse = self._reparse_extensions(bool(indexed))
        if self.paths is not None:
            indexed = {p: s for p, s in indexed.items() if _within(p, self.paths)}
        # the walk reads and hashes only what the plan compares; every other file is read
        # once, by ``index_file`` below
        needs_hash = hash_needed(indexed, enabled_extensions=d.registry.extensions(),
                                 force=self.force, prune_disabled=self.prune_disabled)
        if self.paths is None:
            scan = d.scanner.scan(needs_hash)
        else:
            scan = d.scanner.scan_paths(self.paths, needs_hash)
        for refusal in scan.refused:
            self._warn(f"{refusal.path}: {refusal.reason}")
            if refusal.kind == "failed":  # could not be read: its old rows are kept
                self.summary.fail(refusal.category, refusal.path)
            else:
                self.summary.skip(refusal.category, 1, (refusal.path,))
        for reason, count in scan.skipped.items():  # quiet skips: counted, not warned
            self.summary.skip(reason, count, scan.skipped_paths.get(reason, ()))
        p = plan(
            scan,
            indexed,
            enabled_extensions=d.registry.extensions(),
            force=self.force,
            prune_disabled=self.prune_disabled,
            reparse_extensions=reparse,
        )
        # every path accounted for once: added + updated + renamed + unchanged + skipped
        # + failed == scanned (docs/usage.md)
        self.summary.scanned = scan.entries()
        self._apply_cheap_actions(p)
        last = self._text_phase(p)
        if self.paths is None:  # every document of the folder now has this run's parsing
            self._record_parsers()
        listed = not any(r.path == "." for r in scan.refused)  # the root could be read
        if self.paths is None and listed and not d.store.get_meta(META_READY):
            d.store.set_meta(META_READY, d.clock.now_iso())  # keyword search covers it all
        if last is not None:  # said once the index is marked ready: a stop asked for on
            self._report("text", last[0], last[0], last[1])  # it leaves no phase one undone
        self._vector_phase(repair)
        if self.handed_over:
            # ended like a stopped run: `run_in_progress` stays set and the next run
            # embeds exactly the chunks still without a vector (0008, 0017)
            self.summary.seconds = time.monotonic() - started
            return self.summary
        if self.embedded is not None:
            self.embedded()
        if self._vectors_written:
            d.vectors.compact()
        self.summary.seconds = time.monotonic() - started
        d.store.set_meta(META_LAST_RUN, _json(self.summary.as_dict(), d.clock.now_iso()))
        fingerprint = d.vectors.fingerprint() or ""
        d.store.set_meta(META_VECTORS, fingerprint)
        if labelled and fingerprint:  # every write of this run carried its labels
            d.store.set_meta(META_LABELLED, fingerprint)
        d.store.set_meta(META_IN_PROGRESS, "")
        if self.paths is None and d.store.get_meta(META_COPY):
            # a whole-folder run completed what an interrupted `migrate-store` left
            d.store.set_meta(META_COPY, "")
        return self.summary

    # -- the two phases ----------------------------------------------------
    def _text_phase(self, p: IndexPlan) -> tuple[int, str] | None:
        """Phase one: parse and write the rows of every new, changed or moved file. When
        it ends, every document of the folder is searchable by keywords. Its last step is
        not reported here but returned (total, path): ``run`` reports it once the index
        is marked ready, since a report is where a stop takes effect."""
        work: list[tuple[str, str | None]] = [(path, None) for path in p.to_index]
        work += [(new, old) for old, new in p.renames]
        fill = self._conversions_to_fill(p)  # older indexes: unchanged files, once (0023)
        total = len(work) + len(fill)
        if total:
            self._report("text", 0, total, "")
        last: tuple[int, str] | None = None
        for done, (path, replaces) in enumerate(work, start=1):
            if (done - 1) % OLD_CHUNKS_AHEAD == 0:
                self._look_ahead(work[done - 1: done - 1 + OLD_CHUNKS_AHEAD])
            self._index_one(path, replaces)
            if done == len(work):
                self._write_rows()  # the last rows commit before the phase says it is done
            if done == total:
                last = (total, path)
            else:
                self._report("text", done, total, path)
        for done, (path, digest) in enumerate(fill, start=len(work) + 1):
            self._fill_conversion(path, digest)
            if done == total:
                last = (total, path)
            else:
                self._report("text", done, total, path)
        if self.paths is None and not self.deps.store.get_meta(META_CONVERSIONS):
            self.deps.store.set_meta(META_CONVERSIONS, "filled")
        return last

    def _look_ahead(self, work: list[tuple[str, str | None]]) -> None:
        """The stored chunks of the next documents to index that were indexed when the
        run started, in one look-up (``_index_one`` compares them with the new ones)."""
        paths = [path for path, replaces in work if replaces is None and path in self._known]
        self._old_chunks = self.deps.store.chunks_of(paths) if paths else {}

    def _conversions_to_fill(self, p: IndexPlan) -> list[tuple[str, str]]:
        """(path, content hash) of the unchanged converted documents whose text the index
        does not keep: an index written before decision 0023. Asked once per index, by
        the first whole-folder run that completes the text phase; a file that cannot be
        kept then (it fails to convert, or its text holds a NUL) is converted by each
        read instead of by every run."""
        d = self.deps
        if self.paths is not None or d.store.get_meta(META_CONVERSIONS):
            return []
        states = d.store.indexed_states()
        wanted = {states[path].content_hash: path for path in p.unchanged
                  if path in states and extension_of(path) in BINARY_FORMATS}
        kept = d.store.converted_hashes(wanted)
        return sorted((path, digest) for digest, path in wanted.items() if digest not in kept)

    def _fill_conversion(self, path: str, digest: str) -> None:
        """Keep the converted text of an unchanged document, read through the guarded
        reader; bytes that no longer hash to ``digest`` are left to the next run."""
        d = self.deps
        parser = d.registry.parser_for(extension_of(path))
        try:
            with d.fs.open_file(path) as handle:
                data = handle.read(INDEX_CAP_BYTES)
            if parser is None or data is None or content_hash(data) != digest:
                return
            text = parser.extract_text(path, data)
        except Exception as exc:  # a read converts it instead; the run goes on
            log.info("%s: its text is not kept for reads (%s)", path, type(exc).__name__)
            return
        converted = conversion_of(digest, text)
        if converted is not None:
            d.store.keep_conversions([converted])

    def _vector_phase(self, repair: bool) -> None:
        """Phase two: embed every chunk that has no vector yet. After a run that did not
        finish (``repair``) that includes the chunks it left without one."""
        d = self.deps
        fresh = len(self._unembedded)
        todo = self._unembedded
        if repair:  # this run's own chunks first: the file just saved gets its vectors soon
            missing = d.store.chunk_ids() - d.vectors.ids()
            todo = [c for c in todo if c in missing]
            todo += sorted(missing.difference(todo))
        self._unembedded = []
        if not todo:
            return
        left_over = len(todo) - fresh
        step = max(d.batch_size * FLUSH_BATCHES, 32)
        if self.yield_to is not None:
            step = max(d.batch_size, 1)  # a hand-over point after every model batch
        self._report("vectors", 0, len(todo), "")
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
                self._write_vectors(rows, {}, {h: found[cid].document_path
                                               for cid, h, _ in rows},
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
        if repair and left_over > 0:
            log.info("embedded %d chunks an interrupted run had left without vectors",
                     left_over)

    def _report(self, phase: Phase, done: int, total: int, item: str) -> None:
        if self.progress is not None:
            self.progress(phase, done, total, item)

    # -- steps -------------------------------------------------------------
    def _reparse_extensions(self, has_rows: bool) -> frozenset[str]:
        """The enabled extensions whose parser changed what it makes of a file since the
        rows were written (``META_PARSED_WITH``; all of them in an index from before that
        mark): their unchanged documents are read again. Their chunks keep their vectors
        wherever the text is the same (vectors are reused by chunk text)."""
        d = self.deps
        if not has_rows:  # a new index: whatever this run (or its resumption) writes is
            self._record_parsers()  # made by today's parsers
            return frozenset()
        if self.force:
            return frozenset()
        stored = _parsed_with(d.store.get_meta(META_PARSED_WITH))
        stale = frozenset(ext for ext, generation in d.registry.conversion_versions().items()
                          if stored.get(ext) != generation)
        if stale:
            log.info("the conversion of %s changed since this index was built: those "
                     "documents are read again (unchanged text keeps its vectors)",
                     ", ".join(f".{ext}" for ext in sorted(stale)))
        return stale

    def _record_parsers(self) -> None:
        """After a whole-folder text phase: which parser generation made the rows (kept
        for extensions not enabled now, whose rows stay as an older parser made them)."""
        d = self.deps
        merged = {**_parsed_with(d.store.get_meta(META_PARSED_WITH)),
                  **d.registry.conversion_versions()}
        d.store.set_meta(META_PARSED_WITH, json.dumps(merged, sort_keys=True))

    def _needs_repair(self) -> bool:
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

    def _labelled(self) -> bool:
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
            self._vectors_written = True  # their rows rewritten: ``compact`` folds them
        return True

    def _renew_vectors(self, mark: str | None) -> None:
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

    def _repair(self) -> None:
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

    def _apply_cheap_actions(self, p: IndexPlan) -> None:
        d = self.deps
        if p.delete:
            d.vectors.delete(d.store.delete_documents(p.delete))
            self.summary.deleted += len(p.delete)
        for path, size in p.oversize_sizes.items():
            d.store.record_size(path, size)
            self._warn(f"{path}: larger than the 50 MiB index cap ({size} bytes); skipped")
        for path in p.oversize_new:
            self._warn(f"{path}: larger than the 50 MiB index cap; skipped")
        self.summary.skip(SKIP_OVERSIZE, len(p.oversize_sizes) + len(p.oversize_new),
                          [*p.oversize_sizes, *p.oversize_new])
        self.summary.sizes_backfilled = d.store.backfill_sizes(p.backfill_sizes)
        self.summary.unchanged = len(p.unchanged)
        # ``p.kept_after_failure`` (rows kept for paths the walk could not read) is not
        # counted again: the refusal behind it already counts as one failed path

    def _index_one(self, path: str, replaces: str | None) -> None:
        d = self.deps
        try:
            record, parsed, _ = index_file(d, path)
        except KbError as exc:
            refused = isinstance(exc, PathRefused)
            self.summary.fail(SKIP_UNREADABLE if refused else FAIL_PARSE, path)
            self._warn(f"{path}: {exc.detail if isinstance(exc, PathRefused) else exc}")
            return
        except Exception as exc:  # a hostile file must never abort the run
            self.summary.fail(FAIL_PARSE, path)
            self._warn(f"{path}: unexpected error while parsing ({type(exc).__name__})")
            log.debug("parse failure", exc_info=True)
            return
        for w in parsed.warnings:
            self._warn(f"{path}: {w}")
        record = with_fields(record, d.fields, self._warn)
        converted = kept_conversion(record, parsed)
        # a path not indexed when the run started has no rows to compare
        stored = self._old_chunks.get(path) if replaces is None else None
        if not parsed.chunks:
            self._warn(f"{path}: no text to index; skipped")
            self.summary.skip(SKIP_NO_TEXT, 1, (path,))
            if replaces is not None or stored is not None:
                d.vectors.delete(d.store.delete_documents([path]))
            return
        hashes = [text_hash(c.whole_text) for c in parsed.chunks]
        old = None if stored is None else [digest for _, digest in stored]
        if old is not None and old == hashes and not self.force:
            # its chunks' labels first (vectors kept; 0058): a run stopped in between
            # finds the old row and does both again
            before = d.store.documents([path])
            if relabel_document(d.store, d.vectors, before[0] if before else None, record):
                self._vectors_written = True
            d.store.update_document_metadata(record, converted)
            self.summary.updated += 1
            self.summary.metadata_only += 1
            self.summary.chunks_reused += len(hashes)
            return
        ids = self._chunk_ids(hashes, [] if stored is None or self.force else stored)
        chunks = [
            ChunkRecord(
                id=cid,
                ordinal=c.ordinal,
                heading=c.heading,
                heading_path=c.heading_path,
                content=c.content,
                text_hash=h,
                start_line=c.start_line,
                end_line=c.end_line,
                page=c.page,
            )
            for c, h, cid in zip(parsed.chunks, hashes, ids, strict=True)
        ]
        kept = frozenset(cid for cid, _ in stored or ()) & frozenset(ids)
        kind = "renamed" if replaces else ("updated" if old is not None else "added")
        paths = {path, replaces or path}
        if paths & self._pending_paths:
            self._write_rows()
        self._pending.append(_Pending(record, chunks, replaces, kind, converted, kept))
        self._pending_paths |= paths
        self._pending_texts += len(chunks)
        if self._pending_texts >= max(self.deps.batch_size * WRITE_BATCHES, 32):
            self._write_rows()

    def _chunk_ids(self, hashes: list[str], stored: list[tuple[int, str]]) -> list[int]:
        """An id for each new chunk: the id of a chunk the document held before with the
        same text hash (in order; each used once), else a new one. A chunk whose text did
        not change keeps its vector, and its lexical rows when the store finds them the
        same, instead of being deleted and written again under a new id."""
        free: dict[str, list[int]] = {}
        for cid, digest in reversed(stored):
            free.setdefault(digest, []).append(cid)
        return [free[h].pop() if free.get(h) else self._ids() for h in hashes]

    def _write_rows(self) -> None:
        """Write the pending documents' rows in one transaction (all of them or none). A
        chunk that keeps its id keeps its vector; another whose text is already indexed
        gets a copy of that chunk's vector; the others wait for phase two. The vectors of
        replaced chunks are dropped only after that copy. (Writing on a thread of its own
        while the next files are parsed was slower: the database gives the GIL back and
        takes it again for every row.)"""
        if not self._pending:
            return
        batch = self._pending
        self._pending = []
        self._pending_texts = 0
        self._pending_paths = set()
        d = self.deps
        kept = frozenset(cid for p in batch for cid in p.kept)  # their vectors stay
        all_chunks = [c for p in batch for c in p.chunks if c.id not in kept]
        known: dict[str, int] = {}
        if not self.force:  # looked up while the replaced chunks still exist
            known = d.store.chunk_hashes({c.text_hash for c in all_chunks})
        if d.store.get_meta(META_MODEL) is None:
            self._record_model()
        # the kept chunks' labels first, as a metadata-only change does (0058)
        if relabel_kept(d.store, d.vectors, {p.record.path: (p.record, p.kept)
                                             for p in batch if p.kept}):
            self._vectors_written = True
        removed = d.store.write_documents(
            [DocumentWrite(p.record, p.chunks, p.replaces, p.converted) for p in batch])
        for p in batch:
            if p.kind == "renamed":
                self.summary.renamed += 1
            elif p.kind == "updated":
                self.summary.updated += 1
            else:
                self.summary.added += 1
        # a first index finds nothing to read and never opens the vector store here
        wanted = set(known.values()) | kept
        got = d.vectors.get(wanted) if wanted else {}
        reusable = {h: got[cid] for h, cid in known.items() if cid in got}
        reused = [(c, labels_of(p.record)) for p in batch for c in p.chunks
                  if c.id not in kept and c.text_hash in reusable]
        # a kept chunk without a vector (a service refused its text: 0037) is embedded
        self.summary.chunks_reused += len(kept & got.keys())
        self._unembedded += sorted(kept.difference(got))
        if reused:  # ids this run has just made: appended, no upsert (0045)
            d.vectors.append([c.id for c, _ in reused],
                             [reusable[c.text_hash] for c, _ in reused],
                             [labels for _, labels in reused])
            self.summary.chunks_reused += len(reused)
            self._vectors_written = True
        self._unembedded += [c.id for c in all_chunks if c.text_hash not in reusable]
        if removed:
            d.vectors.delete(removed)

    def _write_vectors(
        self, chunks: list[tuple[int, str, str]], reusable: dict[str, Vector],
        paths: dict[str, str], labels: Mapping[int, ChunkLabels],
    ) -> None:
        """Embed what cannot be reused (each distinct text once) and store every vector
        with its chunk's ``labels``. A text an embedding service refuses gets none, with a
        warning naming its document (``paths``: chunk hash -> path); its keyword rows stay
        (decision 0037)."""
        if not chunks:
            return
        texts = {h: t for _, h, t in chunks if h not in reusable}
        embedded = 0
        if texts:
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
            new = {h: v for h, v in zip(texts, got, strict=True) if v is not None}
            embedded = len(new)
            reusable = {**reusable, **new}
        self.summary.chunks_embedded += embedded
        self.summary.chunks_reused += len(chunks) - len(texts)
        kept = [(cid, h) for cid, h, _ in chunks if h in reusable]
        if kept:  # ids without a vector (this run's, or read as missing): appended (0045)
            self.deps.vectors.append([cid for cid, _ in kept], [reusable[h] for _, h in kept],
                                     [labels[cid] for cid, _ in kept])
            self._vectors_written = True

    def _record_model(self) -> None:
        self.deps.store.set_meta(META_MODEL, self.deps.embedder.model_id)
        self.deps.store.set_meta(META_DIMENSION, str(self.deps.embedder.dimension))

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.summary.warnings.append(message)


def _parsed_with(raw: str | None) -> dict[str, int]:
    """``META_PARSED_WITH`` as a mapping; absent or unreadable = nothing known."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int)}


def _json(summary: dict[str, object], finished_at: str) -> str:
    return json.dumps({**summary, "finished_at": finished_at}, ensure_ascii=False)


def _within(path: str, targets: Collection[str]) -> bool:
    """True when ``path`` is one of ``targets`` or lies under one of them (a folder)."""
    return path in targets or any(path.startswith(t.rstrip("/") + "/") for t in targets)


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


def run_index(
    deps: IndexDeps,
    *,
    force: bool = False,
    prune_disabled: bool = False,
    progress: Progress | None = None,
    paths: Collection[str] | None = None,
    yield_to: YieldTo | None = None,
) -> RunSummary:
    """Index the whole knowledge base, or only ``paths`` (files or folders). With
    ``yield_to``, phase two may end early when it says so (the watcher's syncs). Refuses
    first (``ModelMismatch``) an index made with another model, unless ``force``."""
    check_model(deps.store, deps.embedder, force)
    if force:
        probe_model(deps.embedder)
    return IndexRun(deps, force=force, prune_disabled=prune_disabled, progress=progress,
                    paths=paths, yield_to=yield_to).run()


__all__ = ["ChunkIds", "IndexDeps", "IndexRun", "YieldTo", "check_model", "index_file",
           "index_ready", "probe_model", "run_index"]
