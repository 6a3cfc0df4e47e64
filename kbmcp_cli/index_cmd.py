"""``kb-mcp index``: build or update the index, with progress on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import collections_option, kb_options, setup_logging
from kbmcp_cli.progress import IndexProgress
from kbmcp_core.models import SKIP_FORMAT

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.models import RunSummary


@click.command()
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
@click.option("--strict", is_flag=True,
              help="Exit 1 when any file failed (by default failures are warned about and "
                   "counted, and the run still exits 0).")
@click.option("--verbose", "-v", is_flag=True,
              help="Name the files behind every skip and failure reason (JSON: skipped_files "
                   "and failed_files; text: one line per file on stderr); debug logging.")
@collections_option("Index only this collection of [[collections]] (repeat for several); "
                    "default: every collection, one after the other, each with its own "
                    "writer lock.")
def index(kb_path: Path | None, config: Path | None, force: bool, prune: bool, quiet: bool,
          fmt: str, strict: bool, verbose: bool, collection_names: tuple[str, ...]) -> None:
    """Index the knowledge base (incremental: unchanged files cost a hash). With several
    [[collections]], index each in turn (every line of the summary names its own)."""
    from kbmcp_cli.options import open_selected

    setup_logging(quiet=quiet, verbose=verbose)
    collections, chosen = open_selected(kb_path, config, collection_names)
    try:
        code = _index_each(collections, chosen, force, prune, quiet, fmt, strict, verbose)
    finally:
        collections.close()
    if code:
        sys.exit(code)


def _run(kb: KnowledgeBase, force: bool, prune: bool, quiet: bool) -> RunSummary:
    progress = IndexProgress(quiet)
    try:
        # this process embeds nothing after the run: the model's memory is given back
        # before the vectors are compacted (decision 0045)
        return kb.index(force=force, prune=prune, progress=progress, release_model=True)
    finally:
        progress.close()


def _report(summary: RunSummary, verbose: bool, quiet: bool, prefix: str = "") -> None:
    if verbose:
        for what, files in (("skipped", summary.skipped_files),
                            ("failed", summary.failed_files)):
            for reason, paths in sorted(files.items()):
                for path in sorted(paths):
                    click.echo(f"kb-mcp: {what} ({reason}): {prefix}{path}", err=True)
    click.echo(f"{prefix}{summary.line()}")
    hint = None if quiet else _not_enabled(summary)
    if hint:
        click.echo(f"kb-mcp: {prefix}{hint}", err=True)


def _not_enabled(summary: RunSummary) -> str | None:
    """What a run left out as "format not enabled", by format, and how to take it in: a
    folder of HTML pages indexed with the defaults otherwise reads as "0 added"."""
    from kbmcp_adapters.app.folder_formats import formats_of

    found = formats_of(summary.skipped_files.get(SKIP_FORMAT, ()))
    if not found:
        return None
    listed = ", ".join(f"{fmt} ({count})" for fmt, count in found.items())
    return (f"files in formats not enabled: {listed}; to index them, add them to "
            "[parsers].enabled in kb-mcp.toml (`kb-mcp init` in the folder writes one that "
            "enables the formats it finds)")


def _index_each(collections: Collections, chosen: tuple[str, ...], force: bool, prune: bool,
                quiet: bool, fmt: str, strict: bool, verbose: bool) -> int:
    """Each chosen collection in turn; the exit code. One collection prints a plain
    folder's summary and its failure is the command's; of several, each part names its
    collection, and one that cannot be indexed (its writer busy, its folder
    unreadable...) is reported while the others still run: the first failure's code."""
    from kbmcp_cli.options import exit_code_of
    from kbmcp_core.errors import KbError

    several = collections.several
    code = 0
    out: list[dict[str, object]] = []
    for name in chosen:
        if several and not quiet:
            click.echo(f"kb-mcp: indexing collection {name}", err=True)
        try:
            summary = _run(collections.kb(name), force, prune, quiet)
        except KbError as exc:
            if not several:
                raise
            click.echo(f"kb-mcp: error: collection {name}: {exc}", err=True)
            code = code or exit_code_of(exc)
            continue
        if fmt == "json":
            out.append({"collection": name, **summary.as_dict(files=verbose)} if several
                       else summary.as_dict(files=verbose))
        else:
            _report(summary, verbose, quiet, f"{name}: " if several else "")
        if strict and summary.failed:
            code = code or 1
    if fmt == "json":
        click.echo(json.dumps({"collections": out} if several else out[0], ensure_ascii=False))
    return code
