"""``kb-mcp search``: hybrid retrieval from the command line, as text or the MCP JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kbmcp_cli.options import kb_options, open_kb, setup_logging


@click.command()
@click.argument("query")
@kb_options
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None,
              help="Number of results, at least 1 (default 5; at most [search].max_limit).")
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
@click.option("--chunks-per-document", type=click.IntRange(min=1), default=None,
              help="Most chunks of one document in the results, at least 1 (default 2).")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "lexical"]), default="hybrid",
              help="Retriever: both legs fused (default), or one leg alone.")
def search(query: str, kb_path: Path | None, config: Path | None, limit: int | None, fmt: str,
           path_globs: tuple[str, ...], tags_any: tuple[str, ...], tags_all: tuple[str, ...],
           date_from: str | None, date_to: str | None, category: str | None, topic: str | None,
           chunks_per_document: int | None, mode: str) -> None:
    """Search the knowledge base (hybrid: vectors + BM25, fused)."""
    setup_logging()
    kb = open_kb(kb_path, config)
    try:
        response = kb.search(
            query,
            limit=limit if limit is not None else kb.settings.search_default_limit,
            path_globs=path_globs or None, tags_any=tags_any or None, tags_all=tags_all or None,
            date_from=date_from, date_to=date_to, category=category, topic=topic,
            chunks_per_document=chunks_per_document, mode=mode,
        )
    finally:
        kb.close()
    if fmt == "json":
        click.echo(json.dumps(response.as_dict(), ensure_ascii=False, indent=2))
        return
    if not response.results:
        click.echo("no results")
    for i, hit in enumerate(response.results, 1):
        where = f"p.{hit.page}" if hit.page is not None else f"L{hit.start_line}-{hit.end_line}"
        heading = " > ".join(hit.heading_path) or hit.title
        click.echo(f"{i}. {hit.path} [{where}] {heading}  (score {hit.score:.4f})")
        snippet = " ".join(hit.content.split())[:200]
        click.echo(f"   {snippet}")
    if response.low_confidence:
        click.echo("(low confidence: no clear match)")
    if response.notice:
        click.echo(f"(notice: {response.notice})")
