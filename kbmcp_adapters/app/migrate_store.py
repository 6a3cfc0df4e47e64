"""``kb-mcp migrate-store``, wired: open the source and the target, lock both, copy.

The copy itself is ``kbmcp_core.index_copy``; this module takes the two ends' writer locks
around it. ``migrate_collections`` builds the ends from settings (``bootstrap``), one
collection after the other (a plain folder is a collection of one), and writes the
``kb-mcp.toml`` lines of the copy.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from kbmcp_adapters.app.bootstrap import Container, store_of
from kbmcp_adapters.embedding.service_config import configured_model
from kbmcp_core.errors import ConfigError
from kbmcp_core.index_copy import (
    CopyProgress,
    CopyReport,
    check_target_model,
    copy_index,
    source_model,
)
from kbmcp_core.settings import Settings

__all__ = ["describe_store", "migrate_store", "toml_string", "vectors_location"]


def toml_string(value: str) -> str:
    """A TOML basic string."""
    return json.dumps(value, ensure_ascii=False)


def describe_store(settings: Settings) -> str:
    """The store for messages and markers: a SQLite file's path, or the URL with its
    password hidden."""
    where = store_of(settings)
    return str(where.path.resolve()) if where.path is not None else where.public


def vectors_location(settings: Settings) -> str:
    """Where the vectors of ``settings`` live, comparable between two settings."""
    if settings.vectors_remote:
        return settings.vectors_location.rstrip("/")
    return str(Path(settings.vectors_location).expanduser().resolve())


def migrate_store(
    source: Container,
    target: Container,
    *,
    replace_target: bool = False,
    progress: CopyProgress | None = None,
) -> CopyReport:
    """Copy the index of ``source`` into ``target``'s store and vector store.

    Holds the writer lock of both (one lock when they share it). Refusals, before
    anything is written: ``IndexNotFound`` when the source holds no index;
    ``ModelMismatch`` when the configured model is not the source index's; ``ConfigError``
    when the target is the source, holds an index of another model or dimension, holds
    documents (unless ``replace_target``), or the source is incomplete.
    """
    s = source.settings
    source_name = describe_store(s)
    target_name = describe_store(target.settings)
    if source_name == target_name:
        raise ConfigError(f"--to names the index being copied ({target_name}); "
                          "point it at another database")
    with _writer_locks(source.settings, target.settings):
        source_store = source.open_store(create=False)
        model, dimension = source_model(source_store, configured_model(s), source_name)
        target_store = target.open_store(create=True)
        check_target_model(target_store, model, dimension, target_name)
        shared = vectors_location(s) == vectors_location(target.settings)
        return copy_index(source_store, source.vectors, target_store,
                          None if shared else target.vectors, model=model,
                          dimension=dimension, source_name=source_name,
                          target_name=target_name, replace_target=replace_target,
                          progress=progress)


@contextlib.contextmanager
def _writer_locks(source: Settings, target: Settings) -> Iterator[None]:
    """The source's writer lock (its rows must not change mid-copy), then the target's
    when it is another lock (a PostgreSQL target; a SQLite one shares the index folder's)."""
    from kbmcp_adapters.store.cross_process_lock import writer_lock

    def key(settings: Settings) -> str:
        where = store_of(settings)
        return where.url if where.is_postgresql else str(settings.index_dir.resolve())

    timeout = source.writer_lock_timeout_s
    with contextlib.ExitStack() as stack:
        for settings in (source, target) if key(source) != key(target) else (source,):
            stack.enter_context(writer_lock(settings.index_dir, timeout, "migrate-store",
                                            store_url=store_of(settings)))
        yield
