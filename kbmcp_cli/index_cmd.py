"""``kb-mcp index``: build or update the index, with progress on stderr."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.options import kb_options, open_kb, setup_logging

#: Without a terminal, a progress line at least this often (s), and at each phase's ends.
PLAIN_EVERY_S = 2.0


class _Progress:
    """Both phases of a run on one line: "text 6,642/6,642 · vectors 1,200/8,577".

    A tqdm bar on a terminal (it follows the phase running now); plain lines otherwise
    (logs, CI): one every few seconds, and one whenever a phase starts or ends.
    """

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.bar: Any = None
        self.last = 0.0
        self.text: tuple[int, int] | None = None
        self.vectors: tuple[int, int] | None = None

    def __call__(self, phase: str, done: int, total: int, _item: str) -> None:
        if self.quiet:
            return
        first = False
        if phase == "text":
            first, self.text = self.text is None, (done, total)
        else:
            first, self.vectors = self.vectors is None, (done, total)
        if self.tty:
            self._draw(first, done, total)
            return
        now = time.monotonic()
        if done in (0, total) or now - self.last >= PLAIN_EVERY_S:
            self.last = now
            click.echo(f"kb-mcp: {self.line()}", err=True)
            if phase == "text" and done == total:
                click.echo("kb-mcp: every file is now searchable by keywords", err=True)

    def line(self) -> str:
        phases = (("text", self.text), ("vectors", self.vectors))
        return " · ".join(f"{name} {c[0]:,}/{c[1]:,}" for name, c in phases if c is not None)

    def _draw(self, first: bool, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None or first:
            if self.bar is not None:
                self.bar.close()
            self.bar = tqdm(total=total, file=sys.stderr, leave=False, dynamic_ncols=True,
                            bar_format="{desc} {bar} {elapsed}<{remaining}")
        self.bar.set_description_str(self.line(), refresh=False)
        self.bar.update(done - self.bar.n)

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
    progress = _Progress(quiet)
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
