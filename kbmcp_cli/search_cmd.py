"""``kb-mcp search`` and ``kb-mcp eval``: retrieval from the command line, and its measurement."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kbmcp_cli.main import cli, kb_options, setup_logging


def _kb(kb_path: Path | None, config: Path | None):  # type: ignore[no-untyped-def]
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base

    return open_knowledge_base(kb_path, config=config)


@cli.command()
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
    kb = _kb(kb_path, config)
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


@cli.command(name="eval")
@kb_options
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Golden queries YAML (default: <kb_path>/.kb-mcp-eval.yml).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "lexical", "all"]),
              default="hybrid", help="Which retriever to measure; all = the three side by side.")
@click.option("--limit", type=click.IntRange(min=1), default=50,
              help="Results fetched per query, at least 1.")
@click.option("--show-misses/--no-misses", default=True, help="List the queries missed.")
def eval_cmd(kb_path: Path | None, config: Path | None, golden: Path | None, fmt: str,
             mode: str, limit: int, show_misses: bool) -> None:
    """Measure retrieval on golden queries: recall@1/5/10, MRR@10, nDCG@10.

    Golden file: `queries: [{id, query, expected: [{path, heading?}], kind?}]`. Metrics are
    given at document level (distinct documents) and at section level (heading match after
    the same clean-up the indexer applies), overall and per `kind`.
    """
    from kbmcp_adapters.app.golden import load_golden
    from kbmcp_adapters.parsers.headings import clean_heading
    from kbmcp_core.evaluation import Ranked, evaluate

    setup_logging()
    kb = _kb(kb_path, config)
    try:
        queries = load_golden(golden or kb.settings.kb_path / ".kb-mcp-eval.yml")
        modes = ["hybrid", "vector", "lexical"] if mode == "all" else [mode]
        reports = []
        for m in modes:
            def retrieve(q: str, m: str = m) -> list[Ranked]:
                res = kb.search(q, limit=limit, mode=m)
                return [Ranked(h.path, h.heading) for h in res.results]

            reports.append(evaluate(m, queries, retrieve, clean_heading))
    finally:
        kb.close()
    if fmt == "json":
        out = [r.as_dict() for r in reports]
        click.echo(json.dumps(out[0] if len(out) == 1 else {"modes": out}, ensure_ascii=False,
                              indent=2))
        return
    _print_table(reports)
    if show_misses:
        for r in reports:
            if r.misses:
                click.echo(f"\nmisses ({r.mode}): {len(r.misses)}")
                for o in r.misses[:20]:
                    click.echo(f"  {o.query.id}: doc rank {o.doc_rank}, section rank "
                               f"{o.section_rank} — {o.query.query[:70]}")


def _print_table(reports: list) -> None:  # type: ignore[type-arg]
    from kbmcp_core.evaluation import METRICS

    header = f"{'mode':<8} {'level':<8} " + " ".join(f"{m:>9}" for m in METRICS)
    click.echo(f"{reports[0].n} queries")
    click.echo(header)
    for r in reports:
        for level, values in (("document", r.document), ("section", r.section)):
            if values:
                click.echo(f"{r.mode:<8} {level:<8} "
                           + " ".join(f"{values[m]:>9.3f}" for m in METRICS))
