"""The imperative half of an index run: carry out a plan through the ports, in two phases.

Phase one ("text") parses every new or changed file and writes its rows (document, chunks,
lexical rows) in transactions of many documents (all of a batch or none of it); vectors
that can be reused by chunk hash are copied to the new chunks on the way. Once it ends
the whole folder is searchable by keywords. Phase two ("vectors", ``index_vectors``)
embeds every chunk still without a vector, in batches. A run killed at any point leaves
every stored document whole for the lexical leg; chunks still waiting for vectors are
embedded by the next run, and vectors whose chunk is gone are removed (docs/decisions/0008
and 0017). What a run is given is ``index_deps``; how it reads one file, ``index_files``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from kbmcp_core.chunk_labels import labels_of
from kbmcp_core.errors import KbError, PathRefused
from kbmcp_core.field_index import sync_fields, with_fields
from kbmcp_core.index_deps import (
    IndexDeps,
    Phase,
    Progress,
    YieldTo,
    check_model,
    index_ready,
    probe_model,
)
from kbmcp_core.index_files import (
    ChunkIds,
    conversions_to_fill,
    fill_conversion,
    index_file,
    kept_conversion,
    text_hash,
)
from kbmcp_core.index_plan import IndexPlan, hash_needed, plan
from kbmcp_core.index_vectors import VectorSteps
from kbmcp_core.label_sync import relabel_document, relabel_kept
from kbmcp_core.meta_keys import (
    META_CONVERSIONS,
    META_COPY,
    META_EMBED_TEXT,
    META_IN_PROGRESS,
    META_LABELLED,
    META_LAST_RUN,
    META_MODEL,
    META_READY,
    META_VECTORS,
)
from kbmcp_core.models import (
    EMBED_TEXT,
    FAIL_PARSE,
    SKIP_NO_TEXT,
    SKIP_OVERSIZE,
    SKIP_UNREADABLE,
    ChunkRecord,
    DocumentRecord,
    RunSummary,
)
from kbmcp_core.parser_generations import record_parsers, stale_extensions
from kbmcp_core.ports import ConvertedText, DocumentWrite

log = logging.getLogger(__name__)

#: The documents whose stored chunks (ids and hashes) phase one looks up at once, ahead of
#: parsing them (one look-up a document was a tenth of an incremental run at a million).
OLD_CHUNKS_AHEAD = 512
#: In model batches: the chunks whose rows phase one writes in one transaction (32,768 at
#: the default batch size; a run killed in phase one parses at most that much again). The
#: lexical index writes a segment per transaction and merges them later: fewer, larger
#: transactions cost less (0017).
WRITE_BATCHES = 1024


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
        self._ids = ChunkIds()
        #: the checks, phase two and every vector write (``index_vectors``); given
        #: ``yield_to``, the watcher's "are file events waiting?", phase two embeds one
        #: model batch per call and may hand over to the next run (0017)
        self.vector_side = VectorSteps(deps, self.summary, force=force, paths=self.paths,
                                   warn=self._warn, report=self._report, yield_to=yield_to)

    @property
    def handed_over(self) -> int:
        """The chunks phase two left without vectors because ``yield_to`` said so."""
        return self.vector_side.handed_over

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
            self.vector_side.record_model()
        mark = d.store.get_meta(META_EMBED_TEXT)
        if mark != EMBED_TEXT:
            self.vector_side.renew(mark)
        repair = self.vector_side.needs_repair()
        if repair:
            self.vector_side.repair()
        labelled = self.vector_side.labelled()
        d.store.set_meta(META_IN_PROGRESS, d.clock.now_iso())
        sync_fields(d.store, d.fields, self._warn)  # [fields] changed: no file read, no model
        indexed = d.store.indexed_states()
        self._known = frozenset(indexed)
        reparse = stale_extensions(d, has_rows=bool(indexed), force=self.force)
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
            record_parsers(d)
        listed = not any(r.path == "." for r in scan.refused)  # the root could be read
        if self.paths is None and listed and not d.store.get_meta(META_READY):
            d.store.set_meta(META_READY, d.clock.now_iso())  # keyword search covers it all
        if last is not None:  # said once the index is marked ready: a stop asked for on
            self._report("text", last[0], last[0], last[1])  # it leaves no phase one undone
        unembedded, self._unembedded = self._unembedded, []
        self.vector_side.embed_missing(unembedded, repair)
        if self.handed_over:
            # ended like a stopped run: `run_in_progress` stays set and the next run
            # embeds exactly the chunks still without a vector (0008, 0017)
            self.summary.seconds = time.monotonic() - started
            return self.summary
        if self.embedded is not None:
            self.embedded()
        if self.vector_side.written:
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
        # older indexes: unchanged files, once (0023)
        fill = conversions_to_fill(self.deps, p, whole_folder=self.paths is None)
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
            fill_conversion(self.deps, path, digest)
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

    def _report(self, phase: Phase, done: int, total: int, item: str) -> None:
        if self.progress is not None:
            self.progress(phase, done, total, item)

    # -- steps -------------------------------------------------------------
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
                self.vector_side.written = True
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
            self.vector_side.record_model()
        # the kept chunks' labels first, as a metadata-only change does (0058)
        if relabel_kept(d.store, d.vectors, {p.record.path: (p.record, p.kept)
                                             for p in batch if p.kept}):
            self.vector_side.written = True
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
            self.vector_side.written = True
        self._unembedded += [c.id for c in all_chunks if c.text_hash not in reusable]
        if removed:
            d.vectors.delete(removed)

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.summary.warnings.append(message)


def _within(path: str, targets: Collection[str]) -> bool:
    """True when ``path`` is one of ``targets`` or lies under one of them (a folder)."""
    return path in targets or any(path.startswith(t.rstrip("/") + "/") for t in targets)


def _json(summary: dict[str, object], finished_at: str) -> str:
    return json.dumps({**summary, "finished_at": finished_at}, ensure_ascii=False)


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


__all__ = ["OLD_CHUNKS_AHEAD", "WRITE_BATCHES", "IndexRun", "run_index"]
