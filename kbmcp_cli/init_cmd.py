"""``kb-mcp init``: a commented kb-mcp.toml in the knowledge base, the index, the client lines.

The file written sets only keys a knowledge base's own file may set without ``kb-mcp trust``
(decision 0025): it loads as it is, and the keys that need trust are shown in comments
that say so. An existing ``kb-mcp.toml`` is never replaced. The index is built by the
``index`` command itself (``ctx.invoke``), so its progress and summary are the same. The
client lines name the ``kb-mcp`` that is running, by its absolute path, because clients
start servers from a folder and a ``PATH`` of their own.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import click

from kbmcp_cli.index_cmd import index
from kbmcp_cli.options import kb_options
from kbmcp_core.settings import CONFIG_FILE_NAME, INDEX_DIR_NAME, INIT_HEADER
from kbmcp_core.settings_docs import template_lines, toml_value
from kbmcp_core.settings_keys import SCHEMA

#: The names the running program may have when it is the console script.
_SCRIPT_NAMES = ("kb-mcp", "kb-mcp.exe")


def server_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The absolute command that starts this same kb-mcp: the console script when that is
    what runs (``sys.argv[0]``, found on ``PATH`` if bare), else this interpreter with
    ``-m kbmcp_cli`` (``python -m kbmcp_cli``, or kb-mcp run from a library). Symbolic
    links are kept: pipx's ``~/.local/bin/kb-mcp`` outlives a reinstall."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if Path(argv0).name in _SCRIPT_NAMES:
        found = argv0 if os.sep in argv0 else _which(argv0)
        if found and os.path.isfile(found):
            return [os.path.abspath(found)]
    return [os.path.abspath(executable), "-m", "kbmcp_cli"]


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def client_lines(command: list[str], kb: Path, name: str, extra: list[str] | None = None
                 ) -> str:
    """What a user pastes: the Claude Code one-liner and the JSON block of Claude Desktop
    and Cursor, both starting ``command serve --kb-path kb`` (then ``extra``)."""
    args = [*command[1:], "serve", "--kb-path", str(kb), *(extra or [])]
    one_liner = shlex.join(["claude", "mcp", "add", name, "--", command[0], *args])
    block = json.dumps({"mcpServers": {name: {"command": command[0], "args": args}}},
                       indent=2, ensure_ascii=False)
    return (f"Claude Code:\n\n  {one_liner}\n\n"
            "Claude Desktop (claude_desktop_config.json) and Cursor (.cursor/mcp.json):\n\n"
            f"{block}\n")


def _commented(section: str) -> str:
    """``# key = default`` lines of ``section``'s keys the schema gives a template comment
    (an example where there is no default), their comments lined up."""
    cells = [(f"# {name} = {value}", comment) for name, value, comment in template_lines(section)]
    width = max(len(left) for left, _ in cells if len(left) <= 48) + 2
    return "\n".join(f"{left.ljust(width - 2)}  # {comment}" for left, comment in cells)


def _wrapped(words: list[str], width: int = 88) -> str:
    """``words`` joined by commas as ``#`` comment lines of at most ``width`` characters."""
    import textwrap

    lines = textwrap.wrap(", ".join(w.replace(" = ", "\0=\0") for w in words), width,
                          initial_indent="#   ", subsequent_indent="#   ",
                          break_on_hyphens=False)
    return "\n".join(lines).replace("\0", " ")


