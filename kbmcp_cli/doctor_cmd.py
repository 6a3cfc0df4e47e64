"""``kb-mcp doctor``: a read-only health report of the index, as text or JSON (a plain
folder's, or each collection's under its name when there are several)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbmcp_cli.options import (
    EXIT_CANNOT_RUN,
    collection_option,
    exit_code_of,
    format_option,
    kb_options,
    open_selected,
    setup_logging,
)
from kbmcp_core.doctor import CHECK_BUDGET_S, CHECKS

if TYPE_CHECKING:
    from kbmcp_adapters.app.collections import Collections
    from kbmcp_core.doctor import DoctorReport
    from kbmcp_core.settings import Settings

_CHECK_LINES = "\n".join(f"  {c.id:<24} ({c.severity}) {c.what}" for c in CHECKS)

DOCTOR_HELP = f"""Check the index's health without changing anything.

\b
Checks:
{_CHECK_LINES}

The index database gets SQLite's quick integrity check, stopped after
{CHECK_BUDGET_S:g} s on a very large index ("store check: unfinished").

With several collections, each is checked in turn and reported under its name
(--collection narrows them); the exit status is the highest of theirs.

Exit status: 0 healthy, 1 findings (or a database server that cannot be reached), 2
could not run as asked (no index, bad config).
"""


@click.command(help=DOCTOR_HELP)
@kb_options
@format_option
@collection_option
def doctor(kb_path: Path | None, config: Path | None, fmt: str,
           collection_names: tuple[str, ...]) -> None:
    from kbmcp_core.errors import KbError, StoreUnreachable

    setup_logging()
    try:
        collections, chosen = open_selected(kb_path, config, collection_names)
    except KbError as exc:
        click.echo(f"kb-mcp: doctor could not run: {exc}", err=True)
        sys.exit(1 if isinstance(exc, StoreUnreachable) else EXIT_CANNOT_RUN)
    try:
        code = doctor_collections(collections, chosen, fmt)
    except KbError as exc:  # a collection of one: a plain folder's doctor could not run
        click.echo(f"kb-mcp: doctor could not run: {exc}", err=True)
        sys.exit(1 if isinstance(exc, StoreUnreachable) else EXIT_CANNOT_RUN)
    finally:
        collections.close()
    sys.exit(code)


def where_of(settings: Settings) -> dict[str, str]:
    """The config in use and the store, as doctor names them (no password)."""
    from kbmcp_adapters.app.bootstrap import store_location

    return {"config": settings.config_origin.describe(), "store": store_location(settings)}


def _echo_one(report: DoctorReport, where: dict[str, str], fmt: str) -> None:
    """The doctor report of a collection of one: a plain folder's."""
    if fmt == "json":
        click.echo(json.dumps({**report.as_dict(), **where}, ensure_ascii=False, indent=2))
        return
    click.echo(f"config: {where['config']}\nstore: {where['store']}")
    echo_report(report)


def echo_report(report: DoctorReport, indent: str = "") -> None:
    """A doctor report's lines after ``config`` and ``store``, each after ``indent``."""

    def echo(line: str) -> None:
        click.echo(f"{indent}{line}")

    echo(f"documents: {report.documents}  chunks: {report.chunks}  "
         f"store check: {report.store_check}")
    if report.store_check == "unfinished":
        echo(f"    the integrity check stopped after {CHECK_BUDGET_S:g} s; the part "
             "it read is sound")
    if report.healthy:
        echo("healthy: no findings")
    for f in report.findings:
        echo(f"[{f.severity}] {f.check}: {f.summary}")
        for s in f.samples:
            echo(f"    - {s}")
        echo(f"    remedy: {f.remedy}")


def doctor_collections(collections: Collections, names: Sequence[str], fmt: str) -> int:
    """Check each collection in ``names`` and print the reports; the exit code is the
    highest of theirs: 0 healthy, 1 findings or an unreachable store, 2 one could not be
    checked as asked (no index yet, bad config). A collection of one prints a plain
    folder's report (its ``KbError`` is raised: the command's); several, the config once,
    then each under its name."""
    from kbmcp_core.errors import KbError

    several = collections.several
    reports: list[dict[str, Any]] = []
    codes = {0}
    if fmt == "text" and several:
        click.echo(f"config: {collections.top.config_origin.describe()}")
    for name in names:
        spec, settings = collections.spec(name), collections.settings(name)
        if not several:
            report = collections.kb(name).doctor()
            _echo_one(report, where_of(settings), fmt)
            codes.add(0 if report.healthy else 1)
            continue
        block: dict[str, Any] = {"name": name, "path": str(spec.path),
                                 "store": where_of(settings)["store"]}
        if fmt == "text":
            click.echo(f"collection: {name}\n  kb_path: {spec.path}\n  store: {block['store']}")
        try:
            report = collections.kb(name).doctor()
        except KbError as exc:
            codes.add(exit_code_of(exc))
            block["error"] = f"doctor could not run: {exc}"
            reports.append(block)
            if fmt == "text":
                click.echo(f"  {block['error']}")
            continue
        codes.add(0 if report.healthy else 1)
        reports.append({**block, **report.as_dict()})
        if fmt == "text":
            echo_report(report, indent="  ")
    if fmt == "json" and several:
        click.echo(json.dumps({"config": collections.top.config_origin.describe(),
                               "collections": reports}, ensure_ascii=False, indent=2))
    return max(codes)
