"""``kb-mcp migrate-store``: copy the index to another store (a team's PostgreSQL database)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import collection_option, kb_options, setup_logging

if TYPE_CHECKING:
    from kbmcp_core.index_copy import CopyReport

MIGRATE_HELP = """Copy the index to another store without re-embedding anything.

\b
Documents, chunks (same ids), lexical rows and the index facts go to the
database at --to; the vectors go to --vectors-to (or stay where they are).
The configured embedding model must be the index's own. Both stores' writer
locks are held while copying. A copy that was interrupted leaves the target
marked incomplete; run the same command again to finish it. With
[[collections]], each collection (or each --collection) is copied to the
target's matching place: schema kb_<name>, vectors under <URI>/<name>.

Exit status: 0 copied, 2 refused or could not run (no index, another model,
a target that already holds documents), 1 a store failed during the copy.
"""


class _Progress:
    """One line on stderr every two seconds, and one at the end."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self.last >= 2.0:
            self.last = now
            click.echo(f"kb-mcp: copied {done}/{total} documents", err=True)


def _vectors_arg(value: str | None) -> str | None:
    """A folder given on the command line is relative to the current directory."""
    if value is None or "://" in value:
        return value
    return str(Path(value).expanduser().resolve())


@click.command("migrate-store", help=MIGRATE_HELP)
@kb_options
@click.option("--to", "to_url", required=True, metavar="URL",
              help="Database URL of the target store, e.g. "
                   "postgresql+psycopg://user@host:5432/kb.")
@click.option("--vectors-to", "vectors_to", default=None, metavar="URI",
              help="Where the target keeps its vectors: a folder or an object-store URI such "
                   "as s3://bucket/prefix (default: the vectors stay where they are).")
@click.option("--replace", "replace_target", is_flag=True,
              help="Overwrite a target that already holds documents.")
@collection_option
def migrate_store(kb_path: Path | None, config: Path | None, to_url: str,
                  vectors_to: str | None, replace_target: bool,
                  collection_names: tuple[str, ...]) -> None:
    """Each chosen collection's store to the target (one: exactly a plain folder's copy
    and lines; several: each line names its collection)."""
    from kbmcp_adapters.app.migrate_collections import migrate_collections
    from kbmcp_cli.options import open_selected

    setup_logging()
    collections, chosen = open_selected(kb_path, config, collection_names)  # names checked
    several = collections.several
    collections.close()
    label = "collection {}: ".format if several else "".format

    def starting(name: str, source: str, target: str) -> None:
        click.echo(f"kb-mcp: copying {label(name)}{source} to {target}", err=True)

    done = migrate_collections(kb_path, config, to_url, _vectors_arg(vectors_to),
                               names=chosen, replace_target=replace_target,
                               progress=_Progress(), starting=starting)
    for name, report in done.reports:
        click.echo(f"copied {label(name)}{_copied(report)}")
    fill = " (write the password where it shows ***)" if done.password_hidden else ""
    click.echo(f"\nTo use the new store, put this in kb-mcp.toml{fill}:\n")
    for line in done.config_lines:
        click.echo(line)
    click.echo("\nThen `kb-mcp doctor` there should report: healthy: no findings")
    click.echo("(Name that file with --config, or run `kb-mcp trust` on it once: a "
               "kb-mcp.toml found in the knowledge base may not set these keys untrusted.)")


def _copied(report: CopyReport) -> str:
    vectors = ("the vectors stay where they are" if report.shared_vectors
               else f"{report.vectors} vectors")
    again = f", {report.already_copied} already copied" if report.already_copied else ""
    return (f"{report.documents} documents{again}, {report.chunks} chunks and {vectors}; "
            "nothing was re-embedded")