def config_text(formats: list[str] | None = None) -> str:
    """The commented kb-mcp.toml: the formats line active (``formats``, default the
    default list), the rest as defaults in comments. Every key, value and comment comes
    from the settings schema (``settings_keys``), so the comments cannot drift."""
    enabled = SCHEMA.default("enabled_formats") if formats is None else formats
    return f"""\
{INIT_HEADER}
# Every key is optional; a commented line shows its default (or an example).
# Unknown keys are errors.
# Every key: `kb-mcp docs configuration`. Check what is in effect with `kb-mcp status`.
#
# This file sits in the knowledge base, so kb-mcp reads it without asking, and it is not
# trusted: it may change what is indexed and how search answers, not where data goes.
# Keys that say where data goes or comes from, or that loosen a parser or server limit, are
# refused until you run `kb-mcp trust` on this file, and again after each edit:
{_wrapped(SCHEMA.gate_names())}.
# For example (team mode, `kb-mcp docs team-mode`):
# database_url = "postgresql+psycopg://kb@db.internal:5432/kb"   # needs `kb-mcp trust`
# index_dir = "{INDEX_DIR_NAME}"          # inside this folder needs no trust

[parsers]
# The formats to index and serve. kb-mcp alone indexes Markdown only; `kb-mcp init` lists
# the formats it found here. Others: "txt" (also README, NEWS, ...), "pdf", "html", "docx",
# "pptx", "xlsx", "epub", "rst", "adoc", "ipynb", "code" (source files; needs
# pip install 'kb-mcp[code]'), "ocr" (images, and PDF pages without text; needs
# pip install 'kb-mcp[ocr]') (`kb-mcp docs configuration`). `kb-mcp index` counts the files it
# skipped as "format not enabled".
enabled = {toml_value(enabled)}
{_commented("parsers")}

[index]
# A .kb-mcpignore file here (.gitignore syntax) leaves out paths too.
{_commented("index")}

[search]
{_commented("search")}

[embedding]
{_commented("embedding")}

[watch]
{_commented("watch")}

[fields]
# Front-matter keys to filter searches on (`kb-mcp search --field status=draft`, the
# search tool's `fields`), each with its type: "string", "number", "date" or "list".
# Only these keys are indexed; adding one later needs no re-embedding
# (`kb-mcp docs configuration`).
# status = "string"
# year = "number"
"""


def write_config(kb: Path, formats: list[str] | None = None) -> Path | None:
    """Write ``kb/kb-mcp.toml``; None when one is there already (it is never replaced)."""
    path = kb / CONFIG_FILE_NAME
    text = config_text(formats)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        return None
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from None
    return path


@click.command(short_help="Set up a folder; print the client lines.")
@kb_options
@click.option("--name", default="kb", show_default=True,
              help="The server's name in the client lines printed at the end.")
@click.pass_context
def init(ctx: click.Context, kb_path: Path | None, config: Path | None, name: str) -> None:
    """Set up a folder (default: this one) as a knowledge base: write a commented
    kb-mcp.toml in it (an existing one is kept), build the index, and print the lines that
    connect Claude Code, Claude Desktop or Cursor to it, with this kb-mcp's absolute path.
    With --config (or $KB_MCP_CONFIG), that file builds the index and the lines name it."""
    from kbmcp_adapters.app import trust
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.folder_formats import formats_in, missing_extras

    kb = (Path.cwd() if kb_path is None else kb_path).expanduser()
    # the configuration the index will be built with is checked before anything is
    # written: a bad --config or folder leaves the folder as it was
    build_settings(config, kb_path=kb)
    kb = kb.resolve()
    named = config if config is not None else os.environ.get(trust.CONFIG_ENV) or None
    found = formats_in(kb)
    lacking = missing_extras(found)
    written = write_config(kb, [fmt for fmt in found if fmt not in lacking])
    if written is None:
        click.echo(f"kb-mcp: kept the existing {kb / CONFIG_FILE_NAME} (init never "
                   "replaces it; delete it to get a fresh commented one)", err=True)
    else:
        click.echo(f"kb-mcp: wrote {written} (commented; every key: `kb-mcp docs "
                   "configuration`)",
                   err=True)
        click.echo("kb-mcp: formats found and enabled: "
                   + ", ".join(f"{name} ({count})" for name, count in found.items()
                               if name not in lacking), err=True)
        for fmt, hint in lacking.items():
            click.echo(f"kb-mcp: {found[fmt]} {fmt} files found, not enabled: the {fmt} "
                       f"format needs an extra ({hint}); then add it to [parsers].enabled",
                       err=True)
        mine = trust.user_config_dir() / trust.USER_CONFIG_NAME
        if mine.is_file() and named is None:
            click.echo(f"kb-mcp: note: for this knowledge base it is laid over your user "
                       f"config {mine}: the keys it sets win, the rest of yours still apply",
                       err=True)
    ctx.invoke(index, kb_path=kb, config=config)
    command = server_command()
    extra = ["--config", os.path.abspath(Path(named).expanduser())] if named else []
    click.echo(f"\nConnect a client: the lines start this kb-mcp, {shlex.join(command)}.\n")
    click.echo(client_lines(command, kb, name, extra))
