"""``kb-mcp serve`` answers ``kb-mcp search`` over the local socket, beside any transport.

A background task of the server: it offers the socket for the server's lifetime and runs
each search as the MCP ``search`` tool does (in the runtime's worker threads, counted for
shutdown), loading the model only for the modes that need it. One socket per server, in
the top level's index folder, for its one folder or its several collections (a search
naming ``collection`` is answered over those). The server's host is seen through
``SearchHost`` (structural), so this folder never imports the MCP server's modules;
the CLI hands ``local_search_task`` to the server as a background task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from kbmcp_adapters.app.heap import settle_once
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.search_collections import search_collections
from kbmcp_adapters.local_search.server import LocalSearchServer
from kbmcp_core.search_request import needs_embedder
from kbmcp_core.settings import Settings

T = TypeVar("T")


class SearchRuntime(Protocol):
    """One collection's runtime, as the local search task uses it (``KbRuntime``)."""

    def open_index(self) -> KnowledgeBase: ...

    def ensure_model(self, kb: KnowledgeBase) -> None: ...


class SearchHost(Protocol):
    """What the local search task needs of the server it runs in (the MCP ``Host``: its
    collections, one or several, and their top-level settings)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def several(self) -> bool: ...

    def resolve(self, selector: str | Sequence[str] | None) -> tuple[str, ...]: ...

    def runtime(self, name: str) -> SearchRuntime: ...

    async def in_thread(self, func: Callable[[], T]) -> T: ...

    def on_stop(self, callback: Callable[[], None]) -> None: ...


def _search(host: SearchHost, query: str, params: dict[str, Any]) -> dict[str, Any]:
    """What ``kb-mcp search`` would answer in its own process: the collections it names
    (``collection``; omitted: the defaults) searched as one (``search_collections``), or
    with none named on a host of one, the folder's own search."""
    selector = params.pop("collection", None)
    kbs: dict[str, KnowledgeBase] = {}
    loaded = False
    for name in host.resolve(selector):
        rt = host.runtime(name)
        kb = rt.open_index()
        # the MCP search tool decides the same way; a collection not ready is left out
        if needs_embedder(params.get("mode")) and (len(kbs) == 0 or kb.is_ready()):
            rt.ensure_model(kb)
            loaded = True
        kbs[name] = kb
    if selector is None and not host.several:
        data = next(iter(kbs.values())).search(query, **params).as_dict()
    else:
        data = search_collections(kbs, query, **params).as_dict()
    if loaded:  # what the process keeps for its life is loaded now (heap.py)
        settle_once()
    return data


async def local_search_task(rt: SearchHost) -> None:
    """Offer the local search socket of the host's collections until the server stops
    (then remove it)."""
    token = anyio.lowlevel.current_token()

    def search(query: str, params: dict[str, Any]) -> dict[str, Any]:
        # from a socket thread into the event loop, which runs it in a counted worker thread
        return anyio.from_thread.run(rt.in_thread, partial(_search, rt, query, params),
                                     token=token)

    if rt.several:  # the socket's folder: the top level's index folder, the collections'
        await anyio.to_thread.run_sync(partial(rt.settings.index_dir.mkdir, parents=True,
                                               exist_ok=True))
    server = await anyio.to_thread.run_sync(LocalSearchServer.start, rt.settings, search)
    if server is None:
        return
    rt.on_stop(server.close)
    try:
        await anyio.sleep_forever()
    finally:
        server.close()


__all__ = ["local_search_task"]
