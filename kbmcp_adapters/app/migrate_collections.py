"""``kb-mcp migrate-store`` with ``[[collections]]``: each collection's store copied to the
target's matching place (PostgreSQL schema ``kb_<name>``, vectors under ``<uri>/<name>``),
one collection after the other, each under its own two writer locks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.app.migrate_store import describe_store, migrate_store, toml_string
from kbmcp_core.errors import ConfigError
from kbmcp_core.index_copy import CopyProgress, CopyReport

__all__ = ["CollectionsMigration", "migrate_collections"]


@dataclass(frozen=True, slots=True)
class CollectionsMigration:
    """A finished copy of several collections: each one's report, in the order copied,
    and the top-level ``kb-mcp.toml`` lines every collection derives its store from."""

    reports: tuple[tuple[str, CopyReport], ...]
    config_lines: tuple[str, ...]
    password_hidden: bool


def migrate_collections(
    kb_path: Path | None,
    config: Path | None,
    to_url: str,
    vectors_to: str | None = None,
    *,
    names: Sequence[str] = (),
    replace_target: bool = False,
    progress: CopyProgress | None = None,
    starting: Callable[[str, str, str], None] | None = None,
) -> CollectionsMigration:
    """Copy each collection (``names``, default all) of the configured knowledge base to
    the store the same ``[[collections]]`` would use with ``database_url = to_url`` (and
    ``vectors_uri = vectors_to`` when given). ``starting(name, source, target)`` is told
    before each copy. Refusals are ``migrate_store``'s, per collection, before that
    collection's copy writes anything; ``ConfigError`` when no collections are configured
    or ``to_url`` cannot hold several (a SQLite file)."""
    from kbmcp_adapters.app.bootstrap import store_of
    from kbmcp_core.settings import public_uri

    source_top = settings_for(kb_path, config)
    if not source_top.collections:
        raise ConfigError("no [[collections]] in the configuration: migrate-store copies "
                          "the one index of kb_path")
    target_top = settings_for(kb_path, config, database_url=to_url, vectors_uri=vectors_to)
    sources, targets = open_collections(source_top), open_collections(target_top)
    chosen = sources.resolve(list(names)) if names else sources.names
    reports: list[tuple[str, CopyReport]] = []
    for name in chosen:
        source_settings, target_settings = sources.settings(name), targets.settings(name)
        if starting is not None:
            starting(name, describe_store(source_settings), describe_store(target_settings))
        source, target = bootstrap(source_settings), bootstrap(target_settings)
        try:
            reports.append((name, migrate_store(source, target, replace_target=replace_target,
                                                progress=progress)))
        finally:
            target.close()
            source.close()
    to = store_of(target_top)
    lines = [f"database_url = {toml_string(to.public)}"]
    if target_top.vectors_uri is not None:
        lines.append(f"vectors_uri = {toml_string(public_uri(target_top.vectors_uri))}")
    lines += ["", "[embedding]", f"model = {toml_string(reports[0][1].model_id)}"]
    return CollectionsMigration(tuple(reports), tuple(lines), to.has_password)
