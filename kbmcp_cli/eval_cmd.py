"""``kb-mcp eval``: measure retrieval on golden queries (recall, MRR, nDCG)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import format_option, kb_options, open_kb, setup_logging

if TYPE_CHECKING:
    from kbmcp_core.evaluation import EvalReport


@click.command(name="eval")
@kb_options
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Golden queries YAML (default: <kb_path>/.kb-mcp-eval.yml).")
@format_option
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
    from kbmcp_adapters.app.golden import evaluate_modes, load_golden
    from kbmcp_core.evaluation import Ranked

    setup_logging()
    kb = open_kb(kb_path, config)
    try:
        queries = load_golden(golden or kb.settings.kb_path / ".kb-mcp-eval.yml")

        def retrieve(query: str, m: str) -> list[Ranked]:
            res = kb.search(query, limit=limit, mode=m)
            return [Ranked(h.path, h.heading) for h in res.results]

        reports = evaluate_modes(queries, ["hybrid", "vector", "lexical"] if mode == "all"
                                 else [mode], retrieve)
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


def _print_table(reports: list[EvalReport]) -> None:
    from kbmcp_core.evaluation import METRICS

    header = f"{'mode':<8} {'level':<8} " + " ".join(f"{m:>9}" for m in METRICS)
    click.echo(f"{reports[0].n} queries")
    click.echo(header)
    for r in reports:
        for level, values in (("document", r.document), ("section", r.section)):
            if values:
                click.echo(f"{r.mode:<8} {level:<8} "
                           + " ".join(f"{values[m]:>9.3f}" for m in METRICS))
