"""``kb-mcp service install|status|remove``: systemd units that keep one knowledge base
served (``serve --transport http`` on a socket systemd holds) or in sync (``watch``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import kb_options

if TYPE_CHECKING:
    from kbmcp_adapters.service.systemd import Installed
    from kbmcp_adapters.service.units import ServicePlan
    from kbmcp_core.settings import Settings

ACTIONS = ("install", "status", "remove")


@click.command(short_help="Run this knowledge base as a systemd service.")
@kb_options
@click.argument("action", type=click.Choice(ACTIONS))
@click.option("--user", "user_manager", is_flag=True,
              help="Your own systemd manager: units in $XDG_CONFIG_HOME/systemd/user "
              "(~/.config by default), run as you. Without it, a system service in "
              "/etc/systemd/system (root only), run as the knowledge base folder's owner.")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), default=None,
              metavar="PORT",
              help="install: serve MCP over HTTP on PORT: a .socket unit listens and "
              "systemd starts `kb-mcp serve --transport http` on the first connection. "
              "Without it the service is `kb-mcp watch` (the index kept up to date).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="install: the address the socket listens on, with --http. Anything but "
              "loopback adds --allow-remote and needs a token (`kb-mcp token create`) first.")
@click.option("--name", default=None,
              help="The units' name (default: kb-mcp- and the folder's name).")
@click.option("--now", is_flag=True,
              help="install: also `systemctl daemon-reload` and `enable --now` the units "
              "(when a systemd manager answers here).")
def service(kb_path: Path | None, config: Path | None, action: str, user_manager: bool,
            http_port: int | None, host: str, name: str | None, now: bool) -> None:
    """Set this knowledge base up as a systemd service, show it, or take it down.

    \b
    install  write NAME.service (and NAME.socket with --http) for this knowledge base
    status   the units, the folder they serve, and what systemd says of them
    remove   stop and disable them (where systemd runs), and delete the files

    The service runs this kb-mcp (its absolute path) with the absolute knowledge base path,
    sandboxed: the disk is read-only to it but for the index folder and the model cache.
    """
    from kbmcp_adapters.app.bootstrap import settings_for
    from kbmcp_adapters.service import systemd
    from kbmcp_adapters.service.units import unit_name

    settings = settings_for(kb_path, config)
    kb = settings.kb_path.resolve()
    unit = name or unit_name(kb)
    folder = systemd.unit_dir(user=user_manager, environ=os.environ)
    found = systemd.installed(folder, [f"{unit}.service", f"{unit}.socket"])
    if action != "status" and not user_manager:
        systemd.require_root(os.geteuid())
    if action == "install":
        systemd.check_ours(found, kb)
        plan = _plan(settings, unit, config, http_port, host, user_manager)
        _install(plan, folder, now)
    elif action == "status":
        _status(found, kb, unit, folder, user_manager)
    else:
        systemd.check_ours(found, kb)
        _remove(found, unit, folder, user_manager)


def _plan(settings: Settings, unit: str, config: Path | None, http_port: int | None,
          host: str, user_manager: bool) -> ServicePlan:
    from kbmcp_adapters.app import trust
    from kbmcp_adapters.mcp_server.http import is_loopback
    from kbmcp_adapters.service.plan import build_plan
    from kbmcp_adapters.service.units import Listen
    from kbmcp_cli.init_cmd import server_command
    from kbmcp_cli.serve_cmd import token_verifier
    from kbmcp_core.errors import ConfigError

    if http_port is not None and not is_loopback(host) \
            and not token_verifier(settings, None, None).has_tokens():
        raise ConfigError(f"refusing to serve {host} without a token: anyone who can reach "
                          "the port could read every document; create one first with "
                          "`kb-mcp token create`")
    named = config if config is not None else os.environ.get(trust.CONFIG_ENV) or None
    return build_plan(settings, name=unit, program=server_command(),
                      config=Path(named).expanduser() if named else None,
                      listen=None if http_port is None else Listen(host, http_port),
                      user_manager=user_manager, environ=os.environ,
                      allow_remote=not is_loopback(host))


def _systemctl_words(user_manager: bool) -> str:
    return "systemctl --user" if user_manager else "systemctl"


def _install(plan: ServicePlan, folder: Path, now: bool) -> None:
    from kbmcp_adapters.service import systemd
    from kbmcp_adapters.service.plan import prepare_folders

    prepare_folders(plan)
    written = systemd.write_units(plan, folder)
    click.echo("kb-mcp: wrote " + " and ".join(str(p) for p in written), err=True)
    if plan.listen is not None:
        click.echo(f"kb-mcp: systemd listens on http://{plan.listen.address}/mcp and starts "
                   "the server on the first connection", err=True)
    start = plan.socket_file if plan.listen is not None else plan.service_file
    ctl = _systemctl_words(plan.user_manager)
    if not now:
        click.echo(f"Start it: {ctl} daemon-reload && {ctl} enable --now {start}")
        return
    if not systemd.manager_running(user=plan.user_manager, environ=os.environ):
        raise systemd.ServiceError(f"no systemd manager answers here, so nothing was started; "
                                   f"where one runs: {ctl} enable --now {start}")
    systemd.systemctl(["daemon-reload"], user=plan.user_manager)
    systemd.systemctl(["enable", "--now", start], user=plan.user_manager)
    click.echo(f"kb-mcp: enabled and started {start}", err=True)


def _status(found: list[Installed], kb: Path, unit: str, folder: Path,
            user_manager: bool) -> None:
    from kbmcp_adapters.service import systemd

    if not found:
        raise systemd.ServiceError(f"no service {unit} in {folder}: `kb-mcp service install"
                                   f"{' --user' if user_manager else ''}` writes one")
    for f in found:
        whose = f"for {f.kb_path}" if f.kb_path is not None else "not written by kb-mcp"
        other = "" if f.kb_path in (kb, None) else " (another knowledge base)"
        click.echo(f"{f.path.name}: {f.path} {whose}{other}")
        listen = _listen_line(f.path)
        if listen:
            click.echo(f"  listens on http://{listen}/mcp")
    if not systemd.manager_running(user=user_manager, environ=os.environ):
        click.echo("systemd: no manager answers here; the units take effect where one runs")
        return
    for f in found:
        enabled = systemd.systemctl(["is-enabled", f.path.name], user=user_manager)
        active = systemd.systemctl(["is-active", f.path.name], user=user_manager)
        click.echo(f"systemd: {f.path.name} {enabled or 'unknown'}, {active or 'unknown'}")


def _listen_line(path: Path) -> str | None:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("ListenStream="):
            return line.partition("=")[2].strip()
    return None


def _remove(found: list[Installed], unit: str, folder: Path,
            user_manager: bool) -> None:
    from kbmcp_adapters.service import systemd

    if not found:
        click.echo(f"kb-mcp: no service {unit} in {folder}; nothing removed", err=True)
        return
    running = systemd.manager_running(user=user_manager, environ=os.environ)
    if running:
        systemd.systemctl(["disable", "--now", *(f.path.name for f in found)],
                          user=user_manager)
    systemd.remove_units(found)
    if running:
        systemd.systemctl(["daemon-reload"], user=user_manager)
    click.echo("kb-mcp: removed " + " and ".join(str(f.path) for f in found), err=True)
