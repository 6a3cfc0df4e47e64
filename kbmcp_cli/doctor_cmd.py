"""``kb-mcp doctor``: a read-only health report of the index, as text or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kbmcp_cli.options import EXIT_CANNOT_RUN, format_option, kb_options, open_kb, setup_logging
from kbmcp_core.doctor import CHECK_BUDGET_S, CHECKS

_CHECK_LINES = "\n".join(f"  {c.id:<24} ({c.severity}) {c.what}" for c in CHECKS)

DOCTOR_HELP = f"""Check the index's health without changing anything.

\b
Checks:
{_CHECK_LINES}

The index database gets SQLite's quick integrity check, stopped after
{CHECK_BUDGET_S:g} s on a very large index ("store check: unfinished").

Exit status: 0 healthy, 1 findings (or a database server that cannot be reached), 2
could not run as asked (no index, bad config).
"""


@click.command(help=DOCTOR_HELP)
@kb_options
@format_option
def doctor(kb_path: Path | None, config: Path | None, fmt: str) -> None:
    from kbmcp_core.errors import KbError, StoreUnreachable

    setup_logging()
    try:
        kb = open_kb(kb_path, config)
        try:
            report = kb.doctor()
        finally:
            kb.close()
    except KbError as exc:
        click.echo(f"kb-mcp: doctor could not run: {exc}", err=True)
        sys.exit(1 if isinstance(exc, StoreUnreachable) else EXIT_CANNOT_RUN)
    from kbmcp_adapters.app.bootstrap import store_location

    where = {"config": kb.settings.config_origin.describe(), "store": store_location(kb.settings)}
    if fmt == "json":
        click.echo(json.dumps({**report.as_dict(), **where}, ensure_ascii=False, indent=2))
    else:
        click.echo(f"config: {where['config']}\nstore: {where['store']}")
        click.echo(f"documents: {report.documents}  chunks: {report.chunks}  "
                   f"store check: {report.store_check}")
        if report.store_check == "unfinished":
            click.echo(f"    the integrity check stopped after {CHECK_BUDGET_S:g} s; the part "
                       "it read is sound")
        if report.healthy:
            click.echo("healthy: no findings")
        for f in report.findings:
            click.echo(f"[{f.severity}] {f.check}: {f.summary}")
            for s in f.samples:
                click.echo(f"    - {s}")
            click.echo(f"    remedy: {f.remedy}")
    sys.exit(0 if report.healthy else 1)
