"""``kb-mcp serve`` of a configuration with ``[[collections]]`` (decision 0042): one runtime
per collection (a ``RuntimeSet`` when there are several), one watcher or start run per
collection, each collection's replica read-only on its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbmcp_adapters.mcp_server import BackgroundTask, KbRuntime
    from kbmcp_adapters.mcp_server.runtime_set import RuntimeSet
    from kbmcp_adapters.mcp_server.server import StopSignals
    from kbmcp_core.settings import Settings

log = logging.getLogger("kbmcp_adapters.mcp_server")


def collection_host(settings: Settings, signals: StopSignals, *, read_only: bool,
                    index_on_start: bool, watch: bool, verbose: bool,
                    reach_store: Callable[[KbRuntime], None]
                    ) -> tuple[KbRuntime | RuntimeSet, list[BackgroundTask]]:
    """The server's host and its background tasks. One collection is served as one
    folder is (its own URIs, no ``collection`` argument); several by a ``RuntimeSet``.
    ``kb-mcp search`` is not answered over the local socket here: it searches in its
    own process. ``reach_store``: a database server that cannot be reached stops
    ``serve`` at start (``serve_cmd.reach_store``), per collection."""
    from kbmcp_adapters.app.collections import open_collections
    from kbmcp_adapters.mcp_server import KbRuntime
    from kbmcp_adapters.mcp_server.runtime_set import RuntimeSet

    collections = open_collections(dataclasses.replace(settings, read_only=True)
                                   if read_only else settings)
    for name in collections.names:
        each = collections.settings(name)
        if each.database_url is None and not each.sqlite_path.exists():
            log.log(logging.INFO if index_on_start else logging.WARNING,
                    "collection %s has no index yet at %s%s", name, each.index_dir,
                    ": building it in the background" if index_on_start else
                    ": tools will ask for `kb-mcp index` until one exists")
    host: KbRuntime | RuntimeSet
    if len(collections.names) == 1:
        (name,) = collections.names
        host = KbRuntime(collections.settings(name), lambda _s: collections.kb(name),
                         read_only=read_only, index_on_start=index_on_start)
        runtimes = [host]
    else:
        host = RuntimeSet(collections, read_only=read_only, index_on_start=index_on_start)
        runtimes = list(host.runtimes.values())
    for rt in runtimes:
        url = rt.settings.database_url
        if url is not None and not url.startswith("sqlite"):
            reach_store(rt)
    background: list[BackgroundTask] = [signals.stop_server]
    if read_only:
        log.info("read-only: this server never writes the indexes of its %d collections "
                 "(no watcher); their writer is `kb-mcp watch` or `kb-mcp index`",
                 len(runtimes))
        return host, background
    task: BackgroundTask | None = None
    if settings.watch and watch:
        from kbmcp_adapters.live.serve_task import watch_task

        task = watch_task  # one watcher per collection; its first sync is the start run
        if not verbose:
            logging.getLogger("watchfiles").setLevel(logging.WARNING)
    elif index_on_start:
        from kbmcp_adapters.mcp_server.start_run import start_index_task

        task = start_index_task
    if task is not None:
        background += host.tasks(task) if isinstance(host, RuntimeSet) else [task]
    if isinstance(host, KbRuntime):
        from kbmcp_adapters.local_search.serve_task import local_search_task

        background.append(local_search_task)  # one collection: as for one folder
    return host, background


__all__ = ["collection_host"]
