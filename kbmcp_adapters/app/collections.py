"""Collections in the library: each served folder's KnowledgeBase, one model shared.

    from kbmcp_adapters import open_collections, settings_for
    collections = open_collections(settings_for(config=Path("kb-mcp.toml")))
    for name in collections.resolve(None):      # the default collections
        print(name, collections.kb(name).stats().documents)

Each collection is one ``KnowledgeBase`` over settings derived from the top level
(``collection_settings``): its own folder, index folder, PostgreSQL schema and vectors
location, hence its own writer lock. Collections whose embedding set-up and reranker are
the same share one embedder and one reranker object: one model in memory (decision 0041).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.search_collections import search_collections
from kbmcp_core.collections import CollectionSpec, resolve_names, served_specs
from kbmcp_core.errors import ConfigError, IndexNotFound, UnknownCollection
from kbmcp_core.ports import Clock, Embedder, Reranker
from kbmcp_core.search import SearchResponse
from kbmcp_core.settings import INDEX_DB_NAME, INDEX_DIR_NAME, Settings, is_remote_uri

#: Under ``index_dir``: one folder per collection (SQLite file, vectors, locks).
COLLECTIONS_DIR = "collections"
#: A collection's PostgreSQL schema is this prefix and its name.
SCHEMA_PREFIX = "kb_"

__all__ = ["CollectionInfo", "Collections", "collection_settings", "open_collections",
           "search_collections"]


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """What ``kb-mcp collections`` and ``list_collections`` tell about one collection."""

    name: str
    description: str
    path: str
    document_count: int
    #: when the last index run finished (ISO 8601), None when none has
    last_indexed: str | None
    #: a run has read the whole folder into the index (searches answer)
    ready: bool
    default: bool = True

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, "path": self.path,
                "document_count": self.document_count, "last_indexed": self.last_indexed,
                "ready": self.ready, "default": self.default}


def collection_settings(settings: Settings, spec: CollectionSpec) -> Settings:
    """The settings of one ``[[collections]]`` entry: the top level's, with its folder's
    own knowledge base over them (decision 0051: a collection is a knowledge base), then
    the entry's own parsers overrides.

    A folder with its own ``kb-mcp.toml`` keeps the formats and exclusions it names
    (``config.own_config``: its ``index_dir`` only once trusted, as for one folder); a
    folder with its own ``kb-mcp.toml`` or index keeps that index (on SQLite), so adding
    an indexed folder re-embeds nothing. Any other collection's index is
    ``<index_dir>/collections/<name>``, its PostgreSQL schema ``kb_<name>`` and its
    vectors ``<vectors_uri>/<name>``."""
    from kbmcp_adapters.app.config import own_config

    own = own_config(spec.path)
    mine, named = own if own is not None else (None, frozenset[str]())
    formats = (spec.enabled_formats if spec.enabled_formats is not None
               else mine.enabled_formats if mine is not None and "enabled_formats" in named
               else settings.enabled_formats)
    excluded = (spec.exclude_dirs if spec.exclude_dirs is not None
                else mine.exclude_dirs if mine is not None and "exclude_dirs" in named
                else settings.exclude_dirs)
    base = replace(settings, kb_path=spec.path, enabled_formats=formats,
                   exclude_dirs=excluded, collections=())
    own_index = mine.index_dir if mine is not None else spec.path / INDEX_DIR_NAME
    if settings.database_url is None and (mine is not None
                                          or (own_index / INDEX_DB_NAME).is_file()):
        return replace(base, index_dir=own_index,
                       vectors_uri=mine.vectors_uri if mine is not None else None)
    database_url = settings.database_url
    if database_url is not None:
        from kbmcp_adapters.store.urls import store_location

        if not store_location(database_url).is_postgresql:
            raise ConfigError("a SQLite database_url cannot hold several collections: leave "
                              "it out (each collection keeps its own index.db under "
                              "index_dir) or use PostgreSQL")
        from kbmcp_adapters.store.pg_schema import schema_url

        database_url = schema_url(database_url, SCHEMA_PREFIX + spec.name)
    return replace(base, index_dir=settings.index_dir / COLLECTIONS_DIR / spec.name,
                   database_url=database_url,
                   vectors_uri=_under(settings.vectors_uri, spec.name))


def _under(uri: str | None, name: str) -> str | None:
    """``<uri>/<name>`` for a folder or an object-store URI (its query string kept)."""
    if uri is None:
        return None
    if not is_remote_uri(uri):
        return str(Path(uri) / name)
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + name))


def _model_key(s: Settings) -> tuple[object, ...]:
    """What makes two collections' embedders the same model, set up the same way."""
    return (s.embedding_provider, s.embedding_model, s.embedding_base_url,
            s.embedding_query_model, s.embedding_document_model, s.embedding_query_prefix,
            s.embedding_document_prefix, s.embedding_dimension, s.embedding_max_input_chars,
            s.embedding_timeout_s, s.embedding_retries, s.embedding_api_key_env,
            s.embedding_batch_size, s.embedding_threads, s.model_cache_dir)


