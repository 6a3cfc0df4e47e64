"""``kb-mcp migrate-store``, wired: open the source and the target, lock both, copy.

The copy itself is ``kbmcp_core.index_copy``; this module builds the two ends from settings
(``bootstrap``), takes their writer locks and writes the ``kb-mcp.toml`` lines of the copy.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.app.bootstrap import Container, bootstrap, settings_for, store_of
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

__all__ = ["Migration", "describe_store", "migrate_configured", "migrate_store",
           "toml_string", "vectors_location"]


@dataclass(frozen=True, slots=True)
class Migration:
    """A finished ``migrate-store``: what was copied and the config that opens the copy."""

    report: CopyReport
    #: ``kb-mcp.toml`` lines for the target: database_url (password hidden), vectors_uri,
    #: the model
    config_lines: tuple[str, ...]
    #: True when ``config_lines`` show ``***`` where the password goes
    password_hidden: bool


def migrate_configured(
    kb_path: Path | None,
    config: Path | None,
    to_url: str,
    vectors_to: str | None = None,
    *,
    replace_target: bool = False,
    progress: CopyProgress | None = None,
    starting: Callable[[str, str], None] | None = None,
) -> Migration:
    """``migrate-store`` for a configured knowledge base: the source is its index, the
    target the same settings with ``database_url = to_url`` and, when given,
    ``vectors_uri = vectors_to``. ``starting(source, target)`` is told what is copied
    where (password hidden) once the settings are read."""
    from kbmcp_core.settings import public_uri

    source_settings = settings_for(kb_path, config)
    target_settings = settings_for(kb_path, config, database_url=to_url, vectors_uri=vectors_to)
    if starting is not None:
        starting(describe_store(source_settings), describe_store(target_settings))
    source, target = bootstrap(source_settings), bootstrap(target_settings)
    try:
        report = migrate_store(source, target, replace_target=replace_target,
                               progress=progress)
    finally:
        target.close()
        source.close()
    to = store_of(target_settings)
    lines = (f"database_url = {toml_string(to.public)}",
             f"vectors_uri = {toml_string(public_uri(target_settings.vectors_location))}",
             "", "[embedding]", f"model = {toml_string(report.model_id)}")
    return Migration(report, lines, to.has_password)


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
