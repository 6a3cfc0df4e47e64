"""``kb-mcp migrate-store`` over the configured collections, 1..N (decision 0051): each
collection's store copied to the target's matching place, one after the other, each
under its own two writer locks. A plain folder (a collection of one) goes to the target
itself; a ``[[collections]]`` entry to its schema ``kb_<name>``, vectors under
``<uri>/<name>``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.app.migrate_store import describe_store, migrate_store, toml_string
from kbmcp_core.index_copy import CopyProgress, CopyReport

__all__ = ["CollectionsMigration", "migrate_collections"]


@dataclass(frozen=True, slots=True)
class CollectionsMigration:
    """A finished copy of the chosen collections: each one's report, in the order copied,
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
    collection's copy writes anything; ``ConfigError`` when ``to_url`` cannot hold
    several ``[[collections]]`` (a SQLite file). A plain folder's copy goes to the
    target itself, its lines naming the target's vectors wherever they are."""
    from kbmcp_adapters.app.bootstrap import store_of
    from kbmcp_core.settings import public_uri

    source_top = settings_for(kb_path, config)
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
    # a plain folder's vectors are the target's own; a [[collections]] entry's derive
    # from the top level's vectors_uri, when one is set
    folder = sources.settings(chosen[0]) is source_top
    vectors = targets.settings(chosen[0]).vectors_location if folder else target_top.vectors_uri
    if vectors is not None:
        lines.append(f"vectors_uri = {toml_string(public_uri(vectors))}")
    lines += ["", "[embedding]", f"model = {toml_string(reports[0][1].model_id)}"]
    return CollectionsMigration(tuple(reports), tuple(lines), to.has_password)