class Collections:
    """The collections of one set of settings, in configured order. Each knowledge base
    is built on first use (``kb``) and kept; ``close`` closes them all."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, clock: Clock | None = None) -> None:
        """``embedder``, ``reranker``, ``clock``: adapters every collection uses instead
        of building its own (tests pass stand-ins this way)."""
        self.top = settings
        # one folder: one collection named after it, with exactly these settings
        specs = served_specs(settings)
        self._specs = {spec.name: spec for spec in specs}
        self.names: tuple[str, ...] = tuple(self._specs)
        self.defaults: tuple[str, ...] = tuple(s.name for s in specs if s.default)
        self._settings = {spec.name: (collection_settings(settings, spec)
                                      if settings.collections else settings)
                          for spec in specs}
        self._given = (embedder, reranker, clock)
        self._embedders: dict[tuple[object, ...], Embedder] = {}
        self._embedders_lock = threading.Lock()
        self._rerankers: dict[tuple[object, ...], Reranker] = {}
        self._kbs: dict[str, KnowledgeBase] = {}
        self._lock = threading.Lock()

    @property
    def several(self) -> bool:
        """More than one collection: the one thing a command's output tells apart (each
        part names its collection); one, a plain folder or one ``[[collections]]`` entry,
        answers as a plain folder does."""
        return len(self.names) > 1

    def spec(self, name: str) -> CollectionSpec:
        return self._specs[self._known(name)]

    def settings(self, name: str) -> Settings:
        """The derived settings of collection ``name`` (``collection_settings``)."""
        return self._settings[self._known(name)]

    def kb(self, name: str) -> KnowledgeBase:
        """The knowledge base of collection ``name``, built once; it shares the embedder
        and reranker of every other collection with the same model."""
        name = self._known(name)
        with self._lock:
            kb = self._kbs.get(name)
            if kb is None:
                kb = self._kbs[name] = self._build(self._settings[name])
            return kb

    def _build(self, s: Settings) -> KnowledgeBase:
        embedder, reranker, clock = self._given
        ranker = (s.search_reranker, s.embedding_threads)
        # each collection's index decides its model (app/index_model, decision 0046): the
        # embedder is looked up by the model the container settles on, not the config's
        container = bootstrap(s, embedder=embedder, embedder_for=self._shared_embedder,
                              reranker=reranker or self._rerankers.get(ranker), clock=clock)
        self._rerankers.setdefault(ranker, container.reranker)
        return KnowledgeBase(container)

    def _shared_embedder(self, s: Settings) -> Embedder:
        """One embedder per model and set-up, for every collection that runs it (the
        objects are light until first used: the model loads once, for all of them)."""
        from kbmcp_adapters.app.bootstrap import real_embedder

        with self._embedders_lock:
            found = self._embedders.get(_model_key(s))
            if found is None:
                found = self._embedders[_model_key(s)] = real_embedder(s)
            return found

    def resolve(self, selector: str | Sequence[str] | None) -> tuple[str, ...]:
        """The collections a call searches (``collections.resolve_names``): None (or an
        empty list) means the default ones; a name or a list of names means those."""
        return resolve_names(selector, self.names, self.defaults)

    def info(self) -> list[CollectionInfo]:
        """Each collection with its document count and freshness, in configured order;
        a collection never indexed has 0 documents and is not ready."""
        out = []
        for name in self.names:
            spec, kb = self._specs[name], self.kb(name)
            try:
                stats = kb.stats()
                ready = kb.is_ready()
            except IndexNotFound:
                count, last, ready = 0, None, False
            else:
                count = stats.documents
                finished = (stats.last_run or {}).get("finished_at")
                last = str(finished) if finished else None
            out.append(CollectionInfo(name, spec.description, str(spec.path), count, last,
                                      ready, spec.default))
        return out

    def search(self, query: str, collection: str | Sequence[str] | None = None,
               **search_args: Any) -> SearchResponse:
        """``search_collections`` over the collections ``collection`` resolves to."""
        names = self.resolve(collection)
        return search_collections({n: self.kb(n) for n in names}, query, **search_args)

    def close(self) -> None:
        with self._lock:
            kbs, self._kbs = list(self._kbs.values()), {}
        for kb in kbs:
            kb.close()

    def _known(self, name: str) -> str:
        if name not in self._specs:
            raise UnknownCollection([name], self.names)
        return name


def open_collections(settings: Settings, *, embedder: Embedder | None = None,
                     reranker: Reranker | None = None,
                     clock: Clock | None = None) -> Collections:
    """The collections of ``settings``: its ``[[collections]]``, or its one ``kb_path``
    as one collection named after the folder (nothing on disk moves)."""
    return Collections(settings, embedder=embedder, reranker=reranker, clock=clock)
