"""The user's trust list: config files found by looking that may say where data goes.

``$XDG_CONFIG_HOME/kb-mcp/trusted.json`` (default ``~/.config``) maps a config file's
path (its folder's real path and its own name) to the sha256 of the bytes the user trusted
and the file's owner (decisions 0021 and 0047). A file whose bytes or owner changed is no
longer trusted, and a found file that is a symbolic link is never read. The list is read
through one descriptor and refused unless it is the user's own and only theirs to write;
it is replaced atomically, mode 0600.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.app.user_files import MAX_BYTES, changing, read_private, write_private
from kbmcp_core.errors import ConfigError

#: Names a config file, as --config does (which wins over it).
CONFIG_ENV = "KB_MCP_CONFIG"
#: The trust list's name in the user's config folder.
TRUST_FILE_NAME = "trusted.json"
#: The user's own config file's name in that folder.
USER_CONFIG_NAME = "config.toml"
#: 1: path -> sha256; 2: path -> {"sha256", "owner"} (decision 0047)
_FORMAT = 2
_REMEDY = "remove it and trust your config files again"


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/kb-mcp``, or ``~/.config/kb-mcp`` when that is unset or relative
    (as the XDG base directory specification says)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "kb-mcp"


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / TRUST_FILE_NAME


@dataclass(frozen=True, slots=True)
class Trusted:
    """What the user trusted: the file's bytes (sha256) and its owner (None: recorded by a
    kb-mcp that did not bind the owner, so not trusted any more)."""

    sha256: str
    owner: int | None


@dataclass(frozen=True, slots=True)
class ConfigBytes:
    """A config file as read: its bytes and the uid that owns it (from one descriptor)."""

    data: bytes
    owner: int


def key(path: Path) -> str:
    """The name a config file is trusted under: its folder's real path and its own name
    (a link in the last place is not resolved: it is refused where it is found)."""
    absolute = Path(os.path.abspath(path))
    return os.path.join(os.path.realpath(absolute.parent), absolute.name)


def read_bytes(path: Path, what: str) -> bytes:
    """A regular file's bytes, read through one descriptor (no check-then-open race; a
    FIFO or a device is refused, not waited on)."""
    return read_file(path, what).data


def read_file(path: Path, what: str, *, follow: bool = True) -> ConfigBytes:
    """A regular file's bytes and owner, read through one descriptor. With ``follow``
    False a symbolic link in the last place is refused (``ConfigError``), never read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise ConfigError(f"{what} {path} is a symbolic link: kb-mcp does not read a "
                              "config file it finds through a link (its trust and relative "
                              "paths belong to another file); name it with --config, or "
                              "copy it there") from None
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{what} {path} is not a regular file")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{what} {path} is larger than {MAX_BYTES // 1024} KiB")
    return ConfigBytes(data, info.st_uid)


def why_untrusted(path: Path, read: ConfigBytes, digest: str,
                  env: Mapping[str, str] | None = None) -> str | None:
    """None when the file at ``path``, read as ``read`` (whose sha256 is ``digest``), is
    trusted; else why not, as the end of a sentence ("is not trusted", ...)."""
    recorded = entries(env).get(key(path))
    if recorded is None:
        return "is not trusted"
    if recorded.sha256 != digest:
        return "has changed since you trusted it"
    if recorded.owner is None:
        return ("was trusted by an older kb-mcp that did not record its owner, so it is not "
                "trusted now")
    if recorded.owner != read.owner:
        return (f"belongs to uid {read.owner}, not to uid {recorded.owner} who owned it when "
                "you trusted it")
    return None


def entries(env: Mapping[str, str] | None = None) -> dict[str, Trusted]:
    """Trusted path (``key``) -> what was trusted; empty when there is no list yet."""
    path = trust_file(env)
    data = read_private(path, "the trust list", _REMEDY)
    if data is None:
        return {}
    try:
        found = data["trusted"] if data.get("format") in (1, _FORMAT) else None
        if not isinstance(found, dict):
            raise ValueError("not a kb-mcp trust list")
        return {name: _entry(value) for name, value in found.items()}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ConfigError(f"the trust list {path} is damaged ({exc}): {_REMEDY}") from None


def _entry(value: object) -> Trusted:
    """One entry: a bare sha256 (format 1, no owner) or ``{"sha256", "owner"}``."""
    if isinstance(value, str):
        return Trusted(value, None)
    if (isinstance(value, dict) and isinstance(value.get("sha256"), str)
            and (value.get("owner") is None or type(value.get("owner")) is int)):
        return Trusted(value["sha256"], value["owner"])
    raise ValueError("not a kb-mcp trust list")


def trust(path: Path, read: ConfigBytes, digest: str,
          env: Mapping[str, str] | None = None) -> None:
    """Record the file at ``path``, read as ``read`` (sha256 ``digest``), as trusted:
    these bytes, under this path, owned by this user."""
    with _changing(env):
        found = entries(env)
        found[key(path)] = Trusted(digest, read.owner)
        _write(found, env)


def revoke(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Forget the file at ``path``; False when it was not trusted."""
    with _changing(env):
        found = entries(env)
        if found.pop(key(path), None) is None:
            return False
        _write(found, env)
    return True


def _changing(env: Mapping[str, str] | None) -> contextlib.AbstractContextManager[None]:
    """One change of the list at a time (two `kb-mcp trust` at once both count)."""
    return changing(trust_file(env), "the trust list")


def _write(found: Mapping[str, Trusted], env: Mapping[str, str] | None) -> None:
    """Replace the list atomically (mode 0600)."""
    trusted = {name: {"sha256": entry.sha256, "owner": entry.owner}
               for name, entry in sorted(found.items())}
    write_private(trust_file(env), "the trust list", {"format": _FORMAT, "trusted": trusted})


__all__ = ["CONFIG_ENV", "MAX_BYTES", "TRUST_FILE_NAME", "USER_CONFIG_NAME", "ConfigBytes",
           "Trusted", "entries", "key", "read_bytes", "read_file", "revoke", "trust",
           "trust_file", "user_config_dir", "why_untrusted"]
