"""``kb-mcp index``: build or update the index, with progress on stderr."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.options import kb_options, open_kb, setup_logging


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
def index(kb_path: Path | None, config: Path | None, force: bool, prune: bool, quiet: bool,
          fmt: str) -> None:
    """Index the knowledge base (incremental: unchanged files cost a hash)."""
    setup_logging(quiet=quiet)
    kb = open_kb(kb_path, config)
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
