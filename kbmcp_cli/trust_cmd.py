"""``kb-mcp trust``: let a config file found by looking say where data goes (decision 0021)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_core.settings import CONFIG_FILE_NAME
from kbmcp_core.settings_docs import gated_list

if TYPE_CHECKING:
    from kbmcp_adapters.app.trust import Trusted


#: What ``--help`` says; the keys that need trust come from the settings schema.
HELP = f"""Trust a config file found in a knowledge base or the working folder.

Such a file (not named by --config or KB_MCP_CONFIG, not your user config) may not say
where data goes or comes from, nor loosen a protection, until you trust it: it may not
set {gated_list()}. PATH is the file, or a folder holding kb-mcp.toml (default:
./kb-mcp.toml); a symbolic link is refused. Trust is recorded in
$XDG_CONFIG_HOME/kb-mcp/trusted.json under the file's path, with its sha256 and its owner:
once the file changes, moves or changes hands, it must be trusted again.
"""


@click.command(help=HELP)
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--list", "show", is_flag=True,
              help="List the trusted config files: path, sha256 prefix, and whether the file "
              "is unchanged, changed or gone.")
@click.option("--revoke", is_flag=True, help="Stop trusting PATH.")
def trust(path: Path | None, show: bool, revoke: bool) -> None:
    from kbmcp_adapters.app import trust as trust_list

    if show:
        if path is not None or revoke:
            raise click.UsageError("--list takes no PATH and no --revoke")
        _show(trust_list.entries())
        return
    target = _config_file(path)
    if revoke:
        if not trust_list.revoke(target):
            click.echo(f"kb-mcp: error: {trust_list.key(target)} is not trusted (see "
                       "`kb-mcp trust --list`)", err=True)
            sys.exit(1)
        click.echo(f"no longer trusted: {trust_list.key(target)}")
        return
    from kbmcp_adapters.app.config import gated_keys, parse_config
    from kbmcp_core.errors import ConfigError

    if target.is_symlink():  # it would not be read where it is found (decision 0047)
        raise ConfigError(f"{target} is a symbolic link: kb-mcp never reads a config file "
                          "it finds through a link, so trusting it would do nothing; trust "
                          f"the file itself ({trust_list.key(target.resolve())}) or name "
                          "the link with --config")
    read = trust_list.read_file(target, "config", follow=False)
    values = parse_config(target, read.data)  # a file that is not a valid config is not trusted
    digest = hashlib.sha256(read.data).hexdigest()
    trust_list.trust(target, read, digest)
    sets = gated_keys(values, Path(values.get("kb_path", target.parent)).resolve(),
                      target.parent)
    says = f"; it sets {', '.join(sets)}" if sets else ""
    click.echo(f"trusted: {trust_list.key(target)} (sha256 {digest[:12]}…, owner uid "
               f"{read.owner}){says}. Trust it again after any change.")


def _config_file(path: Path | None) -> Path:
    """PATH, PATH/kb-mcp.toml for a folder, ./kb-mcp.toml without one; made absolute."""
    target = path if path is not None else Path(CONFIG_FILE_NAME)
    if target.is_dir():
        target = target / CONFIG_FILE_NAME
    return target.absolute()


def _show(entries: dict[str, Trusted]) -> None:
    from kbmcp_adapters.app import trust as trust_list
    from kbmcp_core.errors import ConfigError

    if not entries:
        click.echo("no config file is trusted")
        return
    for name, entry in sorted(entries.items()):
        try:
            read = trust_list.read_file(Path(name), "config", follow=False)
            digest = hashlib.sha256(read.data).hexdigest()
            why = trust_list.why_untrusted(Path(name), read, digest)
            state = "unchanged" if why is None else f"not trusted until trusted again: it {why}"
        except ConfigError:
            state = "gone, unreadable or a link"
        click.echo(f"{name}\tsha256 {entry.sha256[:12]}…\t{state}")
