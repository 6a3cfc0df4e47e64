"""``kb-mcp token``: create, list and revoke the bearer tokens of the HTTP server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import kb_options
from kbmcp_core.errors import ConfigError

if TYPE_CHECKING:
    from kbmcp_core.settings import Settings

ACTIONS = ("create", "list", "revoke", "hash")


@click.command()
@kb_options
@click.argument("action", type=click.Choice(ACTIONS))
@click.argument("name", required=False)
@click.option(
    "--tokens-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The file of token hashes (default: [server].tokens_file of the config, else "
    "tokens.json in the index folder); the same as `kb-mcp serve --tokens-file`.",
)
def token(
    kb_path: Path | None,
    config: Path | None,
    action: str,
    name: str | None,
    tokens_file: Path | None,
) -> None:
    """Manage the bearer tokens that `kb-mcp serve --transport http` accepts.

    \b
    create [NAME]  make a token, print it once on stdout, store only its hash
    list           the tokens' names, creation times and hash prefixes
    revoke NAME    remove a token: the server refuses it from its next request
    hash           read a token on stdin, print its hash (for KB_MCP_TOKEN_HASHES)
    """
    from kbmcp_adapters.mcp_server import tokens

    if action == "hash":
        secret = sys.stdin.readline().strip()
        if not secret:
            raise click.UsageError("give the token on stdin, e.g. `kb-mcp token hash < file`")
        click.echo(tokens.token_hash(secret))
        return
    from kbmcp_adapters.app.bootstrap import settings_for

    settings: Settings | None = None
    if tokens_file is not None:
        path = tokens_file
        if kb_path is not None or config is not None:
            settings = settings_for(kb_path, config)
    else:
        settings = settings_for(kb_path, config)
        path = _default_file(settings, create=action == "create")
    if action == "create":
        chosen = name or tokens.next_name(tokens.read_tokens(path))
        secret, entry = tokens.add_token(path, chosen)
        click.echo(f"kb-mcp: token {entry.name!r} created; its hash is in {path}. This is the "
                   "only time the token is shown: give it to the client now.", err=True)
        click.echo(secret)
        if settings is not None:
            _remember(settings)
    elif action == "list":
        for entry in tokens.read_tokens(path):
            click.echo(f"{entry.name}\t{entry.created}\t{entry.hash[:len('sha256:') + 12]}…")
    else:
        if not name:
            raise click.UsageError("revoke needs the NAME of the token (see `kb-mcp token list`)")
        tokens.revoke_token(path, name)
        click.echo(f"kb-mcp: token {name!r} revoked; servers refuse it from their next "
                   "request and end its open streams.", err=True)
        if not tokens.read_tokens(path):
            click.echo(f"kb-mcp: warning: that was the last token in {path}. A running "
                       "server that required tokens keeps refusing every request (except "
                       "with a KB_MCP_TOKEN_HASHES token) until it is restarted; a "
                       "knowledge base that has had tokens is not served again without one "
                       "unless `kb-mcp serve --no-auth` says so. Create a new token with "
                       "`kb-mcp token create`.", err=True)


def _remember(settings: Settings) -> None:
    """From now on this knowledge base is not served without a token (decision 0047)."""
    from kbmcp_adapters.mcp_server.had_tokens import remember

    try:
        remember(settings.kb_path)
    except ConfigError as exc:  # the token exists; a server records it when it starts
        click.echo(f"kb-mcp: warning: {exc}", err=True)


def _default_file(settings: Settings, *, create: bool) -> Path:
    """``[server].tokens_file`` when the config sets it, else ``tokens.json`` in the
    knowledge base's index folder (that folder is made when creating a token)."""
    from kbmcp_adapters.mcp_server.tokens import TOKENS_FILE_NAME

    if settings.server_tokens_file is not None:
        return settings.server_tokens_file
    if create:
        try:
            settings.index_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the index folder {settings.index_dir}: "
                              f"{exc.strerror}") from None
    return settings.index_dir / TOKENS_FILE_NAME
