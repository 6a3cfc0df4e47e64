"""The library facade: one object per knowledge base, used by the CLI, MCP and Python code.

    from kbmcp_adapters import open_knowledge_base
    kb = open_knowledge_base("notes/")
    kb.index()
    for hit in kb.search("how do I rotate the keys?").results:
        print(hit.path, hit.heading)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from logging import Logger
from pathlib import Path
from typing import Any

from kbmcp_adapters.app.bootstrap import Container, OpenedStore, bootstrap, settings_for, store_of
from kbmcp_adapters.app.in_process_lock import (
    IndexRunStopped,
    InProcessWriter,
    StoppableEmbedder,
    stop_check,
)
from kbmcp_adapters.app.index_state import CHECKED, state_dir
from kbmcp_adapters.app.vectors_ahead import VectorsOpenedAhead
from kbmcp_adapters.store import checked_stamp
from kbmcp_adapters.store.cross_process_lock import writer_lock
from kbmcp_core.batch_read import DEFAULT_BATCH_CHARS, Batch, read_batch
from kbmcp_core.doctor import (
    CHECK_BUDGET_S,
    DoctorReport,
    damaged_store_report,
    diagnose,
    empty_store_report,
)
from kbmcp_core.errors import (
    EmbeddingUnreachable,
    IndexNotFound,
    IndexNotReady,
    InvalidQuery,
    NotOffered,
    RerankerUnavailable,
    StoreCorrupt,
    StoreError,
)
from kbmcp_core.graph import ConnectionGraph, GraphBounds, build_graph
from kbmcp_core.index_deps import Phase, Progress, YieldTo, check_model, index_ready, probe_model
from kbmcp_core.index_run import IndexRun
from kbmcp_core.models import DiskScan, IndexStats, RunSummary, StoredChunk, StoredDocument
from kbmcp_core.offer import (
    OfferRules,
    ResourceBody,
    TopicGroup,
    TopicSummary,
    read_resource,
    topic_groups,
    topic_of,
    topic_summaries,
)
from kbmcp_core.ports import ConvertedText, ExclusionPolicy, VectorReader
from kbmcp_core.ranges import RangeRequest, TextRange, range_fields, read_range
from kbmcp_core.reading import ConversionGate, LoadedDocument, clean_request_path, load_document
from kbmcp_core.search import Searcher, SearchResponse
from kbmcp_core.search_request import (
    SearchDefaults,
    SearchRequest,
    check_filter_text,
    needs_embedder,
)
from kbmcp_core.settings import Settings
from kbmcp_core.uris import doc_uri


@dataclass(frozen=True, slots=True)
class DocumentView:
    """What ``get_document`` returns: the text plus what the index knows about it."""

    path: str
    title: str
    date: str | None
    topic: str | None
    tags: tuple[str, ...]
    content: str
    truncated: bool
    #: where ``content`` sits in the document (``ranges.TextRange``, decision 0033)
    part: TextRange | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "title": self.title,
            "date": self.date,
            "topic": self.topic,
            "tags": list(self.tags),
            "content": self.content,
            "truncated": self.truncated,
            **(range_fields(self.part) if self.part is not None else {}),
        }


class KnowledgeBase:
    """Use-cases over one knowledge base. Thread-safe for readers; one writer at a time."""

    def __init__(self, container: Container, *, conversions: ConversionGate | None = None
                 ) -> None:
        """``conversions``: the slots reads convert documents in (default: the documented
        ``CONVERSION_SLOTS`` and ``CONVERSION_WAIT_S``)."""
        self._container = container
        self._writer = InProcessWriter()
        self._stopping = threading.Event()
        self._warm_lock = threading.Lock()
        self._warm = False
        #: the vectors, opened in a thread by the first search that embeds its query
        self._vectors_ahead: VectorsOpenedAhead | None = None
        self._ahead_lock = threading.Lock()  # not the warm-up's: that one waits for a model
        #: once a run has read the whole folder in, it stays so (``is_ready``)
        self._ready = False
        #: reads that must convert a document take one of its slots (decision 0023)
        self._conversions = conversions or ConversionGate()

    @classmethod
    def from_settings(cls, settings: Settings) -> KnowledgeBase:
        """The knowledge base with the real adapters for ``settings`` (built on first use).
        To replace some of them, ``KnowledgeBase(bootstrap(settings, embedder=...))``."""
        return cls(bootstrap(settings))

    @property
    def settings(self) -> Settings:
        return self._container.settings

    def model_note(self) -> str | None:
        """Why the model differs from the default, for ``status``: kept from the index
        because the config names none (``index_model.model_note``), else None."""
        from kbmcp_adapters.app.index_model import model_note

        return model_note(self.settings)

    @property
    def configured_model(self) -> str:
        """The model identity the settings ask for, an embedding service's included
        (what an index built now records); nothing is loaded or sent."""
        from kbmcp_adapters.embedding.service_config import configured_model

        return configured_model(self.settings)

    # -- opening -----------------------------------------------------------
    def open_index(self, *, create: bool = False) -> None:
        """Open (and migrate) the index store, once for this knowledge base.

        ``IndexNotFound`` when there is none and ``create`` is false; ``IndexReadOnly`` when
        it cannot be created or upgraded by this user."""
        self._container.open_store(create=create)

    def warm_up(self, announce: Logger | None = None) -> None:
        """Load the embedding model and open the vector store, once for this knowledge
        base (the first search or index run would otherwise pay for it). ``announce``: the
        log that says when the model starts loading and how long it took (the MCP server's
        own; it is said once, by the call that loads)."""
        if self._warm:
            return
        with self._warm_lock:
            if self._warm:
                return
            if announce is not None:
                announce.info("loading embedding model %s", self.settings.embedding_model)
            started = time.monotonic()
            from kbmcp_adapters.embedding.service_config import SERVICE_PROVIDER

            if self.settings.embedding_provider == SERVICE_PROVIDER:
                # nothing to load but the tokenizer: no request, so no search queues behind
                # another's wait for the service (each asks for its own query, 0037)
                self._container.embedder.count_tokens(["kb-mcp"])
            else:
                try:
                    self._container.embedder.embed_query("kb-mcp")
                except EmbeddingUnreachable as exc:  # searches answer from keywords meanwhile
                    if announce is not None:
                        announce.warning("%s; searches use keywords until it answers", exc)
            self._container.vectors  # noqa: B018  (built here once, not by racing threads)
            if announce is not None:
                announce.info("embedding model ready in %.1fs", time.monotonic() - started)
            self._warm = True

    # -- the pieces the watcher and the tools ask about --------------------
    def now_iso(self) -> str:
        """The knowledge base's clock (``Clock.now_iso``)."""
        return self._container.clock.now_iso()

    def enabled_extensions(self) -> frozenset[str]:
        """The file extensions of the enabled formats, e.g. ``{".md", ".pdf"}``."""
        return self._container.registry.extensions()

    def exclusion_rules(self) -> ExclusionPolicy:
        """The exclusion rules as they are on disk now (``.kb-mcpignore`` re-read)."""
        return self._container.rules

    def scan(self, *, read: bool = True) -> DiskScan:
        """Walk the knowledge base as an index run would, writing nothing; ``read=False``
        hashes no file (what is taken and skipped, and why, without reading contents)."""
        walker = self._container.walker(remember=False)
        return walker.scan(None if read else (lambda _path, _size: False))

    def indexed_paths(self) -> list[str]:
        """Every indexed path, sorted. ``IndexNotFound`` when there is no index."""
        return sorted(self._container.store.document_paths())

    def document(self, path: str) -> StoredDocument | None:
        """What the index holds for ``path``, or None. ``IndexNotFound`` when no index."""
        return self._container.store.get_document(path)

    def is_read_only(self) -> bool:
        """True when this user can search the index but not write it."""
        return self._container.store.read_only

    # -- writing -----------------------------------------------------------
    def index(self, *, force: bool = False, prune: bool = False,
              progress: Progress | None = None,
              paths: Collection[str] | None = None,
              stop: threading.Event | None = None,
              purpose: str = "an index run",
              yield_to: YieldTo | None = None,
              release_model: bool = False) -> RunSummary:
        """Index everything, or only ``paths`` (the watcher's single-file route).

        Waits at most ``[lock].timeout_seconds`` in all for the other writers (of this
        process, then of any process), then raises ``WriterBusy``. Once ``stop`` is set
        (or ``stop_writers()`` was called) the run ends at its next safe point with
        ``IndexRunStopped``; the next run completes what it left. With ``yield_to`` (the
        watcher's "file events are waiting"), phase two embeds one model batch per call
        and ends between two calls once it returns True: the run returns normally, with
        ``run_in_progress`` still set, and the next run embeds the rest (0017).
        With ``release_model`` the embedding model is dropped once phase two is done,
        before the vectors are compacted, and its memory given back (``model_release``;
        ``kb-mcp index``, or a program that does not embed again soon): the next call
        loads it again.
        """
        check = stop_check(self._stopping, stop)
        check()
        if force:  # a rebuild from nothing takes the default model (decision 0046)
            self._container.rebuild_model()
        self.check_configuration()  # a bad setting fails before anything is created
        timeout = self.settings.writer_lock_timeout_s
        deadline = time.monotonic() + max(timeout, 0.0)
        with (self._writer.hold(purpose, deadline, timeout, check) as now_writing,
              writer_lock(self.settings.index_dir, timeout, purpose, deadline=deadline,
                          check=check, store_url=store_of(self.settings))):
            now_writing()
            c = self._container
            # before anything asks the model for its window (which may need a download)
            store = c.open_store(create=True)
            check_model(store, c.embedder, force)
            if force:  # one request proves the model answers before anything is emptied
                probe_model(c.embedder)
            whole = self._refuse_damaged_store(store, check=paths is None)
            deps = c.index_deps()
            deps.embedder = StoppableEmbedder(deps.embedder, check, 2 * deps.batch_size)

            def step(phase: Phase, done: int, total: int, item: str) -> None:
                if progress is not None:
                    progress(phase, done, total, item)
                check()  # between two documents, or two embedding calls

            embedded = None
            if release_model:
                from kbmcp_adapters.app.model_release import release_model as release

                def embedded() -> None:
                    release(c.embedder)

            # the model was checked above: the run starts at once (the check is made once)
            summary = IndexRun(deps, force=force, prune_disabled=prune, progress=step,
                               paths=paths, yield_to=yield_to, embedded=embedded).run()
            if whole is not None:  # known whole before the run: only kb-mcp wrote since
                checked_stamp.record(whole, self._checked_in())
            return summary

    def check_configuration(self) -> None:
        """Build what an index run needs from the settings (the formats, the exclusion
        rules, the embedding model's name and batch settings, the reranker): a bad value
        raises ``ConfigError`` here, before any folder, lock or index file is created."""
        c = self._container
        c.registry  # noqa: B018  (built now: an unknown format is refused here)
        c.rules  # noqa: B018
        c.embedder  # noqa: B018
        c.reranker  # noqa: B018

    def _refuse_damaged_store(self, store: OpenedStore, *, check: bool) -> Path | None:
        """``StoreCorrupt`` when SQLite's quick check finds damage anywhere in the index
        database: a whole-folder run (``check``) never writes into a damaged file (pages
        it would not touch included). The check is skipped when the file is the one the
        last run that checked it left (``checked_stamp``, decision 0058); one that runs out
        of time lets the run go on, as before. Returns the database when nothing but
        kb-mcp wrote it since a check found nothing (its stamp is then kept again after the
        run), else None."""
        db = store_of(self.settings).path
        if not store.has_integrity_check() or db is None:
            return None
        if checked_stamp.unchanged(db, self._checked_in()):
            return db
        checked_stamp.forget(self._checked_in())  # the run writes into a file not known whole
        if not check:
            return None
        problems = store.quick_check(CHECK_BUDGET_S)
        if problems:  # SQLite's first complaint, on one line
            raise StoreCorrupt(self._damaged_hint(), " ".join(problems[0].split())[:200])
        # clean, or out of time (checking the same unchanged bytes again finds no more)
        return db

    def _checked_in(self) -> Path:
        """Where the database's stamp after a check is kept (``app/index_state.py``)."""
        return state_dir(self.settings.index_dir) / CHECKED

    def _damaged_hint(self) -> str:
        from kbmcp_adapters.store.engine import rebuild_hint

        db = store_of(self.settings).path
        return rebuild_hint(db) if db is not None else "the index database"

    def is_ready(self) -> bool:
        """Whether a run has read the whole folder into the index (``index_ready``);
        ``IndexNotFound`` when there is no index."""
        if not self._ready:
            self._ready = index_ready(self._container.store)
        return self._ready

    def _require_ready(self) -> None:
        """``IndexNotReady`` unless a run has read the whole folder into the index: an
        empty answer from an index that never got there would look like "no match"."""
        if not self.is_ready():
            raise IndexNotReady(store_of(self.settings).shown)

    def stop_writers(self) -> None:
        """For shutdown: every index run stops at its next safe point (between documents
        or embedding calls) with ``IndexRunStopped``, and no new one starts."""
        self._stopping.set()

    # -- reading -----------------------------------------------------------
    def offer_rules(self) -> OfferRules:
        """What the index offers (decision 0001): the one predicate reads and listings use."""
        return OfferRules(self._container.store, self._container.registry)

    def searcher(self, *, embeds: bool = False) -> Searcher:
        """The searcher over this knowledge base's ports. ``embeds``: its search embeds the
        query (``needs_embedder``), so the vectors start opening now, in a thread, while
        the model loads (once per knowledge base; decision 0057)."""
        s = self.settings
        return Searcher(
            self._container.store,
            self._opened_ahead() if embeds else self._container.vectors,
            self._container.embedder,
            self.offer_rules(),
            defaults=SearchDefaults.from_settings(s),
            reranker=self._container.reranker,
            fusion=s.fusion,
            passages=s.search_passage_candidates,
            beside=self._container.legs,
        )

    def search(self, query: str, **params: Any) -> SearchResponse:
        """Hybrid search. ``IndexNotFound`` without an index, ``IndexNotReady`` while no
        run has read the whole folder into it yet. ``params``: the fields of
        ``SearchRequest``, lists welcome, None for one not given; the searcher resolves
        them against the ``[search]`` settings (``search_request.resolve``)."""
        self._require_ready()
        embeds = needs_embedder(params.get("mode"))
        return self.searcher(embeds=embeds).search(SearchRequest.of(query, **params))

    def _opened_ahead(self) -> VectorReader:
        with self._ahead_lock:
            if self._vectors_ahead is None:
                self._vectors_ahead = VectorsOpenedAhead(self._container.vectors)
            return self._vectors_ahead

    def load(self, path: str) -> LoadedDocument:
        """The guard chain; a converted document's text comes from the index when it
        holds one for the file's bytes, else from a conversion in one of the slots."""
        c = self._container
        return load_document(path, c.fs, c.registry, _KeptConversions(c), self._conversions)

    def get_document(self, path: str, **part: Any) -> DocumentView:
        """Any file under the root with an enabled format, indexed or not (guarded); all
        of it, or the part ``part`` names (the fields of ``ranges.RangeRequest``:
        start_line, max_lines, section, page, max_chars, outline; None = not given)."""
        c = self._container
        ask = RangeRequest(**{k: v for k, v in part.items() if v is not None})
        got = read_range(clean_request_path(path), ask, c.fs, c.registry,
                         _KeptConversions(c), self._conversions, index=_IndexedChunks(c))
        row = self._row(got.path)
        return DocumentView(
            path=got.path,
            title=row.title if row else Path(got.path).stem.replace("-", " "),
            date=row.date if row else None,
            topic=(row.topic if row and row.topic else topic_of(got.path) or None),
            tags=row.tags if row else (),
            content=got.text,
            truncated=got.truncated,
            part=got,
        )

    def get_documents(self, paths: Sequence[str] | None = None, *, glob: str | None = None,
                      max_chars: int = DEFAULT_BATCH_CHARS) -> Batch[DocumentView]:
        """Several offered documents, each read as ``get_document`` reads one, within a
        total budget (``kbmcp_core.batch_read``): a document that does not fit is left out
        with the reason, a path that cannot be read is an error of its own."""
        return read_batch(self.offer_rules(), self.get_document, lambda d: d.content,
                          paths=paths, glob=glob, max_chars=max_chars)

    def _row(self, path: str) -> StoredDocument | None:
        """The document's indexed row; None when it, or the whole index, does not exist.
        A store that fails raises: its metadata is never silently left out."""
        try:
            return self._container.store.get_document(path)
        except IndexNotFound:
            return None

    def offered_paths(self) -> list[str]:
        """Every document the index offers as a resource, sorted."""
        return self.offer_rules().offered_paths()

    def topic_groups(self) -> list[TopicGroup]:
        return topic_groups(self.offer_rules())

    def topic_summaries(self) -> list[TopicSummary]:
        """Topic groups with counts and first paths: the cheap listing."""
        return topic_summaries(self.offer_rules())

    def titles(self, paths: Collection[str]) -> dict[str, str]:
        return {d.path: d.title for d in self._container.store.documents(paths)}

    def read_resource(self, uri: str, *, collection: str | None = None) -> ResourceBody:
        """``kb://doc/<path>`` (offered documents only) or ``kb://topic/<prefix>``: the
        core use-case ``offer.read_resource`` over this knowledge base's adapters;
        ``collection``: the URIs the body names carry it (decision 0042)."""
        c = self._container
        return read_resource(uri, self.offer_rules(), c.fs, _KeptConversions(c),
                             self._conversions, collection=collection)

    def connection_graph(self, *, path: str | None = None, query: str | None = None,
                         bounds: GraphBounds | None = None) -> ConnectionGraph:
        """Offered documents linked by nearest-neighbour chunks, from one document or from
        the documents a search finds (kbmcp_core.graph). Searching loads the model."""
        from kbmcp_core.neighbours import ChunkNeighbours

        if (path is None) == (query is None):
            raise InvalidQuery("give exactly one of path or query")
        if path is not None:
            check_filter_text("path", path)
        rules = self.offer_rules()
        offered = rules.offered_paths()
        if path is not None:
            if not rules.is_offered(path):
                raise NotOffered(path, "not offered by this knowledge base")
            seeds, seeded_by = [path], {"path": path}
        else:
            assert query is not None
            hits = self.search(query, limit=self.settings.search_max_limit).results
            seeds = list(dict.fromkeys(h.path for h in hits if h.uri is not None))
            seeded_by = {"query": query}
        c = self._container
        return build_graph(seeds, ChunkNeighbours(c.store, c.vectors, offered), offered,
                           self.titles, doc_uri, bounds or GraphBounds(),
                           seeded_by)

    def doctor(self) -> DoctorReport:
        """Read-only health report; never creates or upgrades the index."""
        c = self._container
        where = self._damaged_hint()
        try:
            store = c.open_store(create=False, migrate=False)
        except StoreCorrupt as exc:  # too damaged to open at all
            return damaged_store_report([exc.detail], where)
        from kbmcp_core.index_copy import marked_source
        from kbmcp_core.meta_keys import META_COPY

        try:
            ready: bool | None = index_ready(store)
        except StoreError:  # damaged, or no schema at all
            from kbmcp_adapters.app.bootstrap import schema_revisions

            if schema_revisions(c.settings)[0] is None:  # an empty file: nothing written
                return empty_store_report()
            ready = None  # damaged: the other checks report that
        return diagnose(store, c.vectors, c.registry, self.configured_model,
                        store_location=where, copied_from=marked_source(
                            store.get_meta(META_COPY)),
                        reranker_problem=self._reranker_problem(), ready=ready)

    def _reranker_problem(self) -> str | None:
        """Why the reranker that ``[search].rerank`` turns on cannot run, if it cannot."""
        from kbmcp_adapters.rerank.cross_encoder import CrossEncoderReranker

        reranker = self._container.reranker
        if not self.settings.search_rerank or not isinstance(reranker, CrossEncoderReranker):
            return None
        try:
            reranker.verify()
        except RerankerUnavailable as exc:
            return str(exc)
        return None

    def stats(self) -> IndexStats:
        return self._container.store.stats()

    def close(self) -> None:
        if self._vectors_ahead is not None:  # its thread ends before the store closes
            self._vectors_ahead.opened()
        self._container.close()


