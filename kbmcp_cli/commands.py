"""The ``kb-mcp`` command group: every command added explicitly; KbError becomes one line here.

Imported by ``kbmcp_cli.main`` only once a command needs it (``kb-mcp search`` may be
answered by a running server before click is even imported).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from kbmcp_cli.collections_cmd import collections_cmd
from kbmcp_cli.config_cmd import config
from kbmcp_cli.docs_cmd import docs
from kbmcp_cli.doctor_cmd import doctor
from kbmcp_cli.eval_cmd import eval_cmd
from kbmcp_cli.get_cmd import get
from kbmcp_cli.graph_cmd import graph
from kbmcp_cli.index_cmd import index
from kbmcp_cli.init_cmd import init
from kbmcp_cli.migrate_cmd import migrate_store
from kbmcp_cli.options import EXIT_STOPPED, exit_code_of, stopped_message
from kbmcp_cli.search_cmd import search
from kbmcp_cli.serve_cmd import serve
from kbmcp_cli.service_cmd import service
from kbmcp_cli.status_cmd import status
from kbmcp_cli.token_cmd import token
from kbmcp_cli.trust_cmd import trust
from kbmcp_cli.tune_cmd import tune
from kbmcp_cli.watch_cmd import watch
from kbmcp_core.errors import KbError, NoSuchDocument


class KbGroup(click.Group):
    """Turns every ``KbError`` into one line on stderr and an exit code, in one place
    (the table is in `kb-mcp docs usage`; decision 0027): 2 for what the command line or the
    set-up must change (a bad argument or query, the configuration, no index yet, another
    model), 1 for a failure while running (an unreachable database included), 130 for
    Ctrl-C."""

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


for _command in (init, index, status, search, get, doctor, eval_cmd, serve, watch, migrate_store,
                 token, trust, config, graph, tune, collections_cmd, service, docs):
    cli.add_command(_command)

