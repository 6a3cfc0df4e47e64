"""``kb-mcp serve`` answers ``kb-mcp search`` over the local socket, beside any transport.

A background task of the server: it offers the socket for the server's lifetime and runs
each search as the MCP ``search`` tool does (in the runtime's worker threads, counted for
shutdown), loading the model only for the modes that need it. The server's runtime is seen
through ``SearchHost`` (structural), so this folder never imports the MCP server's modules;
the CLI hands ``local_search_task`` to the server as a background task.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.local_search.server import LocalSearchServer
from kbmcp_core.search_request import needs_embedder
from kbmcp_core.settings import Settings

T = TypeVar("T")


class SearchHost(Protocol):
    """What the local search task needs of the server it runs in (the MCP ``KbRuntime``)."""

    @property
    def settings(self) -> Settings: ...

    def open_index(self) -> KnowledgeBase: ...

    def ensure_model(self, kb: KnowledgeBase) -> None: ...

    async def in_thread(self, func: Callable[[], T]) -> T: ...

    def on_stop(self, callback: Callable[[], None]) -> None: ...


def _search(rt: SearchHost, query: str, params: dict[str, Any]) -> dict[str, Any]:
    kb = rt.open_index()
    if needs_embedder(params.get("mode")):  # the MCP search tool decides the same way
        rt.ensure_model(kb)
    return kb.search(query, **params).as_dict()


async def local_search_task(rt: SearchHost) -> None:
    """Offer the local search socket until the server stops (then remove it)."""
    token = anyio.lowlevel.current_token()

    def search(query: str, params: dict[str, Any]) -> dict[str, Any]:
        # from a socket thread into the event loop, which runs it in a counted worker thread
        return anyio.from_thread.run(rt.in_thread, partial(_search, rt, query, params),
                                     token=token)

    server = await anyio.to_thread.run_sync(LocalSearchServer.start, rt.settings, search)
    if server is None:
        return
    rt.on_stop(server.close)
    try:
        await anyio.sleep_forever()
    finally:
        server.close()


__all__ = ["local_search_task"]
