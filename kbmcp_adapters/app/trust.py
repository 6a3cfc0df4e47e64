"""The user's trust list: config files found by looking that may say where data goes.

``$XDG_CONFIG_HOME/kb-mcp/trusted.json`` (default ``~/.config``) maps a config file's
real path to the sha256 of the bytes the user trusted (decision 0021). A file whose bytes
changed is no longer trusted. The list is read through one descriptor and refused unless
it is the user's own and only theirs to write; it is replaced atomically, mode 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from kbmcp_core.errors import ConfigError

#: Names a config file, as --config does (which wins over it).
CONFIG_ENV = "KB_MCP_CONFIG"
#: The trust list's name in the user's config folder.
TRUST_FILE_NAME = "trusted.json"
#: The user's own config file's name in that folder.
USER_CONFIG_NAME = "config.toml"
_FORMAT = 1
#: A trust list or config file larger than this is not one.
MAX_BYTES = 1024 * 1024


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/kb-mcp``, or ``~/.config/kb-mcp`` when that is unset or relative
    (as the XDG base directory specification says)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "kb-mcp"


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / TRUST_FILE_NAME


def key(path: Path) -> str:
    """The name a config file is trusted under: its absolute real path."""
    return os.path.realpath(path)


def read_bytes(path: Path, what: str) -> bytes:
    """A regular file's bytes, read through one descriptor (no check-then-open race; a
    FIFO or a device is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{what} {path} is not a regular file")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{what} {path} is larger than {MAX_BYTES // 1024} KiB")
    return data


def entries(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Trusted real path -> sha256; empty when there is no list yet."""
    path = trust_file(env)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the trust list {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"the trust list {path} is not a regular file")
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise ConfigError(f"the trust list {path} is not yours alone to write: remove it "
                              "and trust your config files again")
        raw = handle.read(MAX_BYTES + 1)
    try:
        data = json.loads(raw)
        found = data["trusted"] if data.get("format") == _FORMAT else None
        if not isinstance(found, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
            raise ValueError("not a kb-mcp trust list")
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ConfigError(f"the trust list {path} is damaged ({exc}): remove it and trust "
                          "your config files again") from None
    return dict(found)


def trusted_digest(path: Path, env: Mapping[str, str] | None = None) -> str | None:
    """The sha256 the file at ``path`` was trusted with, or None."""
    return entries(env).get(key(path))


def trust(path: Path, digest: str, env: Mapping[str, str] | None = None) -> None:
    """Record ``digest`` as the trusted content of the file at ``path``."""
    with _changing(env):
        found = entries(env)
        found[key(path)] = digest
        _write(found, env)


def revoke(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Forget the file at ``path``; False when it was not trusted."""
    with _changing(env):
        found = entries(env)
        if found.pop(key(path), None) is None:
            return False
        _write(found, env)
    return True


@contextlib.contextmanager
def _changing(env: Mapping[str, str] | None) -> Iterator[None]:
    """One change of the list at a time (two `kb-mcp trust` at once both count)."""
    import fcntl

    folder = user_config_dir(env)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / ".trusted.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write the trust list in {folder}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(found: Mapping[str, str], env: Mapping[str, str] | None) -> None:
    """Replace the list atomically: a 0600 temporary file beside it, synced, renamed."""
    import tempfile

    target = trust_file(env)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".trusted-", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"cannot write the trust list {target}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": _FORMAT, "trusted": dict(sorted(found.items()))}, handle,
                      indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write the trust list {target}: {exc.strerror}") from None
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


__all__ = ["CONFIG_ENV", "MAX_BYTES", "TRUST_FILE_NAME", "USER_CONFIG_NAME", "entries", "key",
           "read_bytes", "revoke", "trust", "trust_file", "trusted_digest", "user_config_dir"]
