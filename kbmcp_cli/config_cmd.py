"""``kb-mcp config``: every key's effective value and where it came from (decision 0050)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kbmcp_cli.options import format_option, kb_options


@click.command(short_help="Show every setting in effect and where it came from.")
@kb_options
@format_option
def config(kb_path: Path | None, config: Path | None, fmt: str) -> None:
    """Show the value of every config key in effect for this knowledge base, and where it
    came from: the default, your user config FILE, a named config FILE (--config or
    KB_MCP_CONFIG), the found config FILE of the knowledge base, or a flag (--kb-path).
    Secrets are never shown: a database password is masked, storage options show their
    names only. Nothing is opened but the config files."""
    from kbmcp_adapters.app.config import resolve_settings
    from kbmcp_adapters.app.config_report import effective

    resolved = resolve_settings(config, kb_path=kb_path)
    rows = effective(resolved)
    if fmt == "json":
        click.echo(json.dumps({"config": resolved.settings.config_origin.describe(),
                               "keys": [{"key": k, "value": v, "from": s} for k, v, s in rows]},
                              indent=2, ensure_ascii=False))
        return
    click.echo(f"config: {resolved.settings.config_origin.describe()}")
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        click.echo(f"{key.ljust(width)}  {_text(value)}  ({source})")


def _text(value: Any) -> str:
    """A value as a TOML file would write it (``unset`` for none)."""
    from kbmcp_core.settings_docs import toml_value

    return "unset" if value is None else toml_value(value)
