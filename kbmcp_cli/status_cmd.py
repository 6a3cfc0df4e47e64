"""``kb-mcp status``: what the index holds, where it is, its last run and its watcher
(each collection's in turn when there are several, one failing not hiding the others)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbmcp_cli.options import (
    EXIT_CANNOT_RUN,
    collection_option,
    exit_code_of,
    format_option,
    kb_options,
    open_selected,
    setup_logging,
)
from kbmcp_core.models import SKIP_FORMAT
from kbmcp_core.settings import public_uri

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.models import IndexStats


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
@collection_option
@click.option("--skipped", is_flag=True,
              help="Also list every file the index leaves out, by name, with the reason "
                   "(format not enabled, not a supported format, ignored, a link, ...); "
                   "walks the folder without reading the files.")
def status(kb_path: Path | None, config: Path | None, fmt: str, skipped: bool,
           collection_names: tuple[str, ...]) -> None:
    """Show what the index holds: documents, chunks, model, location, last run, and who
    keeps it up to date (`kb-mcp serve` or `kb-mcp watch`). With several collections, each
    collection in turn (--collection narrows them)."""
    setup_logging()
    collections, chosen = open_selected(kb_path, config, collection_names)
    try:
        code = show_collections(collections, chosen, fmt, skipped)
    finally:
        collections.close()
    if code:
        sys.exit(code)


def status_data(kb: KnowledgeBase, skipped: bool) -> tuple[dict[str, Any], IndexStats, bool]:
    """What ``status`` says about one knowledge base: (its facts, its stats, ready)."""
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
                   "over": str(origin.over) if origin.over else None,  # decision 0047
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
    note = kb.model_note()  # kept from the index, not the default (decision 0046)
    if note is not None and stats.model_id == settings.embedding_model:
        data["model_note"] = note
    return data, stats, ready


def echo_facts(data: dict[str, Any], stats: IndexStats, ready: bool, indent: str = "") -> None:
    """The lines of ``status`` after ``kb_path`` and ``config``, each after ``indent``."""
    read_only, left_out = data["read_only"], data.get("skipped_files")

    def echo(line: str) -> None:
        click.echo(f"{indent}{line}")

    for key in ("index", "store", "vectors", "documents", "chunks", "model", "dimension",
                "schema_revision"):
        suffix = " (read-only for this user: searchable, not indexable)" if (
            key == "index" and read_only) else ""
        shown = "none yet (no chunk embedded)" if data[key] is None and key in (
            "model", "dimension") else data[key]
        if key == "model" and data.get("model_note"):
            suffix = f" ({data['model_note']})"
        echo(f"{key}: {shown}{suffix}")
    last = stats.last_run or {}
    if last:
        echo(
            f"last_run: {last.get('finished_at')} ({last.get('added', 0)} added, "
            f"{last.get('updated', 0)} updated, {last.get('deleted', 0)} deleted, "
            f"{last.get('failed', 0)} failed)"
        )
    else:
        echo("last_run: never")
    reasons = last.get("skipped_reasons")
    disabled = reasons.get(SKIP_FORMAT, 0) if isinstance(reasons, dict) else 0
    if disabled:
        echo(f"note: the last run left out {disabled} file(s) of formats kb-mcp reads "
             "but this configuration does not enable (`kb-mcp status --skipped` lists "
             "them; `kb-mcp init` on a new folder, or [parsers].enabled, turns them on)")
    echo(f"watcher: {watcher_line(data['watcher'])}")
    echo("ready: yes" if ready else f"ready: no ({NOT_READY})")
    if left_out is not None:
        count = sum(len(paths) for paths in left_out.values())
        echo(f"skipped: {count}" if count else "skipped: none")
        for reason, paths in left_out.items():
            for path in paths:
                echo(f"  {reason}: {path}")


def _heading(collections: Collections, name: str) -> dict[str, Any]:
    spec = collections.spec(name)
    return {"name": name, "description": spec.description, "default": spec.default,
            "path": str(spec.path)}


def show_collections(collections: Collections, names: Sequence[str], fmt: str,
                     skipped: bool) -> int:
    """Print the status of each collection in ``names``; the exit code: 0 when every
    one is ready, 1 when one failed while running (an unreachable store), else 2 when one
    is not ready or has no index yet. A collection of one prints a plain folder's status
    (its failure is the command's); several, the config once, then each under its name
    (one failing not hiding the others)."""
    from kbmcp_core.errors import KbError

    origin = collections.top.config_origin
    several = collections.several
    blocks: list[dict[str, Any]] = []
    codes = {0}
    if fmt == "text" and several:
        click.echo(f"config: {origin.describe()}")
    for name in names:
        block = _heading(collections, name)
        try:
            data, stats, ready = status_data(collections.kb(name), skipped)
        except KbError as exc:
            if not several:
                raise
            codes.add(exit_code_of(exc))
            block.update(ready=False, error=str(exc))
            blocks.append(block)
            if fmt == "text":
                _echo_heading(block)
                click.echo(f"  error: {exc}")
            continue
        if not ready:
            codes.add(EXIT_CANNOT_RUN)
        if not several:
            _show_one(data, stats, ready, fmt)
            continue
        del data["config"]  # one config for all: said once, at the top
        block.update(data)
        blocks.append(block)
        if fmt == "text":
            _echo_heading(block)
            echo_facts(data, stats, ready, indent="  ")
    if fmt == "json" and several:
        config = {"file": str(origin.path) if origin.path else None,
                  "found_by": origin.found_by or None, "trusted": origin.trusted,
                  "over": str(origin.over) if origin.over else None,
                  "summary": origin.describe()}
        click.echo(json.dumps({"config": config, "collections": blocks},
                              ensure_ascii=False, indent=2))
    return 1 if 1 in codes else max(codes)


def _show_one(data: dict[str, Any], stats: IndexStats, ready: bool, fmt: str) -> None:
    """The ``status`` of a collection of one: a plain folder's."""
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(f"kb_path: {data['kb_path']}")
    click.echo(f"config: {data['config']['summary']}")
    echo_facts(data, stats, ready)


def _echo_heading(block: dict[str, Any]) -> None:
    about = f" ({block['description']})" if block["description"] else ""
    default = "" if block["default"] else " [not searched by default]"
    click.echo(f"collection: {block['name']}{about}{default}")
    click.echo(f"  kb_path: {block['path']}")


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
