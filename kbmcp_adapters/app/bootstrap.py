"""The composition root: the only place that reads settings and builds adapters."""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kbmcp_adapters.app.side_by_side import ThreadedLegs
from kbmcp_core.errors import IndexReadOnly
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.ports import (
    ChunkBudget,
    Clock,
    Embedder,
    ExclusionPolicy,
    FileSystem,
    IndexStore,
    ParserRegistry,
    Reranker,
    Scanner,
    VectorStore,
)
from kbmcp_core.settings import Settings
from kbmcp_core.store_location import StoreLocation

if TYPE_CHECKING:
    from kbmcp_adapters.filesystem.local import LocalFileSystem
    from kbmcp_adapters.parsers.registry import FormatRegistry

log = logging.getLogger(__name__)

T = TypeVar("T")


class OpenedStore(IndexStore, Protocol):
    """The index store as the composition root holds it: every role, plus whether this
    user may write it (``kb-mcp status`` says so)."""

    @property
    def read_only(self) -> bool: ...


class SystemClock:
    def now_iso(self) -> str:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Part(Generic[T]):
    """One adapter: the one given, or built once on first use (threads wait for it)."""

    def __init__(self, given: T | None, build: Callable[[], T]) -> None:
        self._value = given
        self._build = build
        self._lock = threading.Lock()

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
                value = self._value
        return value


