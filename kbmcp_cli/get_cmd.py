"""``kb-mcp get``: one document, or some lines, one section or one page of it, as the
``get_document`` tool reads it (the same guard chain, the same ranges)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.options import format_option, kb_options, setup_logging
from kbmcp_core.ranges import MAX_LINES

_LINES = re.compile(r"([1-9][0-9]*)(?:-([1-9][0-9]*))?")


def parse_lines(_ctx: click.Context, _param: click.Parameter, value: str | None
                ) -> tuple[int, int] | None:
    """``A-B`` (lines A to B) or ``A`` (line A alone) as (start_line, max_lines)."""
    if value is None:
        return None
    match = _LINES.fullmatch(value.strip())
    if match is None:
        raise click.BadParameter(f"{value!r} is not a line range: give A-B, e.g. 40-58, "
                                 "or one line number")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if end < start:
        raise click.BadParameter(f"{value!r} ends before it starts")
    if end - start + 1 > MAX_LINES:
        raise click.BadParameter(f"{value!r} spans more than {MAX_LINES} lines")
    return start, end - start + 1


@click.command()
@kb_options
@format_option
@click.argument("path")
@click.option("--lines", "lines", default=None, metavar="A-B", callback=parse_lines,
              help="Only lines A to B (1-based, both included), e.g. 40-58 as a search hit "
                   "cites them; a single number reads one line.")
@click.option("--section", default=None, metavar="HEADING",
              help="Only the section under this heading, with its subsections, as the "
                   "file's headings mark it; name a heading that occurs twice by its "
                   "trail, e.g. 'Guide > Setup'.")
@click.option("--page", type=click.IntRange(1), default=None,
              help="Only this page of a PDF.")
@click.option("--max-chars", type=click.IntRange(1), default=None,
              help="Stop at the last whole line within this many characters.")
@click.option("--outline", is_flag=True,
              help="Show the document's headings (PDF: pages) with their line ranges "
                   "instead of its text (with --format json: beside it).")
@click.option("--collection", default=None, metavar="NAME",
              help="The collection of [[collections]] PATH is in (default: the one "
                   "default collection, if there is only one).")
def get(kb_path: Path | None, config: Path | None, fmt: str, path: str,
        lines: tuple[int, int] | None,
        section: str | None, page: int | None, max_chars: int | None, outline: bool,
        collection: str | None) -> None:
    """Print one document of the knowledge base, by its path relative to it, or part of
    it. A document over 1 MiB is read in parts: with no --lines, --section or --page it
    prints its first part, and on stderr how many lines it has, its outline and the
    --lines of the next part; each part says where the next one starts (on stderr with
    text output)."""
    chosen = [n for n, v in (("--lines", lines), ("--section", section), ("--page", page))
              if v is not None]
    if len(chosen) > 1:
        raise click.UsageError(f"give at most one of --lines, --section and --page, not "
                               f"{' and '.join(chosen)}")
    span = lines  # (start_line, max_lines) from parse_lines
    from kbmcp_adapters.app.bootstrap import settings_for
    from kbmcp_cli.collections_cmd import one_collection

    setup_logging()
    settings = settings_for(kb_path, config)
    # a plain folder is a collection of one: read through the collections either way
    collections, kb = one_collection(settings, collection)
    try:  # no part named: a document past the read cap prints its first part, as a
        # resource read of it does (decision 0033)
        view = kb.get_document(path, start_line=span[0] if span else None,
                               max_lines=span[1] if span else None, section=section,
                               page=page, max_chars=max_chars, outline=outline or None,
                               whole_or_first=not chosen or None)
    finally:
        collections.close()
    data = view.as_dict()
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    if outline:
        _print_outline(data)
        return
    sys.stdout.write(str(data["content"]))
    sys.stdout.flush()
    if data.get("is_range"):
        if data.get("outline") is not None or data.get("outline_note") is not None:
            click.echo("kb-mcp: outline:", err=True)
            _print_outline(data, err=True)
        click.echo(_where(data), err=True)


def _print_outline(data: dict[str, Any], *, err: bool = False) -> None:
    entries = data.get("outline")
    if entries is None:
        click.echo(f"kb-mcp: no outline: {data.get('outline_note', 'none available')}",
                   err=True)
        return
    for e in entries:
        indent = "  " * (int(e["level"]) - 1)
        click.echo(f"{indent}{e['heading']}  (lines {e['start_line']}-{e['end_line']})",
                   err=err)
    if data.get("outline_note"):
        click.echo(f"kb-mcp: {data['outline_note']}", err=True)


def _where(data: dict[str, Any]) -> str:
    """Where this part sits, and the --lines of the next one: a part as long as this
    one (as the next URI of a resource read names it), at least 1,000 lines."""
    total = data.get("total_lines")
    of = f" of {total}" if total is not None else ""
    nxt = data.get("next_start_line")
    span = max(int(data["end_line"]) - int(data["start_line"]) + 1, 1000)
    last = min(int(nxt) + span - 1, int(total)) if nxt and total else (
        int(nxt) + span - 1 if nxt else 0)
    then = f"; next: --lines {nxt}-{last}" if nxt else "; that is the end"
    return f"kb-mcp: lines {data['start_line']}-{data['end_line']}{of}{then}"