class _KeptConversions:
    """The index's kept conversions, opened on first use (``IndexNotFound`` without one)."""

    def __init__(self, container: Container) -> None:
        self._container = container

    def converted_text(self, content_hash: str) -> ConvertedText | None:
        return self._container.store.converted_text(content_hash)


class _IndexedChunks:
    """The index as an outline reads it (``ranges.OutlineIndex``), opened on first use:
    ``IndexNotFound`` without one, which a read takes as "not indexed"."""

    def __init__(self, container: Container) -> None:
        self._container = container

    def get_document(self, path: str) -> StoredDocument | None:
        return self._container.store.get_document(path)

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        return self._container.store.chunk_ids_for(paths)

    def chunk_windows(self, ids: Collection[int], radius: int
                      ) -> dict[int, list[StoredChunk]]:
        return self._container.store.chunk_windows(ids, radius)


def open_knowledge_base(kb_path: str | Path | None = None, *, config: Path | None = None,
                        **settings: Any) -> KnowledgeBase:
    """Build a KnowledgeBase from a path and any Settings field as a keyword."""
    return KnowledgeBase.from_settings(settings_for(kb_path, config, **settings))


__all__ = ["DocumentView", "IndexRunStopped", "KnowledgeBase", "ResourceBody",
           "open_knowledge_base"]
