"""The ``kb-mcp`` command group: every command named here, its module imported when it runs;
KbError becomes one line here.

Imported by ``kbmcp_cli.main`` only once a command needs it (``kb-mcp search`` may be
answered by a running server before click is even imported).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import click

from kbmcp_cli.options import EXIT_STOPPED, exit_code_of, stopped_message
from kbmcp_core.errors import KbError, NoSuchDocument

#: Every command: its name, and the module and function that define it. A command's module
#: is imported when that command runs (or when ``commands`` is read, as ``--help`` does),
#: so ``kb-mcp search`` does not import the other seventeen and what they import.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("kbmcp_cli.init_cmd", "init"),
    "index": ("kbmcp_cli.index_cmd", "index"),
    "status": ("kbmcp_cli.status_cmd", "status"),
    "search": ("kbmcp_cli.search_cmd", "search"),
    "get": ("kbmcp_cli.get_cmd", "get"),
    "doctor": ("kbmcp_cli.doctor_cmd", "doctor"),
    "eval": ("kbmcp_cli.eval_cmd", "eval_cmd"),
    "serve": ("kbmcp_cli.serve_cmd", "serve"),
    "watch": ("kbmcp_cli.watch_cmd", "watch"),
    "migrate-store": ("kbmcp_cli.migrate_cmd", "migrate_store"),
    "token": ("kbmcp_cli.token_cmd", "token"),
    "trust": ("kbmcp_cli.trust_cmd", "trust"),
    "config": ("kbmcp_cli.config_cmd", "config"),
    "graph": ("kbmcp_cli.graph_cmd", "graph"),
    "tune": ("kbmcp_cli.tune_cmd", "tune"),
    "collections": ("kbmcp_cli.collections_cmd", "collections_cmd"),
    "service": ("kbmcp_cli.service_cmd", "service"),
    "docs": ("kbmcp_cli.docs_cmd", "docs"),
}


class KbGroup(click.Group):
    """Turns every ``KbError`` into one line on stderr and an exit code, in one place
    (the table is in `kb-mcp docs usage`; decision 0027): 2 for what the command line or the
    set-up must change (a bad argument or query, the configuration, no index yet, another
    model), 1 for a failure while running (an unreachable database included), 130 for
    Ctrl-C."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loaded: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        """Every command, each module imported (what ``--help`` and the docs read)."""
        for name in COMMANDS:
            self._load(name)
        return self._loaded

    @commands.setter
    def commands(self, given: MutableMapping[str, click.Command]) -> None:
        self._loaded = dict(given)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self._loaded})

    def _load(self, name: str) -> click.Command | None:
        """The command ``name``, its module imported the first time it is asked for."""
        if name not in self._loaded and name in COMMANDS:
            module, attribute = COMMANDS[name]
            command = getattr(importlib.import_module(module), attribute)
            self._loaded[name] = command
        return self._loaded.get(name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbError as exc:
            if isinstance(exc, NoSuchDocument):  # why, with -v: the answer is a missing name's
                logging.getLogger(__name__).info("%r is not served: %s", exc.path, exc.why)
            click.echo(f"kb-mcp: error: {exc}", err=True)
            sys.exit(exit_code_of(exc))
        except KeyboardInterrupt:
            click.echo(f"\nkb-mcp: {stopped_message(ctx.invoked_subcommand)}", err=True)
            sys.exit(EXIT_STOPPED)


@click.group(cls=KbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kb-mcp")
def cli() -> None:
    """kb-mcp: a local knowledge base for AI clients, over MCP.

    Index a folder of Markdown, text, PDF, HTML, Word, PowerPoint, Excel, EPUB,
    reStructuredText, AsciiDoc and Jupyter notebook files, source code and scanned images
    (OCR) (each format but
    Markdown turned on in [parsers].enabled), search it from the command
    line, or serve it to an MCP client with `kb-mcp serve`: over stdio, or over HTTP with
    bearer tokens (`kb-mcp token`) and a search page at /ui. Start with `kb-mcp init`;
    `kb-mcp docs` prints the documentation that came with it.
    """
