"""``kb-mcp tune``: a small grid over the fusion parameters, cross-validated on golden queries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import (
    format_option,
    kb_options,
    one_collection_option,
    opened_one,
    setup_logging,
)

if TYPE_CHECKING:
    from kbmcp_core.fusion import Fusion
    from kbmcp_core.tuning import TuneResult

@click.command(name="tune")
@kb_options
@one_collection_option
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Golden queries YAML (default: <kb_path>/.kb-mcp-eval.yml).")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Cross-validation folds (at most one per query).")
@click.option("--metric", type=click.Choice(["recall@1", "recall@5", "recall@10", "mrr@10",
                                             "ndcg@10"]),
              default="ndcg@10", show_default=True, help="The metric to maximise.")
@click.option("--level", type=click.Choice(["document", "section"]), default="document",
              show_default=True,
              help="Score documents, or sections (queries without a heading score documents).")
@format_option
def tune(kb_path: Path | None, config: Path | None, collection_name: str | None,
         golden: Path | None, folds: int,
         metric: str, level: str, fmt: str) -> None:
    """Try a small grid of fusion parameters on golden queries and print the best.

    Each setting is scored on every query (both search legs run once per query); k-fold
    cross-validation then picks the best setting on the other folds and scores it on the
    held-out one, so the held-out score says what choosing by this golden file is worth.
    Nothing is written: paste the printed `[search]` lines into kb-mcp.toml if they help.
    """
    from kbmcp_adapters.evaluation.golden import load_golden
    from kbmcp_adapters.evaluation.tuning import tune_fusion

    setup_logging()
    with opened_one(kb_path, config, collection_name) as kb:
        queries = load_golden((golden or kb.settings.kb_path / ".kb-mcp-eval.yml").resolve())
        result = tune_fusion(kb, queries, folds=folds, metric=metric, level=level)
    if fmt == "json":
        click.echo(json.dumps(_as_json(result, metric, level, len(queries)), indent=2))
    else:
        _print(result, metric, level, len(queries))


def _as_json(result: TuneResult[Fusion], metric: str, level: str, n: int) -> dict[str, object]:
    def setting(f: Fusion) -> dict[str, object]:
        return {"fusion": f.method, "lexical_weight": f.lexical_weight,
                "lexical_weight_min": f.lexical_weight_min,
                "vector_scale": f.vector_scale, "rrf_k": f.rrf_k}

    return {
        "metric": metric, "level": level, "queries": n,
        "current": {"setting": setting(result.current.setting),
                    "score": round(result.current.mean, 4)},
        "best": {"setting": setting(result.best.setting), "score": round(result.best.mean, 4),
                 "toml": ["[search]", *result.best.setting.as_toml()]},
        "held_out": round(result.held_out, 4),
        "chosen_per_fold": [setting(f) for f in result.chosen_per_fold],
        "candidates": [{"setting": setting(c.setting), "score": round(c.mean, 4)}
                       for c in result.candidates],
    }


def _print(result: TuneResult[Fusion], metric: str, level: str, n: int) -> None:
    cur, best = result.current, result.best
    click.echo(f"{n} queries, {level} {metric}, {len(result.chosen_per_fold)}-fold "
               "cross-validation")
    for c in sorted(result.candidates, key=lambda c: -c.mean)[:10]:
        mark = " (current)" if c is cur else ""
        click.echo(f"  {c.mean:.3f}  {c.setting.label()}{mark}")
    click.echo(f"\ncurrent: {cur.mean:.3f}  {cur.setting.label()}")
    click.echo(f"best:    {best.mean:.3f}  {best.setting.label()}")
    click.echo(f"held-out score of choosing by this file: {result.held_out:.3f} "
               f"(current {cur.mean:.3f})")
    if best.setting == cur.setting:
        click.echo("the current setting is already the best of the grid; nothing to change")
        return
    if result.held_out <= cur.mean:
        click.echo("the gain does not survive cross-validation: keep the current setting")
        return
    click.echo("\nto use it, put these lines in kb-mcp.toml (nothing was written):")
    click.echo("[search]")
    for line in best.setting.as_toml():
        click.echo(line)
