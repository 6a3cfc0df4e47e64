"""``kb-mcp serve`` answers ``kb-mcp search`` over the local socket, beside any transport.

A background task of the server: it offers the socket for the server's lifetime and runs
each search as the MCP ``search`` tool does (in the runtime's worker threads, counted for
shutdown), loading the model only for the modes that need it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from kbmcp_adapters.app.local_search_server import LocalSearchServer
from kbmcp_adapters.mcp_server.runtime import KbRuntime


def _search(rt: KbRuntime, query: str, params: dict[str, Any]) -> dict[str, Any]:
    kb = rt.open_index()
    if params.get("mode", "hybrid") != "lexical":
        rt.ensure_model(kb)
    return kb.search(query, **params).as_dict()


async def local_search_task(rt: KbRuntime) -> None:
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
