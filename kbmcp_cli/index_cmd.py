"""``kb-mcp index``: build or update the index, with progress on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kbmcp_cli.options import kb_options, open_kb, setup_logging
from kbmcp_cli.progress import IndexProgress


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
def index(kb_path: Path | None, config: Path | None, force: bool, prune: bool, quiet: bool,
          fmt: str, strict: bool, verbose: bool) -> None:
    """Index the knowledge base (incremental: unchanged files cost a hash)."""
    setup_logging(quiet=quiet, verbose=verbose)
    kb = open_kb(kb_path, config)
    progress = IndexProgress(quiet)
    try:
        summary = kb.index(force=force, prune=prune, progress=progress)
    finally:
        progress.close()
        kb.close()
    if fmt == "json":
        click.echo(json.dumps(summary.as_dict(files=verbose), ensure_ascii=False))
    else:
        if verbose:
            for what, files in (("skipped", summary.skipped_files),
                                ("failed", summary.failed_files)):
                for reason, paths in sorted(files.items()):
                    for path in sorted(paths):
                        click.echo(f"kb-mcp: {what} ({reason}): {path}", err=True)
        click.echo(summary.line())
    if strict and summary.failed:
        sys.exit(1)
