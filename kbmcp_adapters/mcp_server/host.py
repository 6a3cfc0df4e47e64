"""The one host of every server (decisions 0042, 0051): the collections it serves, 1..N,
one ``KbRuntime`` per collection, one change notifier for all, and the collection (or
collections) a call names.

A plain folder is a collection of one: its host holds one runtime over exactly the
folder's settings, and its surface (tools without ``collection``, ``kb://doc/<path>``)
is today's. ``several`` is the one place the surface is told apart. Each runtime is the
single-folder runtime over its collection's settings and knowledge base
(``Collections.kb``: its own index and writer lock, the model shared), so every guard,
start run, rebuild slot and watcher works per collection as it works for one folder.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import anyio

from kbmcp_adapters.app.collections import Collections
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server.runtime import (
    SHUTDOWN_S,
    BackgroundTask,
    ChangeNotifier,
    KbRuntime,
)
from kbmcp_core.errors import IndexNotFound, InvalidQuery, PathRefused
from kbmcp_core.reading import clean_request_path
from kbmcp_core.settings import Settings
from kbmcp_core.uris import UriSpace, collection_of

T = TypeVar("T")

#: A tool's ``collection`` argument: a name, a list of names, or omitted.
Selector = str | Sequence[str] | None


class Host:
    """The runtimes of a server's collections (one or several), in configured order."""

    def __init__(self, collections: Collections, *, read_only: bool = False,
                 index_on_start: bool = False,
                 runtimes: dict[str, KbRuntime] | None = None) -> None:
        """``collections``: opened read-only for a replica (its settings carry it).
        ``runtimes``: already built (``Host.of``), else one per collection here."""
        self.collections = collections
        #: the server-wide settings (``[search]``, ``[server]``): the top level's
        self.settings: Settings = collections.top
        self.read_only = read_only or collections.top.read_only
        if runtimes is None:
            self.notifier = ChangeNotifier()
            runtimes = {
                name: KbRuntime(collections.settings(name), _opener(collections, name),
                                read_only=self.read_only, index_on_start=index_on_start,
                                notifier=self.notifier)
                for name in collections.names
            }
        else:
            self.notifier = next(iter(runtimes.values())).notifier
        self.runtimes: dict[str, KbRuntime] = runtimes
        self.space = UriSpace.of(collections.names, collections.defaults)
        self._on_stop: list[Callable[[], None]] = []
        self._searches: anyio.CapacityLimiter | None = None  # the search lane (0057)

    @classmethod
    def of(cls, rt: KbRuntime | Host) -> Host:
        """``rt`` as a host: a runtime built on its own (the library, tests) is the host
        of its one folder, named after it."""
        if isinstance(rt, Host):
            return rt
        collections = Collections(rt.settings)
        return cls(collections, read_only=rt.read_only,
                   runtimes={collections.names[0]: rt})

    @property
    def names(self) -> tuple[str, ...]:
        return self.collections.names

    @property
    def several(self) -> bool:
        """More than one collection: tools take ``collection`` and URIs name it."""
        return len(self.names) > 1

    @property
    def only(self) -> KbRuntime:
        """The runtime of a host of one collection (a plain folder)."""
        (name,) = self.names
        return self.runtimes[name]

    def label(self, name: str) -> str | None:
        """The collection name a hit, URI or answer of ``name`` carries: none on a host
        of one (its answers are one folder's, exactly)."""
        return name if self.several else None

    def labelled(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` (an answer from collection ``name``) naming its collection, when the
        host has several."""
        return {**data, "collection": name} if self.several else data

    def route(self, uri: str) -> tuple[str, str]:
        """The collection a ``kb://`` URI reads and the URI inside it: on a host of
        several, the collection it names (``uris.collection_of``); on a host of one, the
        one, with the URI whole (a first folder named like the collection stays a folder)."""
        if not self.several:
            return self.names[0], uri
        return collection_of(uri, self.space)

    def runtime(self, name: str) -> KbRuntime:
        (known,) = self.collections.resolve(name)
        return self.runtimes[known]

    def resolve(self, selector: Selector) -> tuple[str, ...]:
        """The collections a call searches: omitted = the defaults; an unknown name is
        ``UnknownCollection`` (``invalid_argument``) naming the real ones."""
        return self.collections.resolve(selector)

    def every(self, selector: Selector) -> tuple[str, ...]:
        """As ``resolve``, but omitted means every collection (``rebuild_index``,
        ``index_status``, ``list_collections``)."""
        return self.names if selector is None else self.resolve(selector)

    def one(self, selector: Selector, tool: str, path: str | None = None) -> str:
        """The one collection a call about one document (or one graph) works in. When
        ``selector`` gives several (the defaults, or a list) and ``path`` is given, the
        one of them that offers ``path``; blocking (it asks their indexes), so call it
        from a worker thread. Otherwise several is ``invalid_argument`` asking for one."""
        names = self.resolve(selector)
        if len(names) == 1:
            return names[0]
        if path is not None:
            clean = clean_request_path(path)
            having = [n for n in names if _offers(self.runtimes[n], clean)]
            if len(having) == 1:
                return having[0]
            if not having:
                raise PathRefused(path[:200], "not offered by the collections "
                                  f"{', '.join(names)}; name the collection it is in")
            raise InvalidQuery(f"{path[:200]!r} is in the collections {', '.join(having)}: "
                               f"name one with collection")
        raise InvalidQuery(f"{tool} works in one collection: name it with collection "
                           f"(one of {', '.join(names)})")

    def tasks(self, task: BackgroundTask) -> list[BackgroundTask]:
        """``task`` (made for one runtime: the watcher, the start run) once per
        collection, each bound to that collection's runtime."""
        def bound(rt: KbRuntime) -> BackgroundTask:
            async def run(_host: object) -> None:
                await task(rt)
            return run

        return [bound(self.runtimes[name]) for name in self.names]

    async def in_thread(self, func: Callable[[], T], *, search: bool = False) -> T:
        """``func`` in a worker thread, counted for shutdown (by the first runtime).
        ``search``: a search, which waits for one of the slots of its own lane
        (``Settings.search_lane``; decision 0057 and its addendum "four search slots"): on
        anyio's one pool of 40 threads, 40 searches took every thread a read needed, and
        every search running at once takes the interpreter's lock in turn with the reads.
        Everything else (reads, listings) keeps that pool to itself."""
        if not search:
            return await self.runtimes[self.names[0]].in_thread(func)
        if self._searches is None:  # made on the event loop, where every call starts
            self._searches = anyio.CapacityLimiter(self.settings.search_lane)
        return await self.runtimes[self.names[0]].in_thread(func, limiter=self._searches)

    def rebuilding_since(self) -> datetime | None:
        since = [s for rt in self.runtimes.values() if (s := rt.rebuilding_since())]
        return min(since) if since else None

    def on_stop(self, callback: Callable[[], None]) -> None:
        self._on_stop.append(callback)

    def request_stop(self) -> None:
        for callback in self._on_stop:
            callback()
        for rt in self.runtimes.values():
            rt.request_stop()

    def shutdown(self, timeout: float = SHUTDOWN_S) -> bool:
        """Every runtime stopped within ``timeout`` in all (``KbRuntime.shutdown``)."""
        self.request_stop()
        deadline = time.monotonic() + timeout
        stopped = [rt.shutdown(max(0.0, deadline - time.monotonic()))
                   for rt in self.runtimes.values()]
        return all(stopped)

    def close(self) -> None:
        for rt in self.runtimes.values():
            rt.close()


def open_host(settings: Settings, *, read_only: bool = False,
              index_on_start: bool = False) -> Host:
    """The host of ``settings``' collections: its ``[[collections]]``, or its one folder
    as a collection of one (``open_collections``); a replica's opened read-only."""
    from kbmcp_adapters.app.collections import open_collections

    collections = open_collections(dataclasses.replace(settings, read_only=True)
                                   if read_only else settings)
    return Host(collections, read_only=read_only, index_on_start=index_on_start)


def _opener(collections: Collections, name: str) -> Callable[[Settings], KnowledgeBase]:
    def open_kb(_settings: Settings) -> KnowledgeBase:
        return collections.kb(name)

    return open_kb


def _offers(rt: KbRuntime, path: str) -> bool:
    try:
        return rt.open_index().offer_rules().is_offered(path)
    except IndexNotFound:
        return False


__all__ = ["Host", "Selector", "open_host"]
