"""Where systemd units live, writing and removing kb-mcp's, and asking ``systemctl`` about
them only where a systemd manager runs (decision 0049)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.service.units import ServicePlan, service_unit, socket_unit, written_for
from kbmcp_core.errors import ConfigError, KbError

#: Where the system manager reads units an administrator adds.
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
_SYSTEMCTL_TIMEOUT_S = 30.0


class ServiceError(KbError):
    """systemctl was asked to act and could not."""


def unit_dir(*, user: bool, environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/systemd/user`` (``~/.config`` when unset or relative) for the
    user's manager; ``/etc/systemd/system`` for the system's."""
    if user:
        base = environ.get("XDG_CONFIG_HOME", "")
        root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
        return root / "systemd" / "user"
    return SYSTEM_UNIT_DIR


def require_root(euid: int) -> None:
    """A system service's units are root's to write and remove."""
    if euid != 0:
        raise ConfigError("a system service is written to /etc/systemd/system, which needs "
                          "root: run this with sudo, or add --user for your own manager")


@dataclass(frozen=True, slots=True)
class Installed:
    """A unit file of this name in the unit folder, and the knowledge base it serves
    (None: a unit kb-mcp did not write)."""

    path: Path
    kb_path: Path | None


def installed(folder: Path, names: Sequence[str]) -> list[Installed]:
    """The files among ``names`` in ``folder``."""
    found = []
    for name in names:
        path = folder / name
        if path.is_file():
            found.append(Installed(path, written_for(path.read_text(encoding="utf-8",
                                                                    errors="replace"))))
    return found


def check_ours(found: Sequence[Installed], kb_path: Path) -> None:
    """Refuse to replace or remove a unit that kb-mcp did not write for ``kb_path``."""
    for unit in found:
        if unit.kb_path != kb_path:
            whose = (f"the knowledge base {unit.kb_path}" if unit.kb_path is not None
                     else "something other than kb-mcp")
            raise ConfigError(f"{unit.path} was written for {whose}: choose another --name")


def write_units(plan: ServicePlan, folder: Path) -> list[Path]:
    """The plan's unit files in ``folder`` (a stale ``.socket`` of an earlier HTTP install
    removed when this one has no HTTP); the paths written."""
    texts = {plan.service_file: service_unit(plan)}
    if plan.listen is not None:
        texts[plan.socket_file] = socket_unit(plan)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in texts.items():
            path = folder / name
            path.write_text(text, encoding="utf-8")
            path.chmod(0o644)
            written.append(path)
        if plan.listen is None:
            (folder / plan.socket_file).unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot write the units in {folder}: {exc.strerror or exc}") from None
    return written


def remove_units(found: Sequence[Installed]) -> None:
    try:
        for unit in found:
            unit.path.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot remove {exc.filename}: {exc.strerror or exc}") from None


def manager_running(*, user: bool, environ: Mapping[str, str]) -> bool:
    """Whether a systemd manager answers here (sd_booted(3); for ``--user``, the user
    manager's socket in ``$XDG_RUNTIME_DIR`` too). Nothing is asked of systemctl otherwise."""
    if not Path("/run/systemd/system").is_dir() or shutil.which("systemctl") is None:
        return False
    if not user:
        return True
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    return bool(runtime) and Path(runtime, "systemd", "private").exists()


def systemctl(args: Sequence[str], *, user: bool) -> str:
    """Run ``systemctl [--user] ARGS``; its output, or ``ServiceError`` with its first line."""
    command = ["systemctl", *(["--user"] if user else []), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=_SYSTEMCTL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"`{' '.join(command)}` did not answer: {exc}") from None
    if done.returncode != 0 and args[0] not in ("is-active", "is-enabled"):
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ServiceError(f"`{' '.join(command)}` failed: {why[0] if why else done.returncode}")
    return done.stdout.strip()


__all__ = ["SYSTEM_UNIT_DIR", "Installed", "ServiceError", "check_ours", "installed",
           "manager_running", "remove_units", "require_root", "systemctl", "unit_dir",
           "write_units"]
