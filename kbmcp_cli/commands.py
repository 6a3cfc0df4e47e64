"""The indexing commands: ``kb-mcp index`` and ``kb-mcp status``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.main import cli, kb_options, setup_logging


def _container(kb_path: Path | None, config: Path | None, **values: object):  # type: ignore[no-untyped-def]
    from kbmcp_adapters.app.bootstrap import bootstrap, settings_for

    return bootstrap(settings_for(kb_path, config, **values))


class _Progress:
    """A tqdm bar on a terminal; plain periodic lines otherwise (logs, CI)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.bar: Any = None
        self.last = 0.0

    def __call__(self, done: int, total: int, path: str) -> None:
        if self.quiet:
            return
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="file", file=sys.stderr, leave=False)
            self.bar.update(1)
            return
        now = time.monotonic()
        if done == total or now - self.last >= 2.0:
            self.last = now
            click.echo(f"kb-mcp: indexed {done}/{total} files ({path})", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@cli.command()
@kb_options
@click.option("--force", is_flag=True, help="Re-parse and re-embed every file.")
@click.option(
    "--prune",
    is_flag=True,
    help="Also remove rows whose format is no longer in [parsers].enabled.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no warnings; summary only.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="Summary format.")
def index(kb_path: Path | None, config: Path | None, force: bool, prune: bool, quiet: bool,
          fmt: str) -> None:
    """Index the knowledge base (incremental: unchanged files cost a hash)."""
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    setup_logging(quiet=quiet)
    kb = KnowledgeBase(_container(kb_path, config))
    progress = _Progress(quiet)
    try:
        summary = kb.index(force=force, prune=prune, progress=progress)
    finally:
        progress.close()
        kb.close()
    if fmt == "json":
        click.echo(json.dumps(summary.as_dict(), ensure_ascii=False))
    else:
        click.echo(summary.line())


def _watcher(index_dir: Path) -> dict[str, Any] | None:
    from kbmcp_adapters.live.watch_status import read_status

    return read_status(index_dir)


@cli.command()
@kb_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def status(kb_path: Path | None, config: Path | None, fmt: str) -> None:
    """Show what the index holds: documents, chunks, model, location, last run."""
    setup_logging()
    container = _container(kb_path, config)
    try:
        store = container.store
        stats, read_only = store.stats(), store.read_only
    finally:
        container.close()
    data = {
        "kb_path": str(container.settings.kb_path),
        "index": str(container.settings.index_dir),
        "read_only": read_only,
        "documents": stats.documents,
        "chunks": stats.chunks,
        "model": stats.model_id,
        "dimension": stats.dimension,
        "schema_revision": stats.schema_revision,
        "last_run": stats.last_run,
        "watcher": _watcher(container.settings.index_dir),
    }
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    for key in ("kb_path", "index", "documents", "chunks", "model", "dimension",
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
