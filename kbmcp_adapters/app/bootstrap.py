"""The composition root: the only place that reads settings and builds adapters."""

from __future__ import annotations

import errno
import logging
import os
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbmcp_core.errors import IndexReadOnly
from kbmcp_core.index_run import IndexDeps
from kbmcp_core.ports import ChunkBudget, ParserRegistry
from kbmcp_core.settings import Settings

if TYPE_CHECKING:
    from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
    from kbmcp_adapters.filesystem.exclusion import ExclusionRules
    from kbmcp_adapters.filesystem.local import LocalFileSystem
    from kbmcp_adapters.filesystem.scanner import DiskScanner
    from kbmcp_adapters.store.sql_store import SqlIndexStore
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

log = logging.getLogger(__name__)


class SystemClock:
    def now_iso(self) -> str:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Container:
    """Adapters built on first use from one ``Settings``. ``overrides`` replace any of
    them by name (tests pass fakes this way)."""

    def __init__(self, settings: Settings, **overrides: Any) -> None:
        self.settings = settings
        for name, value in overrides.items():
            if not hasattr(type(self), name):
                raise TypeError(f"unknown adapter override {name!r}")
            self.__dict__[name] = value

    @cached_property
    def clock(self) -> SystemClock:
        return SystemClock()

    @cached_property
    def registry(self) -> ParserRegistry:
        from kbmcp_adapters.parsers.registry import build_registry

        return build_registry(self.settings.enabled_formats)

    @cached_property
    def fs(self) -> LocalFileSystem:
        from kbmcp_adapters.filesystem.local import LocalFileSystem

        return LocalFileSystem(self.settings.kb_path)

    @property
    def rules(self) -> ExclusionRules:
        """Re-read on every call: ``.kb-mcpignore`` may have changed since the last one."""
        from kbmcp_adapters.filesystem.exclusion import ExclusionRules

        s = self.settings
        return ExclusionRules.load(s.kb_path, s.exclude_dirs, s.index_dir)

    @property
    def scanner(self) -> DiskScanner:
        from kbmcp_adapters.filesystem.scanner import DiskScanner

        return DiskScanner(self.settings.kb_path, self.fs, self.rules, self.registry.extensions())

    @cached_property
    def embedder(self) -> FastEmbedEmbedder:
        from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder

        s = self.settings
        return FastEmbedEmbedder(
            s.embedding_model,
            cache_dir=s.model_cache_dir,
            batch_size=s.embedding_batch_size,
            threads=s.embedding_threads,
        )

    def open_store(self, create: bool = False, migrate: bool = True) -> SqlIndexStore:
        """The index store, opened once. ``migrate=False`` opens without upgrading the
        schema (doctor is read-only)."""
        from kbmcp_adapters.store.sql_store import SqlIndexStore

        if "store" in self.__dict__:
            return self.__dict__["store"]  # type: ignore[no-any-return]
        if create:
            try:
                os.makedirs(self.settings.index_dir, exist_ok=True)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
                raise IndexReadOnly(str(self.settings.index_dir),
                                    f"cannot create the folder: {exc.strerror}",
                                    IndexReadOnly.NO_FOLDER) from None
        store = SqlIndexStore(self.settings.store_url, create=create, migrate_schema=migrate)
        self.__dict__["store"] = store
        return store

    @property
    def store(self) -> SqlIndexStore:
        return self.open_store(create=False)

    @cached_property
    def vectors(self) -> LanceVectorStore:
        from kbmcp_adapters.vectors.lance_store import LanceVectorStore

        return LanceVectorStore(self.settings.vectors_dir, self.embedder.dimension)

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
        )

    def close(self) -> None:
        store = self.__dict__.pop("store", None)
        if store is not None:
            store.close()


def bootstrap(settings: Settings, **overrides: Any) -> Container:
    """Build the container for one knowledge base. Nothing heavy happens until used."""
    return Container(settings, **overrides)


def settings_for(
    kb_path: str | Path | None = None, config: Path | None = None, **values: Any
) -> Settings:
    from kbmcp_adapters.app.config import build_settings

    return build_settings(config, kb_path=kb_path, **values)
