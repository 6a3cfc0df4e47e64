"""``kb-mcp collections`` and the ``--collection`` of ``index``, ``search`` and ``get``.

A config with ``[[collections]]`` serves several folders, each with its own index
(decision 0041); a plain folder is a collection of one (decision 0051). ``index`` indexes
each one (or those ``--collection`` names), ``search`` searches the default ones (or those
named) as one, and ``get`` reads from the one named; output names a collection only when
there are several.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import format_option, kb_options, setup_logging

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.settings import Settings


def open_for(settings: Settings) -> Collections:
    from kbmcp_adapters.app.collections import open_collections

    return open_collections(settings)


def one_collection(settings: Settings, name: str | None) -> tuple[Collections, KnowledgeBase]:
    """The collection a read names; without a name, the only default collection, else
    ``UnknownCollection``-style advice to name one (``InvalidQuery``)."""
    from kbmcp_core.errors import InvalidQuery

    collections = open_for(settings)
    try:
        if name is None:
            if len(collections.defaults) != 1:
                raise InvalidQuery("name the collection to read with --collection; the "
                                   f"collections are: {', '.join(collections.names)}")
            name = collections.defaults[0]
        return collections, collections.kb(collections.resolve(name)[0])
    except BaseException:
        collections.close()
        raise


@click.group("collections", invoke_without_command=True)
@kb_options
@format_option
@click.pass_context
def collections_cmd(ctx: click.Context, kb_path: Path | None, config: Path | None,
                    fmt: str) -> None:
    """List the collections this configuration serves: name, description, folder,
    documents, when each was last indexed, and whether it is ready to search. Without
    [[collections]] the one folder is one collection named after it. `add` and `remove`
    change the collections of your user config."""
    if ctx.invoked_subcommand is not None:
        return
    from kbmcp_adapters.app.bootstrap import settings_for

    setup_logging()
    collections = open_for(settings_for(kb_path, config))
    try:
        infos = collections.info()
    finally:
        collections.close()
    if fmt == "json":
        click.echo(json.dumps({"collections": [i.as_dict() for i in infos]},
                              ensure_ascii=False, indent=2))
        return
    for i in infos:
        ready = "ready" if i.ready else "not ready: run `kb-mcp index`"
        default = "" if i.default else " (searched only when named)"
        click.echo(f"{i.name}{default}: {i.description}" if i.description
                   else f"{i.name}{default}")
        click.echo(f"  path: {i.path}")
        click.echo(f"  documents: {i.document_count}, last indexed: "
                   f"{i.last_indexed or 'never'}, {ready}")


@collections_cmd.command("add")
@click.argument("path", type=click.Path(path_type=Path, file_okay=False))
@click.option("--name", default=None,
              help="The collection's name (lower-case letters, digits, _ and -); default: "
              "the folder's name.")
@click.option("--description", default=None,
              help="What the collection holds, as list_collections tells a client.")
def add(path: Path, name: str | None, description: str | None) -> None:
    """Add the folder PATH to the [[collections]] of your user config
    ($XDG_CONFIG_HOME/kb-mcp/config.toml; its comments are kept). The folder is used as
    the knowledge base it is: its own kb-mcp.toml (formats, exclusions) and its index,
    when it has them, so an indexed folder is not indexed again."""
    from kbmcp_adapters.app.user_collections import add_collection, user_config_path

    spec = add_collection(path, name, description)
    click.echo(f"added collection {spec.name}: {spec.path} (in {user_config_path()})")


@collections_cmd.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Take the collection NAME out of your user config's [[collections]]. Its folder
    and its index are left as they are."""
    from kbmcp_adapters.app.user_collections import remove_collection, user_config_path

    folder = remove_collection(name)
    click.echo(f"removed collection {name} ({folder}) from {user_config_path()}")
