"""Options, exit codes and logging set-up shared by every ``kb-mcp`` command, and
``--collection NAME``: which collections a run covers (``open_selected``: ``status``,
``doctor``, ``watch``, ``migrate-store``, ``index``, all of them or those named) or the one it
works on (``opened_one``: ``eval``, ``tune``, ``graph``). A folder without ``[[collections]]``
is a collection of one either way (decision 0051)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.errors import KbError

F = TypeVar("F", bound=Callable[..., Any])

#: Exit code for "could not run as asked" (a bad argument or query, bad config, no index):
#: shared by every command, and click's own for a bad command line.
EXIT_CANNOT_RUN = 2
#: Exit code after Ctrl-C (SIGINT), as a shell reports a process its signal ended.
EXIT_STOPPED = 130
#: Commands whose work a second run picks up where an interrupted one stopped.
_RESUMABLE = frozenset({"index", "init", "migrate-store"})


def stopped_message(command: str | None) -> str:
    """What a command stopped by Ctrl-C says (a resumable one: how to finish its work)."""
    return "stopped; run again to resume" if command in _RESUMABLE else "stopped"
#: ``ctx.meta`` key set by ``-v``: setup_logging then logs at debug level.
_VERBOSE = "kb_mcp.verbose"


def kb_options(func: F) -> F:
    """--kb-path, --config and -v, shared by every command. ``-v`` makes the config file
    in use (and whether it is trusted) appear on stderr before anything else runs; a
    command with its own --verbose keeps it and gains that."""
    params = getattr(func, "__click_params__", [])
    own = next((p for p in params if p.name == "verbose"), None)
    if own is None:
        func = click.option("--verbose", "-v", is_flag=True, expose_value=False,
                            callback=_verbose,
                            help="Debug logging on stderr, starting with the config file "
                            "used and whether it is trusted.")(func)
    elif own.callback is None:
        own.callback = _verbose
    func = click.option(
        "--config",
        "config",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="Config file (default: $KB_MCP_CONFIG, else kb-mcp.toml in the knowledge "
        "base, else $XDG_CONFIG_HOME/kb-mcp/config.toml, ~/.config by default).",
    )(func)
    func = click.option(
        "--kb-path",
        "kb_path",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Root folder of the knowledge base (overrides kb_path in the config).",
    )(func)
    return func


def config_default(field: str) -> str:
    """``(default [section].key, VALUE)``: an option's default as the settings schema
    declares it, for its help (the config key wins over it; the flag over both)."""
    from kbmcp_core.settings_docs import shown_value
    from kbmcp_core.settings_keys import SCHEMA

    key = SCHEMA.by_field[field]
    return f"(default {key.label}, {shown_value(key.default)})."


def format_option(func: F) -> F:
    """--format text|json, for the commands whose output scripts read."""
    return click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                        default="text", show_default=True,
                        help="Output as text for people, or JSON for scripts.")(func)


def _verbose(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """-v: debug logging from now on (the config file is read after the options)."""
    if value:
        ctx.meta[_VERBOSE] = True
        setup_logging(verbose=True)
    return value


def setup_logging(quiet: bool = False, verbose: bool = False) -> None:
    """All logs go to stderr; stdout is reserved for results (and the MCP protocol)."""
    ctx = click.get_current_context(silent=True)
    verbose = verbose or bool(ctx is not None and ctx.meta.get(_VERBOSE))
    level = logging.ERROR if quiet else (logging.DEBUG if verbose else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kb-mcp: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("alembic", "httpx", "lancedb", "fastembed"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def exit_code_of(exc: KbError) -> int:
    """THE exit code of a ``KbError`` (``KbGroup``, and each collection's failure in a run
    over several): 2 for what the set-up must change (no index yet, the configuration,
    another model, a bad argument), 1 for a failure while running."""
    from kbmcp_core.errors import ConfigError, IndexNotFound, InvalidQuery, ModelMismatch

    if isinstance(exc, ConfigError | IndexNotFound | ModelMismatch | InvalidQuery):
        return EXIT_CANNOT_RUN
    return 1


def collections_option(help_text: str) -> Callable[[F], F]:
    """``--collection NAME``, repeatable, into ``collection_names``, with the command's
    own ``help_text``."""
    def decorate(func: F) -> F:
        return click.option("--collection", "collection_names", multiple=True,
                            metavar="NAME", help=help_text)(func)
    return decorate


#: ``--collection NAME`` (repeatable): only these collections; default all of them.
collection_option = collections_option(
    "Only this collection (repeat for several); default: every collection of "
    "[[collections]]. A name that is not a collection is an error listing them.")


def open_selected(kb_path: Path | None, config: Path | None,
                  names: Sequence[str]) -> tuple[Collections, tuple[str, ...]]:
    """The collections of this command line's settings and the names a run covers: every
    configured one, or those ``--collection`` names (``UnknownCollection`` for a name
    that is not one, listing the real ones). One folder without ``[[collections]]`` is
    one collection named after the folder."""
    from kbmcp_adapters.app.bootstrap import settings_for
    from kbmcp_adapters.app.collections import open_collections

    collections = open_collections(settings_for(kb_path, config))
    try:
        chosen = collections.resolve(list(names)) if names else collections.names
    except BaseException:
        collections.close()
        raise
    return collections, chosen


#: ``--collection NAME`` (once): the collection a command of one knowledge base works on.
one_collection_option = click.option(
    "--collection", "collection_name", metavar="NAME", default=None,
    help="The collection of [[collections]] to work on; needed when there are several "
    "(a folder without [[collections]] is its one collection).")


@contextmanager
def opened_one(kb_path: Path | None, config: Path | None,
               name: str | None) -> Iterator[KnowledgeBase]:
    """The knowledge base of collection ``name`` (``--collection``), closed on leaving: a
    configuration of one collection needs no name, one of several refuses to guess."""
    collections, chosen = open_selected(kb_path, config, [name] if name else [])
    try:
        if name is None and len(collections.names) > 1:
            raise click.UsageError(
                f"this configuration has {len(collections.names)} collections "
                f"({', '.join(collections.names)}): name one with --collection")
        yield collections.kb(chosen[0] if name else collections.names[0])
    finally:
        collections.close()
