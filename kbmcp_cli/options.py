"""Options, exit codes and logging set-up shared by every ``kb-mcp`` command."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

F = TypeVar("F", bound=Callable[..., Any])

#: Exit code for "could not run at all" (bad config, no index): shared by every command.
EXIT_CANNOT_RUN = 2


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


def format_option(func: F) -> F:
    """--format text|json, for the commands whose output scripts read."""
    return click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                        default="text", show_default=True,
                        help="Output as text for people, or JSON for scripts.")(func)


def open_kb(kb_path: Path | None, config: Path | None) -> KnowledgeBase:
    """The facade for this command line (imported here, not at start-up: --help stays fast)."""
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base

    return open_knowledge_base(kb_path, config=config)


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