class Container:
    """The adapters of one knowledge base, each built on first use from ``Settings`` unless
    given. A given adapter is used as it is, wherever that port is needed; the ones built
    here are wired to each other (the default scanner walks the disk with the exclusion
    rules, given or read from ``.kb-mcpignore`` on each use)."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: OpenedStore | None = None,
        vectors: VectorStore | None = None,
        embedder: Embedder | None = None,
        fs: FileSystem | None = None,
        registry: ParserRegistry | None = None,
        rules: ExclusionPolicy | None = None,
        scanner: Scanner | None = None,
        clock: Clock | None = None,
        reranker: Reranker | None = None,
        embedder_for: Callable[[Settings], Embedder] | None = None,
    ) -> None:
        """``embedder_for``: builds the embedder for the settings' model when none is given
        (default ``real_embedder``; collections pass one that shares a model between them)."""
        from kbmcp_adapters.app.index_model import resolve_model

        #: the settings with the model this index runs (``index_model``, decision 0046)
        self.settings = resolve_model(settings, store,
                                      None if embedder is None else embedder.model_id)
        walkable = _walkable(fs)
        if fs is not None and walkable is None and scanner is None:
            raise ValueError(
                "bootstrap: a given fs needs a given scanner: the default scanner walks "
                "through a LocalFileSystem, and this fs cannot list folders")
        self._reranker: _Part[Reranker] = _Part(reranker, self._build_reranker)
        self._given_store = store
        self._store: OpenedStore | None = store
        self._open_lock = threading.Lock()
        self._given_rules = rules
        self._given_scanner = scanner
        self._disk: _Part[LocalFileSystem] = _Part(walkable, self._local_fs)
        self._fs: _Part[FileSystem] = _Part(fs, self._disk.get)
        self._registry: _Part[ParserRegistry] = _Part(registry, self._deferred_registry)
        self._built_registry: FormatRegistry | None = None
        self._given_models = (embedder, vectors)
        self._embedder_for = embedder_for or real_embedder
        self._embedder: _Part[Embedder] = _Part(embedder, self._build_embedder)
        self._vectors: _Part[VectorStore] = _Part(vectors, self._build_vectors)
        self._clock: _Part[Clock] = _Part(clock, SystemClock)
        #: the two legs of a hybrid search at once (decision 0058), closed with the container
        self.legs = ThreadedLegs()

    # -- the ports ---------------------------------------------------------
    @property
    def clock(self) -> Clock:
        return self._clock.get()

    @property
    def registry(self) -> ParserRegistry:
        return self._registry.get()

    @property
    def fs(self) -> FileSystem:
        return self._fs.get()

    @property
    def rules(self) -> ExclusionPolicy:
        """The given rules, else re-read on every call: ``.kb-mcpignore`` may have changed
        since the last one."""
        if self._given_rules is not None:
            return self._given_rules
        from kbmcp_adapters.filesystem.exclusion import ExclusionRules

        s = self.settings
        return ExclusionRules.load(s.kb_path, s.exclude_dirs, s.index_dir)

    @property
    def scanner(self) -> Scanner:
        """The given scanner, else a walk of the folder with the current rules, which
        keeps the hashes it makes (``filesystem/hash_cache.py``, ``app/index_state.py``)."""
        return self.walker(remember=True)

    def walker(self, *, remember: bool) -> Scanner:
        """The given scanner, else a walk of the folder with the current rules; it reads
        the hashes earlier walks kept, and keeps its own only when ``remember``."""
        if self._given_scanner is not None:
            return self._given_scanner
        from kbmcp_adapters.app.index_state import SCAN_HASHES, state_dir
        from kbmcp_adapters.filesystem.scanner import DiskScanner
        from kbmcp_adapters.parsers.registry import READABLE_EXTENSIONS

        return DiskScanner(self.settings.kb_path, self._disk.get(), self.rules,
                           self.registry.extensions(), READABLE_EXTENSIONS,
                           hashes=state_dir(self.settings.index_dir) / SCAN_HASHES,
                           remember=remember)

    @property
    def embedder(self) -> Embedder:
        return self._embedder.get()

    @property
    def vectors(self) -> VectorStore:
        return self._vectors.get()

    @property
    def reranker(self) -> Reranker:
        """The cross-encoder behind ``rerank``: the given one, else ``[search].reranker``
        (its weights are read on its first use, decision 0016)."""
        return self._reranker.get()

    @property
    def store(self) -> OpenedStore:
        return self.open_store(create=False)

    def open_store(self, create: bool = False, migrate: bool = True) -> OpenedStore:
        """The index store, opened once. ``migrate=False`` opens without upgrading the
        schema (doctor is read-only)."""
        with self._open_lock:  # the first open migrates the schema: once, not per thread
            if self._store is None:
                self._store = self._build_store(create, migrate)
            return self._store

    def rebuild_model(self) -> None:
        """Before a rebuild from nothing (``--force``): when the model was kept from the
        index only because the config names none, take the default instead (a given
        embedder stays: its owner chose it)."""
        from kbmcp_adapters.app.index_model import for_rebuild

        target = for_rebuild(self.settings)
        embedder, vectors = self._given_models
        if target.embedding_model == self.settings.embedding_model or embedder is not None:
            return
        self.settings = target
        self._embedder = _Part(None, self._build_embedder)
        self._vectors = _Part(vectors, self._build_vectors)

    # -- what the use-cases are handed ---------------------------------------
    def budget(self) -> ChunkBudget:
        embedder = self.embedder
        max_tokens = self.settings.chunk_max_tokens or embedder.max_tokens
        max_tokens = min(max_tokens, embedder.max_tokens)

        def count(text: str) -> int:
            return embedder.count_tokens([text])[0]

        return ChunkBudget(
            max_tokens=max_tokens, min_tokens=self.settings.chunk_min_tokens, counter=count
        )

    def index_deps(self) -> IndexDeps:
        return IndexDeps(
            store=self.open_store(create=True),
            vectors=self.vectors,
            embedder=self.embedder,
            registry=self.registry,
            fs=self.fs,
            scanner=self.scanner,
            clock=self.clock,
            budget=self.budget(),
            batch_size=self.settings.embedding_batch_size,
            fields=self.settings.declared_fields,
        )

    def close(self) -> None:
        """Close the store this container opened (a given one stays its owner's), and stop
        the search legs' threads."""
        self.legs.close()
        with self._open_lock:
            store, self._store = self._store, self._given_store
        if store is not None and store is not self._given_store:
            store.close()
        if self._built_registry is not None:  # stops its parser worker processes
            self._built_registry.close()

    # -- the real adapters -------------------------------------------------
    def _local_fs(self) -> LocalFileSystem:
        from kbmcp_adapters.filesystem.local import LocalFileSystem

        return LocalFileSystem(self.settings.kb_path)

    def _deferred_registry(self) -> ParserRegistry:
        """The registry whose parsers are built on the first file: a search, which asks
        only which extensions are enabled, imports no parser (decision 0057)."""
        from kbmcp_adapters.parsers.formats import DeferredRegistry

        return DeferredRegistry(self.settings.enabled_formats, self._build_registry)

    def _build_registry(self) -> ParserRegistry:
        from kbmcp_adapters.parsers.budget import ParserLimits
        from kbmcp_adapters.parsers.isolation import Isolation
        from kbmcp_adapters.parsers.registry import build_registry

        s = self.settings
        limits = ParserLimits(max_output_chars=s.parsers_max_output_chars,
                              max_elements=s.parsers_max_elements,
                              timeout_seconds=float(s.parsers_timeout_seconds))
        isolation = (Isolation(workers=s.parsers_workers, memory_mb=s.parsers_memory_limit_mb)
                     if s.parsers_isolate else None)
        self._built_registry = build_registry(s.enabled_formats, limits, isolation)
        return self._built_registry

    def _build_embedder(self) -> Embedder:
        return self._embedder_for(self.settings)

    def _build_vectors(self) -> VectorStore:
        return real_vectors(self.settings, self.embedder.dimension)

    def _build_reranker(self) -> Reranker:
        from kbmcp_adapters.rerank.cross_encoder import make_reranker

        return make_reranker(self.settings.search_reranker,
                             threads=self.settings.embedding_threads)

    def _build_store(self, create: bool, migrate: bool) -> OpenedStore:
        return real_store(self.settings, create=create, migrate=migrate)


def real_embedder(settings: Settings) -> Embedder:
    """The configured embedding model (loaded on first use)."""
    from kbmcp_adapters.embedding.factory import make_embedder
    from kbmcp_adapters.embedding.service_config import service_config

    return make_embedder(
        settings.embedding_model,
        cache_dir=settings.model_cache_dir,
        batch_size=settings.embedding_batch_size,
        threads=settings.embedding_threads,
        service=service_config(settings),
    )


def real_vectors(settings: Settings, dimension: int) -> VectorStore:
    """The vector store at ``vectors_uri`` (by default the index folder's ``vectors``),
    for vectors of ``dimension``."""
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    return LanceVectorStore(settings.vectors_location, dimension,
                            storage_options=settings.vectors_storage_options)


def real_store(settings: Settings, *, create: bool = False, migrate: bool = True) -> OpenedStore:
    """Open the index store at ``[index]``. ``IndexNotFound`` when there is none and
    ``create`` is false; ``IndexReadOnly`` when its folder cannot be created."""
    from kbmcp_adapters.store.sql_store import SqlIndexStore

    if create:
        try:
            os.makedirs(settings.index_dir, exist_ok=True)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise IndexReadOnly(str(settings.index_dir),
                                f"cannot create the folder: {exc.strerror}",
                                IndexReadOnly.NO_FOLDER) from None
    return SqlIndexStore(store_of(settings), create=create, migrate_schema=migrate,
                         read_only=settings.read_only)


def store_of(settings: Settings) -> StoreLocation:
    """The settings' index store, parsed once (``urls.store_location`` keeps the value)."""
    from kbmcp_adapters.store.urls import store_location as parsed

    return parsed(settings.store_url)


def store_location(settings: Settings) -> str:
    """The index store as a person may see it: the PostgreSQL URL with its password shown
    as ``***``, or the SQLite file."""
    if settings.database_url is None:
        return str(settings.sqlite_path)
    return store_of(settings).public


def schema_revisions(settings: Settings) -> tuple[str | None, str]:
    """(the index's schema revision, the one this kb-mcp writes), read without migrating
    or creating anything; ``IndexNotFound`` when there is no index (read-only replicas)."""
    from kbmcp_adapters.store.sql_store import head_revision, schema_revision

    return schema_revision(settings.store_url, read_only=settings.read_only), head_revision()


def _walkable(fs: FileSystem | None) -> LocalFileSystem | None:
    """``fs`` when the default scanner can walk it (it lists folders), else None."""
    if fs is None:
        return None
    from kbmcp_adapters.filesystem.local import LocalFileSystem

    return fs if isinstance(fs, LocalFileSystem) else None


def bootstrap(
    settings: Settings,
    *,
    store: OpenedStore | None = None,
    vectors: VectorStore | None = None,
    embedder: Embedder | None = None,
    fs: FileSystem | None = None,
    registry: ParserRegistry | None = None,
    rules: ExclusionPolicy | None = None,
    scanner: Scanner | None = None,
    clock: Clock | None = None,
    reranker: Reranker | None = None,
    embedder_for: Callable[[Settings], Embedder] | None = None,
) -> Container:
    """Build the container for one knowledge base. Nothing heavy happens until used; each
    keyword replaces that port's adapter everywhere (tests pass fakes this way). A given
    ``fs`` is also what the default scanner walks, so it must be a ``LocalFileSystem``
    unless a ``scanner`` is given too (``ValueError`` otherwise)."""
    return Container(settings, store=store, vectors=vectors, embedder=embedder, fs=fs,
                     registry=registry, rules=rules, scanner=scanner, clock=clock,
                     reranker=reranker, embedder_for=embedder_for)


def settings_for(
    kb_path: str | Path | None = None, config: Path | None = None, **values: Any
) -> Settings:
    from kbmcp_adapters.app.config import build_settings

    return build_settings(config, kb_path=kb_path, **values)
