"""``kb-mcp graph``: the connection graph of offered documents, as JSON, DOT or SVG."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kbmcp_cli.options import kb_options, one_collection_option, opened_one, setup_logging
from kbmcp_core.graph import (
    DEFAULT_DEPTH,
    DEFAULT_FAN_OUT,
    DEFAULT_MAX_NODES,
    DEFAULT_THRESHOLD,
    MAX_DEPTH,
    MAX_FAN_OUT,
    MAX_NODES,
    GraphBounds,
)


@click.command()
@kb_options
@one_collection_option
@click.option("--path", "path", default=None,
              help="Start from this document (relative to the knowledge base).")
@click.option("--query", default=None,
              help="Or start from the documents a search for this finds.")
@click.option("--depth", type=click.IntRange(0, MAX_DEPTH), default=DEFAULT_DEPTH,
              show_default=True, help="Hops from the start documents.")
@click.option("--fan-out", type=click.IntRange(1, MAX_FAN_OUT), default=DEFAULT_FAN_OUT,
              show_default=True, help="Most neighbours kept per document.")
@click.option("--threshold", type=click.FloatRange(-1.0, 1.0), default=DEFAULT_THRESHOLD,
              show_default=True, help="Least cosine similarity of a link.")
@click.option("--max-nodes", type=click.IntRange(1, MAX_NODES), default=DEFAULT_MAX_NODES,
              show_default=True, help="Most documents in the graph.")
@click.option("--format", "fmt", type=click.Choice(["json", "dot", "svg"]), default="json",
              show_default=True,
              help="json (what the get_connection_graph tool returns), Graphviz dot, or a "
              "standalone svg drawn by kb-mcp itself (the same graph gives the same bytes).")
@click.option("--output", "-o", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file instead of stdout.")
def graph(kb_path: Path | None, config: Path | None, collection_name: str | None,
          path: str | None, query: str | None,
          depth: int, fan_out: int, threshold: float, max_nodes: int, fmt: str,
          output: Path | None) -> None:
    """Show how offered documents relate: an edge joins two documents whose chunks are
    nearest neighbours. Give exactly one of --path or --query; a cut made by a bound is
    reported (truncated)."""
    if (path is None) == (query is None):
        raise click.UsageError("give exactly one of --path or --query")
    setup_logging()
    from kbmcp_core.graph_render import to_dot, to_svg

    with opened_one(kb_path, config, collection_name) as kb:
        found = kb.connection_graph(path=path, query=query, bounds=GraphBounds(
            depth=depth, fan_out=fan_out, threshold=threshold, max_nodes=max_nodes))
    if fmt == "json":
        text = json.dumps(found.as_dict(), ensure_ascii=False, indent=2) + "\n"
    else:
        text = to_dot(found) if fmt == "dot" else to_svg(found)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    if found.is_truncated:
        cut = ", ".join(f"{k} {v}" for k, v in sorted(found.truncated.items()) if v)
        click.echo(f"kb-mcp: the graph is truncated ({cut}): raise the bounds to see more",
                   err=True)
