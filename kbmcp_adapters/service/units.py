"""The text of the systemd units ``kb-mcp service install`` writes: pure functions of a
resolved ``ServicePlan`` (decision 0049)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: The first line of every unit kb-mcp writes; the rest of the line is the knowledge base's
#: absolute path, so a later ``install``, ``status`` or ``remove`` knows whose unit it is.
MARKER = "# Written by `kb-mcp service install` for the knowledge base "
_PLAIN = re.compile(r"[\w/.,:@+=-]+")
_HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "PrivateDevices=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "SystemCallArchitectures=native",
    "UMask=0077",
)


@dataclass(frozen=True, slots=True)
class Listen:
    """Where the ``.socket`` unit listens."""

    host: str
    port: int

    @property
    def address(self) -> str:
        host = self.host.strip("[]")
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ServicePlan:
    """Everything a unit says, resolved: no optionals but ``listen`` (None: no HTTP, the
    service is ``kb-mcp watch``) and ``run_as`` (None: the manager's own user)."""

    name: str
    kb_path: Path
    #: the command that starts this kb-mcp (its absolute path, or python -m kbmcp_cli)
    program: tuple[str, ...]
    config: Path | None
    #: folders the service writes: the index folder and the model cache
    writable: tuple[Path, ...]
    #: variables the service runs with (the config and cache folders the install saw)
    environment: tuple[tuple[str, str], ...]
    listen: Listen | None
    allow_remote: bool
    user_manager: bool
    run_as: str | None
    #: a private /tmp (False when the knowledge base or what it writes lives in /tmp)
    private_tmp: bool = True

    @property
    def service_file(self) -> str:
        return f"{self.name}.service"

    @property
    def socket_file(self) -> str:
        return f"{self.name}.socket"

    @property
    def command(self) -> list[str]:
        kb = ["--kb-path", str(self.kb_path)]
        config = ["--config", str(self.config)] if self.config is not None else []
        if self.listen is None:
            return [*self.program, "watch", *kb, *config]
        remote = ["--allow-remote"] if self.allow_remote else []
        return [*self.program, "serve", *kb, *config, "--transport", "http", *remote]


def unit_name(folder: Path) -> str:
    """``kb-mcp-NAME`` from a folder's name: letters, digits, ``_`` and ``-`` kept, the
    rest ``-``."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", folder.name.lower()).strip("-")[:60]
    return f"kb-mcp-{slug or 'root'}"


def quoted(value: str, *, command: bool = False) -> str:
    """One word of a unit line: ``%`` escaped (a specifier otherwise), ``$`` too in a
    command line, and double quotes around anything but plain path characters."""
    value = value.replace("%", "%%")
    if command:
        value = value.replace("$", "$$")
    if _PLAIN.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(path: Path) -> str:
    """A path in free text (a description): only ``%`` means something there."""
    return str(path).replace("%", "%%")


def service_unit(plan: ServicePlan) -> str:
    """The ``.service``: ``kb-mcp serve`` on systemd's socket, or ``kb-mcp watch``."""
    head = [MARKER + str(plan.kb_path), "", "[Unit]"]
    if plan.listen is None:
        head.append(f"Description=kb-mcp live sync of {_text(plan.kb_path)}")
        head.append("After=network.target")
    else:
        head.append(f"Description=kb-mcp MCP server of {_text(plan.kb_path)}")
        head.append(f"Requires={plan.socket_file}")
        head.append(f"After={plan.socket_file} network.target")
    body = ["", "[Service]", "Type=simple",
            "ExecStart=" + " ".join(quoted(w, command=True) for w in plan.command)]
    body += [f"Environment={quoted(f'{k}={v}')}" for k, v in plan.environment]
    if plan.run_as is not None:
        body.append(f"User={plan.run_as}")
    body += ["Restart=on-failure", "TimeoutStopSec=30", *_HARDENING,
             *(["PrivateTmp=yes"] if plan.private_tmp else []),
             "ReadWritePaths=" + " ".join(quoted(f"-{p}") for p in plan.writable)]
    tail = []
    if plan.listen is None:
        target = "default.target" if plan.user_manager else "multi-user.target"
        tail = ["", "[Install]", f"WantedBy={target}"]
    return "\n".join([*head, *body, *tail]) + "\n"


def socket_unit(plan: ServicePlan) -> str:
    """The ``.socket``: systemd listens, and starts the service on the first connection."""
    assert plan.listen is not None
    return "\n".join([
        MARKER + str(plan.kb_path), "",
        "[Unit]",
        f"Description=kb-mcp MCP server socket of {_text(plan.kb_path)}",
        "",
        "[Socket]",
        f"ListenStream={plan.listen.address}",
        "Accept=no",
        "",
        "[Install]",
        "WantedBy=sockets.target",
    ]) + "\n"


def written_for(text: str) -> Path | None:
    """The knowledge base a unit kb-mcp wrote names; None for a unit kb-mcp did not write."""
    first = text.split("\n", 1)[0]
    return Path(first[len(MARKER):]) if first.startswith(MARKER) else None
