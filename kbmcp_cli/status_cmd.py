"""``kb-mcp status``: what the index holds, where it is, its last run and its watcher."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.options import EXIT_CANNOT_RUN, format_option, kb_options, open_kb, setup_logging
from kbmcp_core.settings import public_uri


def _watcher(index_dir: Path) -> dict[str, Any] | None:
    from kbmcp_adapters.live.watch_status import read_status

    return read_status(index_dir)


@click.command()
@kb_options
@format_option
def status(kb_path: Path | None, config: Path | None, fmt: str) -> None:
    """Show what the index holds: documents, chunks, model, location, last run."""
    setup_logging()
    kb = open_kb(kb_path, config)
    try:
        stats, read_only, ready = kb.stats(), kb.is_read_only(), kb.is_ready()
    finally:
        kb.close()
    settings = kb.settings
    origin = settings.config_origin
    from kbmcp_adapters.app.bootstrap import store_location

    data: dict[str, Any] = {
        "kb_path": str(settings.kb_path),
        "config": {"file": str(origin.path) if origin.path else None,
                   "found_by": origin.found_by or None, "trusted": origin.trusted,
                   "summary": origin.describe()},
        "index": str(settings.index_dir),
        "store": store_location(settings),  # the password never shows
        "vectors": public_uri(settings.vectors_location),  # never a credential
        "read_only": read_only,
        "ready": ready,  # a run has read the whole folder in (else exit 2)
        "documents": stats.documents,
        "chunks": stats.chunks,
        "model": stats.model_id,
        "dimension": stats.dimension,
        "schema_revision": stats.schema_revision,
        "last_run": stats.last_run,
        "watcher": _watcher(settings.index_dir),
    }
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        _exit_unless(ready)
        return
    click.echo(f"kb_path: {data['kb_path']}")
    click.echo(f"config: {origin.describe()}")
    for key in ("index", "store", "vectors", "documents", "chunks", "model", "dimension",
                "schema_revision"):
        suffix = " (read-only for this user: searchable, not indexable)" if (
            key == "index" and read_only) else ""
        click.echo(f"{key}: {data[key]}{suffix}")
    last = stats.last_run or {}
    if last:
        click.echo(
            f"last_run: {last.get('finished_at')} ({last.get('added', 0)} added, "
            f"{last.get('updated', 0)} updated, {last.get('deleted', 0)} deleted, "
            f"{last.get('failed', 0)} failed)"
        )
    else:
        click.echo("last_run: never")
    w = data["watcher"]
    if not w:
        click.echo("watcher: not running (no `kb-mcp serve` has watched this index)")
    else:
        state = "alive" if w.get("alive") else "not running"
        click.echo(f"watcher: {state} (pid {w.get('pid')}), last sync {w.get('last_sync')}"
                   + (f", last error: {w['last_error']}" if w.get("last_error") else ""))
    click.echo("ready: yes" if ready else f"ready: no ({NOT_READY})")
    _exit_unless(ready)


#: Why an index is not ready, as ``status`` says it.
NOT_READY = ("no index run has finished reading the folder yet: search answers "
             "index_not_ready; run `kb-mcp index`")


def _exit_unless(ready: bool) -> None:
    """An index no run has read the folder into is "no index yet" for scripts: exit 2."""
    if not ready:
        sys.exit(EXIT_CANNOT_RUN)
