"""The ``kb-mcp`` command group and its shared options; KbError becomes one line here."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kbmcp_core.errors import ConfigError, IndexNotFound, KbError, ModelMismatch

F = TypeVar("F", bound=Callable[..., Any])

#: Exit code for "could not run at all" (bad config, no index): shared by every command.
EXIT_CANNOT_RUN = 2


class KbGroup(click.Group):
    """Turns every ``KbError`` into one line on stderr and an exit code, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ConfigError, IndexNotFound, ModelMismatch) as exc:
            click.echo(f"kb-mcp: error: {exc}", err=True)
            sys.exit(EXIT_CANNOT_RUN)
        except KbError as exc:
            click.echo(f"kb-mcp: error: {exc}", err=True)
            sys.exit(1)


def kb_options(func: F) -> F:
    """--kb-path and --config, shared by every command."""
    func = click.option(
        "--config",
        "config",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="Config file (default: ./kb-mcp.toml when present).",
    )(func)
    func = click.option(
        "--kb-path",
        "kb_path",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Root folder of the knowledge base (overrides kb_path in the config).",
    )(func)
    return func


def setup_logging(quiet: bool = False, verbose: bool = False) -> None:
    """All logs go to stderr; stdout is reserved for results (and the MCP protocol)."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kb-mcp: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("alembic", "httpx", "lancedb", "fastembed"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


@click.group(cls=KbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kb-mcp")
def cli() -> None:
    """kb-mcp: a local knowledge base for AI clients, over MCP.

    Index a folder of Markdown, text and PDF files, search it from the command line,
    or serve it to an MCP client with `kb-mcp serve`.
    """


def main() -> None:
    from kbmcp_cli import commands, doctor_cmd, search_cmd, serve  # noqa: F401  (registers the commands)

    cli(prog_name="kb-mcp")
