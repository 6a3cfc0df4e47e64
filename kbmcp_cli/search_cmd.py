"""``kb-mcp search``: hybrid retrieval from the command line, as text or the MCP JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbmcp_cli import field_option
from kbmcp_cli.options import collections_option, kb_options, setup_logging
from kbmcp_cli.search_fast import (
    NO_SERVER_ENV,
    ask_server,
    render,
    scope,
    search_params,
)
from kbmcp_core.context import CONTEXT_KINDS
from kbmcp_core.rerank import RERANK_CANDIDATES
from kbmcp_core.search_request import MAX_CONTEXT_CHUNKS, MODES, SearchDefaults

if TYPE_CHECKING:
    from kbmcp_core.settings import Settings


@click.command()
@click.argument("query")
@kb_options
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None,
              help=f"Number of results, at least 1 (default [search].default_limit, "
                   f"{SearchDefaults().limit}; at most [search].max_limit).")
@click.option("--format", "fmt", type=click.Choice(["json", "text"]), default="text",
              help="json prints the same wrapper the MCP search tool returns.")
@click.option("--path-glob", "path_globs", multiple=True,
              help="Only paths matching this glob; prefix with ! to exclude. Repeatable.")
@click.option("--tag", "tags_any", multiple=True, help="Any of these tags. Repeatable.")
@click.option("--all-tags", "tags_all", multiple=True, help="All of these tags. Repeatable.")
@click.option("--date-from", default=None, help="Documents dated on or after YYYY-MM-DD.")
@click.option("--date-to", default=None, help="Documents dated on or before YYYY-MM-DD.")
@click.option("--category", default=None, help="Only this category.")
@click.option("--topic", default=None, help="Only this topic.")
@click.option("--field", "fields", multiple=True, callback=field_option.to_filter,
              metavar="TEST", help=field_option.HELP)
@click.option("--not-field", "fields_not", multiple=True, callback=field_option.to_filter,
              metavar="TEST", help=field_option.NOT_HELP)
@click.option("--chunks-per-document", type=click.IntRange(min=1), default=None,
              help="Most chunks of one document in the results, at least 1 (default "
                   f"[search].chunks_per_document, {SearchDefaults().chunks_per_document}).")
@click.option("--mode", type=click.Choice(MODES), default=None,
              help=f"Retriever: both legs fused ({MODES[0]}, the default), or one leg alone.")
@click.option("--diversity", type=click.FloatRange(0, 1), default=None,
              help="MMR trade-off from 0 to 1: lower spreads the results over more documents; "
                   "1 keeps the relevance order (default [search].diversity).")
@click.option("--context", "context", type=click.Choice(CONTEXT_KINDS),
              default=None, help="Show each hit with its neighbouring chunks or its whole "
                                 "section (default [search].context).")
@click.option("--context-chunks", type=click.IntRange(1, MAX_CONTEXT_CHUNKS), default=None,
              help=f"Neighbours on each side for --context adjacent, 1-{MAX_CONTEXT_CHUNKS} "
                   "(default [search].context_chunks).")
@click.option("--rerank/--no-rerank", default=None,
              help=f"Reorder the best [search].rerank_candidates ({RERANK_CANDIDATES}) "
                   "candidates with the cross-encoder of [search].reranker (default "
                   "[search].rerank; needs kb-mcp[rerank]).")
@click.option("--explain", is_flag=True, default=None,
              help="Show under each hit the numbers behind its score: each leg's rank and "
                   "score, the fusion weights and parts (they add up to the score), the "
                   "reranker's logit and trust; and what each filter removed.")
@click.option("--no-server", is_flag=True, envvar=NO_SERVER_ENV, show_envvar=True,
              help="Search in this process even when a `kb-mcp serve` or `kb-mcp watch` of "
                   "the same index could answer (it is asked over kb-mcp.sock in the index "
                   "folder).")
@click.option("--color/--no-color", "color", default=None,
              help="Matched words in bold (ANSI) or between \u27e6 \u27e7 marks (default: bold on "
                   "a terminal unless NO_COLOR is set).")
@collections_option("Search this collection of [[collections]] (repeat for several: one "
                    "joint answer, each hit naming its collection); default: the collections "
                    "marked default.")
@click.option("--verbose", "-v", is_flag=True,
              help="Say on stderr who answered (a server, or this process and why); debug "
                   "logging.")
def search(query: str, kb_path: Path | None, config: Path | None, fmt: str, no_server: bool,
           verbose: bool, color: bool | None, **options: Any) -> None:
    """Search the knowledge base (hybrid: vectors + BM25, fused).

    In QUERY, "a phrase" must appear as written and -word leaves out the documents
    holding the word (a hyphen inside a word, or --option, is just text). A query that
    starts with -word goes after -- (kb-mcp search -- "-draft release notes").

    When a `kb-mcp serve` or `kb-mcp watch` of the same index runs as you, with the same
    kb-mcp version and configuration, it answers (its model is already loaded); otherwise
    the search runs here. The output is the same either way.
    """
    # The text and JSON output is made by ``search_fast.render`` from the response's
    # ``as_dict()``, for an answer from a server and a local one alike (decision 0018).
    from kbmcp_adapters.app.bootstrap import settings_for

    setup_logging(verbose=verbose)
    settings = settings_for(kb_path, config)
    names = options.pop("collection_names", ())
    params = search_params(options)
    show = scope(settings, names, params)  # the collections searched (0041, 0051)
    response = None
    if no_server:
        note = "searched in this process (--no-server)"
    else:
        reply = ask_server(settings, query, params)
        response, note = reply.response, reply.note
    text = None
    if response is not None:
        try:
            text = render(response, fmt, color, show_collection=show)
        except (KeyError, TypeError, ValueError, AttributeError):
            response, note = None, "the server's answer was malformed"
    if text is None:
        if not no_server:
            note = f"searched in this process: {note}"
        text = render(local_search(settings, query, params), fmt, color, show_collection=show)
    if verbose:
        click.echo(f"kb-mcp: search: {note}", err=True)
    click.echo(text, color=color)


def local_search(settings: Settings, query: str, params: dict[str, Any]) -> dict[str, Any]:
    """The search run in this process (``--mode lexical`` never loads the model): the
    collections ``params`` names, or the plain folder."""
    from kbmcp_adapters.app.collections import Collections, open_collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    params = dict(params)
    selector = params.pop("collection", None)
    if selector is None:
        one = Collections(settings)
        kb = KnowledgeBase.from_settings(one.settings(one.names[0]))
        try:
            return kb.search(query, **params).as_dict()
        finally:
            kb.close()
    collections = open_collections(settings)
    try:
        return collections.search(query, selector, **params).as_dict()
    finally:
        collections.close()
