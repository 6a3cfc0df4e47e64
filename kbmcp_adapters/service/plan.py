"""``kb-mcp service install`` resolved into a ``ServicePlan``: the knowledge base's settings,
the running kb-mcp, the user the service runs as and the folders it may write."""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping, Sequence
from pathlib import Path

from kbmcp_adapters.service.units import Listen, ServicePlan
from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import Settings


def _absolute(value: str, fallback: Path) -> Path:
    return Path(value) if value and os.path.isabs(value) else fallback


def _in_tmp(path: Path) -> bool:
    """A path a private /tmp would hide from the service."""
    return any(path.is_relative_to(tmp) for tmp in (Path("/tmp"), Path("/var/tmp")))


def xdg_homes(*, user_manager: bool, environ: Mapping[str, str], home: Path
              ) -> tuple[Path, Path]:
    """The config and cache folders the service must use to read what this install read
    (the trust file, the user config) and share its model cache: this environment's for
    the user's manager; the defaults of ``home`` for a system service run as its owner."""
    if not user_manager:
        return home / ".config", home / ".cache"
    return (_absolute(environ.get("XDG_CONFIG_HOME", ""), home / ".config"),
            _absolute(environ.get("XDG_CACHE_HOME", ""), home / ".cache"))


def owner_of(folder: Path) -> tuple[str | None, Path]:
    """The system service's user (the knowledge base folder's owner; None for root, which
    needs no ``User=``) and that user's home."""
    uid = folder.stat().st_uid
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        raise ConfigError(f"the owner of {folder} (uid {uid}) has no user name: a system "
                          "service runs as a named user") from None
    return (None if uid == 0 else entry.pw_name), Path(entry.pw_dir)


def build_plan(settings: Settings, *, name: str, program: Sequence[str],
               config: Path | None, listen: Listen | None, user_manager: bool,
               environ: Mapping[str, str], allow_remote: bool = False) -> ServicePlan:
    """The units' content for this knowledge base (``allow_remote``: the socket is not on
    loopback, so the server needs ``--allow-remote``). A path with a line break or a control
    character cannot be written into a unit line: ``ConfigError``."""
    kb = settings.kb_path.resolve()
    if user_manager:
        run_as, home = None, Path.home()
    else:
        run_as, home = owner_of(kb)
    config_home, cache_home = xdg_homes(user_manager=user_manager, environ=environ,
                                        home=home)
    writable = [settings.index_dir.resolve(),
                (settings.model_cache_dir or cache_home / "kb-mcp").resolve()]
    if settings.vectors_uri is not None and not settings.vectors_remote:
        writable.append(Path(settings.vectors_location).resolve())
    plan = ServicePlan(
        name=name, kb_path=kb, program=tuple(program),
        config=config.resolve() if config is not None else None,
        writable=tuple(dict.fromkeys(writable)),
        environment=(("XDG_CONFIG_HOME", str(config_home)),
                     ("XDG_CACHE_HOME", str(cache_home))),
        listen=listen,
        allow_remote=listen is not None and allow_remote,
        user_manager=user_manager, run_as=run_as,
        private_tmp=not any(_in_tmp(p) for p in (kb, *writable)))
    words = [str(kb), *program, *(str(p) for p in plan.writable), str(plan.config or ""),
             str(config_home), str(cache_home)]
    if any(ch < " " or ch == "\x7f" for word in words for ch in word):
        raise ConfigError("a path with a line break or a control character cannot be "
                          "written into a systemd unit")
    return plan


def prepare_folders(plan: ServicePlan) -> None:
    """Create the folders the service writes (``ReadWritePaths=`` needs them to exist when
    it starts, and the rest of the disk is read-only to it), owned by its user."""
    owner = pwd.getpwnam(plan.run_as) if plan.run_as is not None else None
    for folder in plan.writable:
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        try:
            folder.mkdir(parents=True, mode=0o700, exist_ok=True)
            if owner is not None:
                for made in missing:
                    os.chown(made, owner.pw_uid, owner.pw_gid)
        except OSError as exc:
            raise ConfigError(f"cannot create {folder}: {exc.strerror or exc}") from None
