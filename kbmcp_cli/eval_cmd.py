"""``kb-mcp eval``: measure retrieval on golden queries (recall, MRR, nDCG)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
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
    from kbmcp_adapters.evaluation.saved_runs import SavedRun
    from kbmcp_core.evaluation import EvalReport, MetricDiff


def _run_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from kbmcp_adapters.evaluation.saved_runs import valid_name

    if value is not None and not valid_name(value):
        raise click.BadParameter("use 1-64 characters of A-Z a-z 0-9 . _ -", ctx, param)
    return value


@click.command(name="eval")
@kb_options
@one_collection_option
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Golden queries YAML (default: <kb_path>/.kb-mcp-eval.yml).")
@format_option
@click.option("--mode", type=click.Choice(["hybrid", "vector", "lexical", "all"]),
              default="hybrid", help="Which retriever to measure; all = the three side by side.")
@click.option("--limit", type=click.IntRange(min=1), default=50,
              help="Results fetched per query, at least 1.")
@click.option("--show-misses/--no-misses", default=True, help="List the queries missed.")
@click.option("--rerank/--no-rerank", default=None,
              help="Measure with the cross-encoder reranker on or off (default "
                   "[search].rerank).")
@click.option("--save", "save_name", metavar="NAME", default=None, callback=_run_name,
              help="Store this run's metrics as <index_dir>/evals/NAME.json.")
@click.option("--overwrite", is_flag=True, default=False,
              help="Let --save replace an existing run of that name.")
@click.option("--compare", "compare_name", metavar="NAME", default=None, callback=_run_name,
              help="Diff this run against saved run NAME; exit 1 on a regression.")
@click.option("--threshold", type=click.FloatRange(min=0), default=0.01, show_default=True,
              help="--compare: a metric that dropped by more than this is a regression.")
def eval_cmd(kb_path: Path | None, config: Path | None, collection_name: str | None,
             golden: Path | None, fmt: str,
             mode: str, limit: int, show_misses: bool, rerank: bool | None,
             save_name: str | None,
             overwrite: bool, compare_name: str | None, threshold: float) -> None:
    """Measure retrieval on golden queries: recall@1/5/10, MRR@10, nDCG@10.

    Golden file: `queries: [{id, query, expected: [{path, heading?, lines?}], kind?}]`;
    `expected: []` is a question with no answer: its response should say low_confidence.
    Metrics are given at document level (distinct documents) and at section level (heading
    match after the same clean-up the indexer applies, and/or a hit overlapping `lines:
    [first, last]`), overall and per `kind`. With `lines`, eval also says how often the
    first hit's cited lines (`answer_lines`) hold the answer, beside its whole chunk.

    `--save NAME` keeps the metrics under the index folder; `--compare NAME` diffs against
    them and exits 1 when a metric dropped by more than `--threshold` (compare, then save).
    """
    from kbmcp_adapters.evaluation import saved_runs
    from kbmcp_adapters.evaluation.golden import evaluate_modes, load_golden_with_digest
    from kbmcp_core.evaluation import Ranked, Retrieved, compare_metrics, run_metrics

    setup_logging()
    with opened_one(kb_path, config, collection_name) as kb:
        index_dir = kb.settings.index_dir
        saved = saved_runs.load_run(index_dir, compare_name) if compare_name else None
        if save_name and not overwrite:
            saved_runs.refuse_existing(index_dir, save_name)
        golden_path = (golden or kb.settings.kb_path / ".kb-mcp-eval.yml").resolve()
        queries, golden_sha = load_golden_with_digest(golden_path)
        model = kb.configured_model

        def retrieve(query: str, m: str) -> Retrieved:
            res = kb.search(query, limit=limit, mode=m, rerank=rerank)
            return Retrieved([Ranked(h.path, h.heading, h.start_line, h.end_line,
                                     h.answer_lines) for h in res.results],
                             res.low_confidence)

        reports = evaluate_modes(queries, ["hybrid", "vector", "lexical"] if mode == "all"
                                 else [mode], retrieve)
    now = run_metrics(reports)
    diff: tuple[list[MetricDiff], bool] | None = None
    if saved is not None:
        # Only the modes measured now: a mode not asked for this time is not a regression.
        diff = compare_metrics({m: v for m, v in saved.metrics.items() if m in now}, now,
                               threshold)
        _warn_if_changed(saved, golden_sha, model)
    if fmt == "json":
        out = [r.as_dict() for r in reports]
        body: object = out[0] if len(out) == 1 else {"modes": out}
        if saved is not None and diff is not None:
            body = {"report": body, "compare": _compare_json(saved, diff, threshold)}
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
    else:
        _print_report(reports, show_misses)
        if saved is not None and diff is not None:
            _print_diff(saved.name, saved.date, diff[0], threshold)
    if save_name:
        path = saved_runs.save_run(index_dir, saved_runs.SavedRun(
            name=save_name, date=datetime.now(UTC).isoformat(timespec="seconds"), model=model,
            golden_path=str(golden_path), golden_sha256=golden_sha, queries=len(queries),
            limit=limit, metrics=now), overwrite=overwrite)
        click.echo(f"saved eval run {save_name!r} to {path}", err=True)
    if diff is not None and diff[1]:
        click.get_current_context().exit(1)


def _print_report(reports: list[EvalReport], show_misses: bool) -> None:
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
    if any(r.document for r in reports):  # else only no-answer questions: flags below
        click.echo(header)
    for r in reports:
        for level, values in (("document", r.document), ("section", r.section)):
            if values:
                click.echo(f"{r.mode:<8} {level:<8} "
                           + " ".join(f"{values[m]:>9.3f}" for m in METRICS))
    _print_flagged(reports)
    _print_cited(reports)
    counts = reports[0].kind_counts
    if len(counts) < 2:  # one kind (or none): the table above already is that kind's
        return
    width = max(len("kind"), *(len(k) for k in counts))
    click.echo(f"\nper kind ({', '.join(f'{k}: {n}' for k, n in counts.items())} queries)")
    click.echo(f"{'mode':<8} {'kind':<{width}} {'level':<8} "
               + " ".join(f"{m:>9}" for m in METRICS))
    for r in reports:
        for kind, levels in r.per_kind.items():
            for level, values in levels.items():
                if values:
                    click.echo(f"{r.mode:<8} {kind:<{width}} {level:<8} "
                               + " ".join(f"{values[m]:>9.3f}" for m in METRICS))


def _print_flagged(reports: list[EvalReport]) -> None:
    """The share of responses that said ``low_confidence``: all of the no-answer questions
    (``expected: []``) should, none of the others."""
    rows = [(r.mode, r.flagged) for r in reports if r.flagged is not None]
    if not rows:
        return
    click.echo("\nlow_confidence (flagged / queries)")
    for mode, f in rows:
        parts = []
        if f.no_answer:
            parts.append(f"no answer {f.no_answer_flagged / f.no_answer:.3f} "
                         f"({f.no_answer_flagged}/{f.no_answer})")
        if f.answerable:
            parts.append(f"answerable {f.answerable_flagged / f.answerable:.3f} "
                         f"({f.answerable_flagged}/{f.answerable})")
        click.echo(f"{mode:<8} " + ", ".join(parts))


def _print_cited(reports: list[EvalReport]) -> None:
    """How often the first hit's cited lines (``answer_lines``) hold the answer, beside its
    whole chunk, on the queries whose answer is given by ``lines``."""
    rows = [(r.mode, r.cited) for r in reports if r.cited is not None]
    if not rows:
        return
    click.echo("\ncited lines of the first hit (holding the answer / queries with lines)")
    for mode, c in rows:
        click.echo(f"{mode:<8} answer_lines {c.held / c.queries:.3f} ({c.held}/{c.queries}), "
                   f"median {c.as_dict()['median_span_lines']} lines; whole chunk "
                   f"{c.held_by_chunk / c.queries:.3f} ({c.held_by_chunk}/{c.queries}), "
                   f"median {c.as_dict()['median_chunk_lines']} lines")


def _warn_if_changed(saved: SavedRun, golden_sha: str, model: str) -> None:
    """One line on stderr when the numbers are not measured on the same ground."""
    changed = []
    if saved.golden_sha256 != golden_sha:
        changed.append(f"the golden file differs (saved {saved.golden_path}, "
                       f"sha256 {saved.golden_sha256[:12]} -> {golden_sha[:12]})")
    if saved.model != model:
        changed.append(f"the model differs ({saved.model} -> {model})")
    if changed:
        click.echo(f"kb-mcp: warning: comparing with run {saved.name!r}: "
                   + "; ".join(changed), err=True)


def _compare_json(saved: SavedRun, diff: tuple[list[MetricDiff], bool],
                  threshold: float) -> dict[str, object]:
    rows, regressed = diff
    return {"name": saved.name, "saved_date": saved.date, "threshold": threshold,
            "regressed": regressed, "regressions": sum(1 for r in rows if r.regressed),
            "metrics": [r.as_dict() for r in rows]}


def _print_diff(name: str, date: str, rows: list[MetricDiff], threshold: float) -> None:
    def num(v: float | None, signed: bool = False) -> str:
        return "-" if v is None else (f"{v:+.3f}" if signed else f"{v:.3f}")

    click.echo(f"\ncompared with saved run {name!r} ({date}), threshold {threshold:g}")
    click.echo(f"{'metric':<10} {'mode':<8} {'level':<8} {'kind':<12} "
               f"{'saved':>7} {'now':>7} {'delta':>7}")
    for r in rows:
        flag = "  REGRESSED" if r.regressed else ""
        click.echo(f"{r.metric:<10} {r.mode:<8} {r.level:<8} {r.kind or '(overall)':<12} "
                   f"{num(r.saved):>7} {num(r.now):>7} {num(r.delta, True):>7}{flag}")
    worse = [r for r in rows if r.regressed]
    if worse:
        click.echo(f"{len(worse)} metric(s) dropped by more than {threshold:g}: "
                   + ", ".join(f"{r.metric} ({r.mode}, {r.level}"
                               + (f", {r.kind}" if r.kind else "") + ")" for r in worse[:5])
                   + (" ..." if len(worse) > 5 else ""))
    else:
        click.echo(f"no metric dropped by more than {threshold:g}")
