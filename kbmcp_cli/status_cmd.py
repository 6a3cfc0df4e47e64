"""``kb-mcp status``: what the index holds, where it is, its last run and its watcher."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbmcp_cli.options import EXIT_CANNOT_RUN, format_option, kb_options, open_kb, setup_logging
from kbmcp_core.models import SKIP_FORMAT
from kbmcp_core.settings import public_uri

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase


def _watcher(index_dir: Path) -> dict[str, Any] | None:
    from kbmcp_adapters.live.watch_status import read_status

    return read_status(index_dir)


def skipped_files(kb: KnowledgeBase) -> dict[str, list[str]]:
    """Each file and folder the walk would not index now, by reason (refusals too, with
    their own words after the path), from a walk that reads no file's contents."""
    scan = kb.scan(read=False)
    found: dict[str, list[str]] = {k: sorted(v) for k, v in scan.skipped_paths.items()}
    for refusal in scan.refused:
        found.setdefault(refusal.category, []).append(f"{refusal.path} ({refusal.reason})")
    return dict(sorted(found.items()))


@click.command()
@kb_options
@format_option
@click.option("--skipped", is_flag=True,
              help="Also list every file the index leaves out, by name, with the reason "
                   "(format not enabled, not a supported format, ignored, a link, ...); "
                   "walks the folder without reading the files.")
def status(kb_path: Path | None, config: Path | None, fmt: str, skipped: bool) -> None:
    """Show what the index holds: documents, chunks, model, location, last run, and who
    keeps it up to date (`kb-mcp serve` or `kb-mcp watch`)."""
    setup_logging()
    kb = open_kb(kb_path, config)
    try:
        stats, read_only, ready = kb.stats(), kb.is_read_only(), kb.is_ready()
        left_out = skipped_files(kb) if skipped else None
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
    if left_out is not None:
        data["skipped_files"] = left_out
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
        shown = "none yet (no chunk embedded)" if data[key] is None and key in (
            "model", "dimension") else data[key]
        click.echo(f"{key}: {shown}{suffix}")
    last = stats.last_run or {}
    if last:
        click.echo(
            f"last_run: {last.get('finished_at')} ({last.get('added', 0)} added, "
            f"{last.get('updated', 0)} updated, {last.get('deleted', 0)} deleted, "
            f"{last.get('failed', 0)} failed)"
        )
    else:
        click.echo("last_run: never")
    reasons = last.get("skipped_reasons")
    disabled = reasons.get(SKIP_FORMAT, 0) if isinstance(reasons, dict) else 0
    if disabled:
        click.echo(f"note: the last run left out {disabled} file(s) of formats kb-mcp reads "
                   "but this configuration does not enable (`kb-mcp status --skipped` lists "
                   "them; `kb-mcp init` on a new folder, or [parsers].enabled, turns them on)")
    click.echo(f"watcher: {watcher_line(data['watcher'])}")
    click.echo("ready: yes" if ready else f"ready: no ({NOT_READY})")
    if left_out is not None:
        count = sum(len(paths) for paths in left_out.values())
        click.echo(f"skipped: {count}" if count else "skipped: none")
        for reason, paths in left_out.items():
            for path in paths:
                click.echo(f"  {reason}: {path}")
    _exit_unless(ready)


#: Who keeps an index up to date, as ``status`` says when nothing watches it.
NOT_WATCHED = ("not running (keep the index following the folder with `kb-mcp serve`, "
               "or `kb-mcp watch` where no server runs)")


def watcher_line(w: dict[str, Any] | None) -> str:
    """The watcher's state in words: never a bare "None"."""
    if not w:
        return NOT_WATCHED
    state = "alive" if w.get("alive") else "not running"
    pid = f" (pid {w['pid']})" if w.get("pid") else ""
    synced = w.get("last_sync")
    line = f"{state}{pid}, " + (f"last sync {synced}" if synced else "no sync yet")
    if w.get("last_error"):
        line += f", last error: {w['last_error']}"
    if not w.get("alive"):
        line += "; restart `kb-mcp serve` or `kb-mcp watch` to follow the folder again"
    return line


#: Why an index is not ready, as ``status`` says it.
NOT_READY = ("no index run has finished reading the folder yet: search answers "
             "index_not_ready; run `kb-mcp index`")


def _exit_unless(ready: bool) -> None:
    """An index no run has read the folder into is "no index yet" for scripts: exit 2."""
    if not ready:
        sys.exit(EXIT_CANNOT_RUN)
