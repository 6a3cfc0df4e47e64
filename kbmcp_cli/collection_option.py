"""``--collection NAME`` for every command that opens a knowledge base: the ones that report
on, follow or copy each collection (``status``, ``doctor``, ``watch``, ``migrate-store``:
which configured collections a run covers, and the exit code a collection's failure counts
as), and the ones that work on exactly one (``eval``, ``tune``, ``graph``). A folder without
``[[collections]]`` is a collection of one either way (decision 0051)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kbmcp_cli.options import exit_code_of

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

F = TypeVar("F", bound=Callable[..., Any])


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


__all__ = ["collection_option", "collections_option", "exit_code_of", "one_collection_option",
           "open_selected", "opened_one"]
